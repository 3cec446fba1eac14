"""A fleet check's pod, container by container, as the kubelet would run them: the probe's
init container (the exported command, its user, a read-only root) writing its report to the
shared folder, then the judge's own command with no Docker engine at all: the image's config
read from a real registry with the pull secret's login, the report held to the reference
verdict, each node's verdict pushed to a real Pushgateway.

No GPU here: the CronJob is exported with --gpus 0 (the probe's --no-gpu), so throughput is
not compared; the reference's numbers are test_evaluate's synthetic H100-like report with
the real image's id (test_fleet.py compares numbers)."""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from imgkit.export.k8s import FleetSettings, JobSettings, fleet_cronjob, probe_configmap
from imgkit.shipped import probe_zip
from imgkit.verify.report import verdict_json

from .helpers.metrics import value
from .helpers.monitoring import need_tools, pushgateway
from .helpers.registry import USER, Registry, docker_config
from .helpers.reports import GOOD, run

pytestmark = pytest.mark.docker


def pushed_to(engine, registry: Registry, image: str, repository: str) -> str:
    """The image pushed into the registry as the cluster pulls it (by the engine, with the
    registry's login); its digest. The extra tag goes again."""
    ref = f"{registry.address}/{repository}:1"
    engine.tag(engine.image(image).id, ref)
    try:
        return str(engine.push(ref, (USER, registry.password)))
    finally:
        engine.untag(ref)


def run_init_container(engine, pod: dict[str, Any], root: Path, local: str) -> Path:
    """The probe's init container: its command, user and environment, a read-only root, the
    probe and the report folder mounted as the pod mounts them; the report file. `local`:
    the engine's name for the very image the pod pulls by digest (the kubelet pulls it with
    the pull secret; here it is already held)."""
    probe = pod["initContainers"][0]
    mounts = {m["name"]: m["mountPath"] for m in probe["volumeMounts"]}
    (root / "probe").mkdir(parents=True)
    (root / "report").mkdir()
    os.chmod(root / "report", 0o777)                  # an emptyDir the pod's user writes
    (root / "probe" / "probe.zip").write_bytes(probe_zip())
    security = pod["securityContext"]
    engine.client.containers.run(
        local, entrypoint=probe["command"][:1], command=probe["command"][1:],
        user=f"{security['runAsUser']}:{security['runAsGroup']}", read_only=True,
        tmpfs={"/tmp": ""}, environment={e["name"]: e["value"] for e in probe["env"]},
        volumes={str(root / "probe"): {"bind": mounts["probe"], "mode": "ro"},
                 str(root / "report"): {"bind": mounts["report"], "mode": "rw"}},
        remove=True)
    return root / "report" / "report.txt"


def run_judge(pod: dict[str, Any], paths: dict[str, Path], node: str,
              config: Path) -> subprocess.CompletedProcess[str]:
    """The judge container's command as written, its pod paths mapped to this host's, with
    no engine to reach (DOCKER_HOST names a socket nothing listens on)."""
    judge = pod["containers"][0]
    argv = list(judge["command"])
    for inside, outside in paths.items():
        argv = [str(outside) if arg == inside else arg for arg in argv]
    assert argv[0] == "imgkit"
    env = {**os.environ, "NODE_NAME": node, "DOCKER_CONFIG": str(config),
           "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    return subprocess.run([sys.executable, "-m", "imgkit", *argv[1:]], env=env,
                          capture_output=True, text=True, timeout=300)


def reference_for(image_id: str, path: Path) -> Path:
    document = json.loads(verdict_json(run(GOOD)))
    document["image_id"] = image_id
    path.write_text(json.dumps(document))
    return path


def test_a_fleet_pod_probes_then_judges_with_no_engine_and_pushes_each_nodes_verdict(
        engine, mini, registry, tmp_path):
    need_tools()
    digest = pushed_to(engine, registry, mini, "fleet/mini")
    image = f"{registry.address}/fleet/mini@{digest}"
    config = docker_config(tmp_path / "pull-secret", {registry.address: (USER, registry.password)})
    image_id = engine.image(mini).id
    with pushgateway(tmp_path / "pg") as gateway:
        fleet = FleetSettings(judge_image="imgkit:test", pushgateway=gateway, nodes=2,
                              pull_secret="registry-login")
        cron = fleet_cronjob(mini, image, probe_zip(), JobSettings(gpus=0), fleet,
                             reference="mini-ref")
        pod: dict[str, Any] = yaml.safe_load(yaml.safe_dump(cron))["spec"]["jobTemplate"]["spec"][
            "template"]["spec"]
        assert probe_configmap(probe_zip(), JobSettings())["binaryData"]["probe.zip"] == \
            base64.b64encode(probe_zip()).decode()
        report = run_init_container(engine, pod, tmp_path / "node-a", mini)
        assert "imgkit" in report.read_text()           # the framed report, in the file
        good = reference_for(image_id, tmp_path / "reference.json")
        paths = {"/var/run/imgkit/report.txt": report,
                 "/etc/imgkit/reference/verdict.json": good}
        judged = run_judge(pod, paths, "node-a", config)
        assert judged.returncode == 0, judged.stdout + judged.stderr
        assert "Traceback" not in judged.stderr

        # the same report held to the verdict of another image: a failed fleet check
        paths["/etc/imgkit/reference/verdict.json"] = reference_for(
            "sha256:" + "9" * 64, tmp_path / "other.json")
        wrong = run_judge(pod, paths, "node-b", config)
        assert wrong.returncode == 1 and "fleet.reference" in wrong.stdout, wrong.stdout

        with urllib.request.urlopen(f"{gateway}/metrics", timeout=10) as answer:
            text = answer.read().decode()
    assert value(text, "imgkit_verify_passed", Hostname="node-a", image=image) == 1
    assert value(text, "imgkit_verify_passed", Hostname="node-b", image=image) == 0
    assert value(text, "imgkit_verify_check_passed", Hostname="node-b",
                 check="fleet.reference") == 0


def test_with_no_engine_the_judge_reads_the_image_from_its_registry(
        engine, mini, registry, tmp_path):
    """What the registry says of the image (labels, user, environment) is what the report is
    held to; the files are not looked up, and the verdict says so."""
    digest = pushed_to(engine, registry, mini, "fleet/registry-read")
    image = f"{registry.address}/fleet/registry-read@{digest}"
    config = docker_config(tmp_path / "login", {registry.address: (USER, registry.password)})
    cron = fleet_cronjob(mini, image, probe_zip(), JobSettings(gpus=0),
                         FleetSettings(judge_image="imgkit:test", pushgateway="http://unused:1"))
    pod: dict[str, Any] = yaml.safe_load(yaml.safe_dump(cron))["spec"]["jobTemplate"]["spec"][
        "template"]["spec"]
    report = run_init_container(engine, pod, tmp_path / "node", mini)
    env = {**os.environ, "DOCKER_CONFIG": str(config),
           "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    done = subprocess.run([sys.executable, "-m", "imgkit", "judge", image, str(report), "--json",
                           str(tmp_path / "v.json")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    verdict = json.loads((tmp_path / "v.json").read_text())
    assert verdict["image_id"] == engine.image(mini).id
    assert verdict["size"] is None        # the registry says compressed bytes: no unpacked size
    checks = {c["name"]: c for c in verdict["checks"]}
    assert checks["report.matches-image"]["verdict"] == "info"
    assert "without a Docker engine" in checks["report.matches-image"]["diagnosis"]
    # the image's environment and labels, read from the registry, were judged: its
    # CUDA_VERSION claim (the config's ENV) and the CUDA its labels and tag claim
    assert checks["env CUDA_VERSION"]["verdict"] == "pass", checks
    assert checks["cudart.version"]["verdict"] == "pass" and checks["report.user"]["verdict"] == "pass"
    # with no login, the registry refuses: said as such, no traceback
    refused = subprocess.run([sys.executable, "-m", "imgkit", "judge", image, str(report)],
                             env={**env, "DOCKER_CONFIG": str(tmp_path / "nobody")},
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode in (2, 3) and "Traceback" not in refused.stderr, refused.stderr
