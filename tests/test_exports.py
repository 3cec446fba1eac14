"""`imgkit export bake|k8s`: pure text out, checked against the bake file reference (fields
and types) and kubernetes-validate's schemas, and against golden files. The Job's command
is run for real in test_docker_verify.py (and on the Paddle image in test_slow_paddle.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from imgkit.export.k8s import JobSettings, job_name, verify_job

from .helpers.cli import imgkit
from .helpers.validators import validate

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
PADDLE = "paddle:2.6.2-gpu-cuda11.8-cudnn8"

# The bake file reference (docs.docker.com/build/bake/reference): a target's attributes
# and their JSON types, for those imgkit writes and those a user may --set.
TARGET_ATTRIBUTES: dict[str, type | tuple[type, ...]] = {
    "args": dict, "annotations": list, "attest": list, "cache-from": list, "cache-to": list,
    "context": str, "contexts": dict, "description": str, "dockerfile": str, "entitlements": list,
    "inherits": list, "labels": dict, "matrix": dict, "name": str, "network": str, "no-cache": bool,
    "output": list, "platforms": list, "pull": bool, "secret": list, "shm-size": str, "ssh": list,
    "tags": list, "target": str, "ulimits": list}
TOP = {"group", "target", "variable", "function"}


def check_bake_reference(document: dict[str, Any]) -> None:
    assert set(document) <= TOP
    targets = document["target"]
    for name, target in targets.items():
        for key, value in target.items():
            assert key in TARGET_ATTRIBUTES, f"{name}.{key} is not a bake target attribute"
            assert isinstance(value, TARGET_ATTRIBUTES[key]), f"{name}.{key}: {type(value)}"
            if isinstance(value, list):
                assert all(isinstance(v, str) for v in value), f"{name}.{key}"
            if isinstance(value, dict):
                assert all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
        for ref, source in target.get("contexts", {}).items():
            assert source.startswith(("target:", "docker-image://")), source
            if source.startswith("target:"):
                assert source[len("target:"):] in targets, f"{name}: {source} is no target"
    for group in document["group"].values():
        assert set(group) == {"targets"} and all(t in targets for t in group["targets"])


def test_the_bake_export_of_the_cuda_118_slice(tmp_path: Path) -> None:
    """One target per image, parents reached by target: contexts, secrets by reference only,
    every pip step mounting them; matches its golden file."""
    secret_url = "https://user:hunter2@pypi.secret.example/simple"
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\nimgkit-test-ca-body\n-----END CERTIFICATE-----\n")
    out = tmp_path / "bake"
    done = imgkit("export", "bake", "--cuda", "11.8", "--out", str(out),
                  env={"IMGKIT_INDEX_URL": secret_url, "IMGKIT_CA_BUNDLE": str(ca)})
    assert done.returncode == 0, done.stderr
    text = (out / "docker-bake.json").read_text()
    golden = GOLDEN / "bake" / "docker-bake.json"
    if os.environ.get("IMGKIT_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text()
    document = json.loads(text)
    check_bake_reference(document)
    listing = imgkit("list", "--cuda", "11.8", "--json", str(tmp_path / "plan.json"))
    assert listing.returncode == 0
    plan = json.loads((tmp_path / "plan.json").read_text())["images"]
    assert len(document["target"]) == len(plan)
    paddle = document["target"]["paddle-2-6-2-gpu-cuda11-8-cudnn8"]
    parent = next(i["parent"] for i in plan if i["tag"] == PADDLE)
    assert paddle["contexts"] == {parent: "target:" + parent.replace("/", "-").replace(":", "-")
                                  .replace(".", "-")}
    for path in out.rglob("*"):                                   # no secret in any file
        if path.is_file():
            body = path.read_bytes()
            assert b"hunter2" not in body and b"imgkit-test-ca-body" not in body, path
    for dockerfile in out.glob("*/Dockerfile"):                # every RUN that runs pip
        for instruction in dockerfile.read_text().replace("\\\n", " ").splitlines():
            if "pip install" in instruction and not instruction.startswith("#"):
                assert "--mount=type=secret,id=imgkit-ca-bundle" in instruction, dockerfile


def test_the_bake_reference_check_does_reject_a_bad_file() -> None:
    document = {"group": {"default": {"targets": ["a"]}},
                "target": {"a": {"context": ".", "contexts": {"x": "target:missing"}}}}
    with pytest.raises(AssertionError, match="no target"):
        check_bake_reference(document)
    with pytest.raises(AssertionError, match="not a bake target attribute"):
        check_bake_reference({"group": {}, "target": {"a": {"dockerfiles": "x"}}})




# what a cluster fixes once, as a team writes it (docs/scale.md)
CLUSTER = """\
[cluster]
runtime_class = "nvidia"
tolerations = ["nvidia.com/gpu:NoSchedule"]
node_selector = { "nvidia.com/gpu.present" = "true" }
shm_size = "16Gi"
namespace = "gpu-ci"
"""


def test_the_k8s_export_passes_kubernetes_validate_and_its_golden_file(tmp_path: Path) -> None:
    out = tmp_path / "k8s"
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(CLUSTER)
    done = imgkit("export", "k8s", "--cuda", "11.8", "--registry", "registry.example.com/ml",
                  "--out", str(out), "--cluster", str(cluster))
    assert done.returncode == 0, done.stderr
    files = sorted(out.glob("*.yaml"))
    assert len(files) == 5                                        # the probe and 4 Jobs
    result = validate(*files)
    assert result.returncode == 0, result.output
    job_file = out / "verify-paddle-2-6-2-gpu-cuda11-8-cudnn8.yaml"
    golden = GOLDEN / "k8s" / job_file.name
    if os.environ.get("IMGKIT_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(job_file.read_text())
    assert job_file.read_text() == golden.read_text()
    job = yaml.safe_load(job_file.read_text())
    pod = job["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert pod["automountServiceAccountToken"] is False and pod["securityContext"]["runAsNonRoot"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}} in pod["volumes"]
    assert job["spec"]["activeDeadlineSeconds"] and job["spec"]["ttlSecondsAfterFinished"]
    configmap = yaml.safe_load((out / "probe-configmap.yaml").read_text())
    assert configmap["immutable"] is True and "probe.zip" in configmap["binaryData"]
    assert pod["volumes"][0]["configMap"]["name"] == configmap["metadata"]["name"]


def test_kubernetes_validate_does_reject_a_broken_job(tmp_path: Path) -> None:
    job = verify_job(PADDLE, "r.example.com/paddle:1", b"zip", JobSettings())
    job["spec"]["template"]["spec"]["containers"][0]["gpus"] = 1        # type: ignore[call-overload, index]  # no such field
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(job))
    assert validate(path).returncode != 0


def test_job_names_fit_kubernetes() -> None:
    long = "imgkit/cuda:11.8-runtime-cudnn9.10-nccl2.21-py3.11-bookworm"
    assert len(job_name(long)) <= 63 and job_name(long) != job_name(long + "x")
    assert job_name(PADDLE) == "imgkit-verify-paddle-2-6-2-gpu-cuda11-8-cudnn8"


@pytest.mark.parametrize("table, message", [
    ('tolerations = ["nvidia.com/gpu:Sometimes"]',
     "cluster.tolerations: 'nvidia.com/gpu:Sometimes': expected"),
    ('node_selector = { "bad key" = "x" }', "cluster.node_selector"),
    ('shm_size = "lots"', "cluster.shm_size"),
    ("gpus_per_job = 40", "cluster.gpus_per_job"),
    ("gpu_per_job = 1", "cluster.gpu_per_job: not a cluster setting"),
    ('deadline = "soon"', "cluster.deadline"),
    ('[cluster.fleet]\npushgateway = "ftp://x"', "cluster.fleet.judge_image"),
])
def test_a_bad_cluster_table_is_exit_2_naming_the_key(table: str, message: str,
                                                       tmp_path: Path) -> None:
    (tmp_path / "cluster.toml").write_text(f"[cluster]\n{table}\n")
    done = imgkit("export", "k8s", "--cuda", "11.8", "--out", str(tmp_path / "k"), "--registry",
                  "r.example.com", "--cluster", str(tmp_path / "cluster.toml"))
    said = " ".join(done.stderr.split())
    assert done.returncode == 2 and message in said and "Traceback" not in said, said
    assert str(tmp_path / "cluster.toml") in said and not (tmp_path / "k").exists()


def test_every_problem_of_a_cluster_table_is_said_at_once(tmp_path: Path) -> None:
    (tmp_path / "cluster.toml").write_text('gpus_per_job = -1\nttl = "a day"\nrunclass = "x"\n')
    done = imgkit("export", "k8s", "--cuda", "11.8", "--out", str(tmp_path / "k"), "--registry",
                  "r.example.com", "--cluster", str(tmp_path / "cluster.toml"))
    said = " ".join(done.stderr.split())
    assert done.returncode == 2, said
    assert all(k in said for k in ("cluster.gpus_per_job", "cluster.ttl", "cluster.runclass"))


def test_the_k8s_export_reads_the_project_files_cluster_and_registry(tmp_path: Path) -> None:
    """From a project made by `imgkit init`, with `registry` and a [cluster] table in its
    imgkit.toml: no flag but --out."""
    assert imgkit("init", str(tmp_path / "p"), "--namespace", "ml").returncode == 0
    project = tmp_path / "p" / "imgkit.toml"
    # (registry.example.com/ml would have named ml/ twice: refused, as ci refuses it)
    project.write_text(project.read_text() + '\nregistry = "registry.example.com/team"\n'
                       + '[cluster]\ngpus_per_job = 2\nruntime_class = "nvidia-cdi"\n')
    done = imgkit("export", "k8s", "--out", "k8s", cwd=tmp_path / "p")
    assert done.returncode == 0, done.stderr
    jobs = [yaml.safe_load(p.read_text()) for p in (tmp_path / "p" / "k8s").glob("verify-*.yaml")]
    assert jobs
    for job in jobs:
        pod = job["spec"]["template"]["spec"]
        assert pod["runtimeClassName"] == "nvidia-cdi"
        assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"
        assert pod["containers"][0]["image"].startswith("registry.example.com/team/ml/")


@pytest.mark.parametrize("args, message", [
    (["--registry", "nohost"], "--registry 'nohost'"),
    ([], "export k8s needs --registry"),
    (["--registry", "r.example.com", "--fleet"], "--fleet needs [cluster.fleet]"),
    (["--registry", "r.example.com", "--verdicts", "v"], "--verdicts is for a fleet check"),
    # the names promote gives them, held to the rules ci holds them to
    (["--registry", "r.example.com/imgkit"], "'imgkit' is both the end of --registry"),
    (["--registry", "docker.io"], "would be pushed to docker.io/paddle-jupyter, the Docker Hub "
                                  "account called 'paddle-jupyter'"),
])
def test_bad_k8s_options_are_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    done = imgkit("export", "k8s", "--cuda", "11.8", "--out", str(tmp_path / "k"), *args,
                  cwd=tmp_path, env={"IMGKIT_IMAGES": str(ROOT / "images")})
    said = " ".join(done.stderr.split())
    assert done.returncode == 2 and message in said and "Traceback" not in said, said


def test_bake_tags_images_in_the_registry_given_yet_builds_on_named_parents(tmp_path: Path) -> None:
    done = imgkit("export", "bake", "--only", "paddle:*", "--push-to", "r.example.com/staging",
                  "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    document = json.loads((tmp_path / "docker-bake.json").read_text())
    check_bake_reference(document)
    paddle = document["target"]["paddle-2-6-2-gpu-cuda11-8-cudnn8"]
    assert paddle["tags"] == ["r.example.com/staging/paddle:2.6.2-gpu-cuda11.8-cudnn8"]
    (parent, source), = paddle["contexts"].items()
    assert parent.startswith("imgkit/cuda:") and source.startswith("target:")  # FROM's own name
    assert document["group"]["default"]["targets"] == ["paddle-2-6-2-gpu-cuda11-8-cudnn8"]
    # the names held to the rules publish holds them to: imgkit/ said twice is refused
    twice = imgkit("export", "bake", "--only", "paddle:*", "--push-to", "r.example.com/imgkit",
                   "--out", str(tmp_path / "twice"))
    assert twice.returncode == 2 and "'imgkit' is both the end of --push-to" in twice.stderr


def test_a_selection_of_shared_layers_bakes_them_by_default_and_is_no_pipeline(tmp_path: Path) -> None:
    python = "imgkit/python:3.11-bookworm"
    out = imgkit("export", "bake", "--cuda", "11.8", "--only", python, "--out", str(tmp_path / "bake"))
    assert out.returncode == 0, out.stderr
    document = json.loads((tmp_path / "bake" / "docker-bake.json").read_text())
    assert document["group"]["default"]["targets"] == ["imgkit-python-3-11-bookworm"]
    check_bake_reference(document)
    out = imgkit("ci", "gitlab", "--registry", "registry.example.com/ml", "--only", python,
                 "--out", str(tmp_path / "ci.yml"))
    assert out.returncode == 2 and "only shared layers" in out.stderr, out.stderr
    assert not (tmp_path / "ci.yml").exists()


def test_the_policy_export_writes_one_rule_for_kyverno_sigstore_and_cosign(tmp_path: Path) -> None:
    from imgkit.export.policy import VERDICT_TYPE
    from imgkit.registry.cosign import VERDICT_TYPE as SIGNED_TYPE
    assert VERDICT_TYPE == SIGNED_TYPE           # the type the policy demands is the one signed
    pem = "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n"
    (tmp_path / "cosign.pub").write_text(pem)
    done = subprocess.run([sys.executable, "-m", "imgkit", "export", "policy", "--out",
                           str(tmp_path / "out"), "--registry", "registry.example.com/ml",
                           "--trusted-key", str(tmp_path / "cosign.pub")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    kyverno = yaml.safe_load((tmp_path / "out" / "kyverno-clusterpolicy.yaml").read_text())
    rule = kyverno["spec"]["rules"][0]["verifyImages"][0]
    assert rule["imageReferences"] == ["registry.example.com/ml/*"]
    attestation = rule["attestations"][0]
    assert attestation["type"] == VERDICT_TYPE
    assert attestation["attestors"][0]["entries"][0]["keys"]["publicKeys"] == pem
    conditions = {c["key"]: c["value"] for c in attestation["conditions"][0]["all"]}
    assert conditions == {"{{ passed }}": True, "{{ host_failure }}": False, "{{ gpu_checked }}": True}
    cip = yaml.safe_load((tmp_path / "out" / "sigstore-clusterimagepolicy.yaml").read_text())
    authority = cip["spec"]["authorities"][0]
    assert cip["spec"]["images"] == [{"glob": "registry.example.com/ml/**"}]
    assert authority["key"]["data"] == pem
    assert authority["attestations"][0]["policy"]["data"] == (
        tmp_path / "out" / "imgkit-verdict.cue").read_text()
    keyless = subprocess.run([sys.executable, "-m", "imgkit", "export", "policy", "--out",
                              str(tmp_path / "k"), "--registry", "r.example.com", "--kyverno",
                              "--certificate-identity", "https://github.com/o/r/.github/workflows/i.yml@refs/heads/main",
                              "--certificate-oidc-issuer", "https://token.actions.githubusercontent.com"],
                             capture_output=True, text=True)
    assert keyless.returncode == 0, keyless.stderr
    assert not (tmp_path / "k" / "sigstore-clusterimagepolicy.yaml").exists()
    entry = yaml.safe_load((tmp_path / "k" / "kyverno-clusterpolicy.yaml").read_text())[
        "spec"]["rules"][0]["verifyImages"][0]["attestations"][0]["attestors"][0]["entries"][0]
    assert entry["keyless"]["issuer"] == "https://token.actions.githubusercontent.com"
    bad = subprocess.run([sys.executable, "-m", "imgkit", "export", "policy", "--out",
                          str(tmp_path / "b"), "--registry", "r.example.com"], capture_output=True, text=True)
    assert bad.returncode == 2 and "needs a signer" in bad.stderr


def test_a_project_that_gates_on_vulnerabilities_gets_policies_demanding_the_signed_scan(
        tmp_path: Path) -> None:
    from imgkit.export.policy import VULN_PREDICATE
    (tmp_path / "cosign.pub").write_text("-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n")
    done = subprocess.run([sys.executable, "-m", "imgkit", "export", "policy", "--out",
                           str(tmp_path / "out"), "--registry", "registry.example.com/ml",
                           "--trusted-key", str(tmp_path / "cosign.pub")], capture_output=True,
                          text=True, env={**os.environ, "IMGKIT_VULNERABILITY_DB": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "imgkit-scan.cue").read_text().splitlines()[1:] == [
        f'predicateType: "{VULN_PREDICATE}"', "predicate: scanner: result: failed: false"]
    kyverno = yaml.safe_load((tmp_path / "out" / "kyverno-clusterpolicy.yaml").read_text())
    verdict, scan = kyverno["spec"]["rules"][0]["verifyImages"][0]["attestations"]
    assert scan["type"] == VULN_PREDICATE and scan["attestors"] == verdict["attestors"]
    assert scan["conditions"] == [{"all": [{"key": "{{ scanner.result.failed }}",
                                            "operator": "Equals", "value": False}]}]
    cip = yaml.safe_load((tmp_path / "out" / "sigstore-clusterimagepolicy.yaml").read_text())
    names = [(a["name"], a["predicateType"]) for a in cip["spec"]["authorities"][0]["attestations"]]
    assert names == [("imgkit-verdict", "https://imgkit.dev/attestations/verdict/v1"),
                     ("imgkit-scan", "vuln")]
