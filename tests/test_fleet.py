"""A fleet check's judgement: one node's report held to the reference verdict (the image's
`verify --json`), throughput as a share of each GPU's peak, TF32 where it was; and bad
references refused naming the file.

The GPU numbers are test_evaluate's synthetic H100-like report, not a probe's real output."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from imgkit.errors import UsageError
from imgkit.verify.diagnose import HOST
from imgkit.verify.fleet import fleet_checks, read_reference
from imgkit.verify.report import verdict_json

from .helpers.reports import GOOD, run

PADDLE = "paddle:2.6.2-gpu-cuda11.8-cudnn8"


def reference_file(tmp_path: Path, report: dict[str, Any] = GOOD, **changes: Any) -> Path:
    document = json.loads(verdict_json(run(report)))
    document.update(changes)
    path = tmp_path / "reference.json"
    path.write_text(json.dumps(document))
    return path


def node(**gemm: float) -> dict[str, Any]:
    report = copy.deepcopy(GOOD)
    for precision, tflops in gemm.items():
        report["gpu"]["work"]["gemm"][precision]["tflops"] = tflops
    return report


def judged(tmp_path: Path, report: dict[str, Any], margin: float = 0.1) -> dict[str, Any]:
    checks = fleet_checks(run(report), read_reference(reference_file(tmp_path)), margin)
    return {c.name: c for c in checks}


def test_a_node_that_computes_as_the_reference_did_passes(tmp_path: Path) -> None:
    checks = judged(tmp_path, GOOD)
    assert {"fleet.gemm.tf32", "fleet.gemm.bf16", "fleet.conv.fp16",
            "fleet.tf32.torch.matmul"} <= set(checks)
    assert all(c.verdict == "pass" for c in checks.values()), checks


def test_a_slower_node_fails_as_the_hosts_fault_with_how_much_slower(tmp_path: Path) -> None:
    checks = judged(tmp_path, node(bf16=560.0))                  # 20% under the reference
    slow = checks["fleet.gemm.bf16"]
    assert slow.verdict == "fail" and slow.scope == HOST, slow
    assert "20% slower" in slow.diagnosis and "of peak" in slow.expected
    assert checks["fleet.gemm.tf32"].verdict == "pass"
    # within the margin it passes: 5% under with a 10% margin
    assert judged(tmp_path, node(bf16=665.0))["fleet.gemm.bf16"].verdict == "pass"
    assert judged(tmp_path, node(bf16=665.0), margin=0.01)["fleet.gemm.bf16"].verdict == "fail"


def test_another_gpu_model_is_held_to_the_share_of_its_own_peak(tmp_path: Path) -> None:
    """An A100 node (312 dense BF16 TFLOPS) reaching 71% of its peak is as good as an H100
    (989 TFLOPS) reaching 71% of its own: shares are compared, not TFLOPS."""
    a100 = copy.deepcopy(GOOD)
    a100["gpu"]["nvml"]["devices"] = [{"name": "NVIDIA A100-SXM4-80GB"}]
    a100["gpu"]["work"]["devices"] = [{"sm_count": 108, "compute_capability": "8.0"}]
    scale = 312 / 989.4
    for precision in ("fp16", "bf16"):
        a100["gpu"]["work"]["gemm"][precision]["tflops"] *= scale
    a100["gpu"]["work"]["gemm"]["tf32"]["tflops"] *= 156 / 494.7
    a100["gpu"]["work"]["gemm"]["fp32"]["tflops"] *= 19.5 / 67
    a100["gpu"]["work"]["conv"]["tflops"] *= scale
    checks = judged(tmp_path, a100)
    assert all(c.verdict == "pass" for c in checks.values()), checks
    assert "on NVIDIA A100" in checks["fleet.gemm.bf16"].measured
    assert "on NVIDIA H100" in checks["fleet.gemm.bf16"].expected


def test_tf32_turned_off_on_a_node_is_the_hosts_fault(tmp_path: Path) -> None:
    report = copy.deepcopy(GOOD)
    report["frameworks"]["torch"]["fp32_matmul_error"] = 3e-4      # TF32's error signature
    checks = judged(tmp_path, report)
    changed = checks["fleet.tf32.torch.matmul"]
    assert changed.verdict == "fail" and changed.scope == HOST
    assert "ran as TF32 here, full FP32 when the image was verified" in changed.diagnosis


def test_a_node_report_without_gpu_work_compares_nothing_and_says_so(tmp_path: Path) -> None:
    no_work = copy.deepcopy(GOOD)
    del no_work["gpu"]["work"]
    checks = fleet_checks(run(no_work), read_reference(reference_file(tmp_path)), 0.1)
    assert [c.verdict for c in checks] == ["info"] and not checks[0].required


def test_a_reference_of_another_image_fails_naming_the_file(tmp_path: Path) -> None:
    path = reference_file(tmp_path, image_id="sha256:" + "9" * 64)
    checks = fleet_checks(run(GOOD), read_reference(path), 0.1)
    assert checks[0].name == "fleet.reference" and checks[0].verdict == "fail"
    assert str(path) in checks[0].diagnosis


@pytest.mark.parametrize("content,words", [
    ("not json", "not JSON"),
    ('{"image": "x"}', "not a verdict with the probe's facts"),
    ('{"facts": {"probe_version": -1}}', "its facts cannot be used"),
])
def test_a_bad_reference_is_bad_input_naming_the_file(tmp_path: Path, content: str, words: str) -> None:
    path = tmp_path / "ref.json"
    path.write_text(content)
    with pytest.raises(UsageError) as caught:
        read_reference(path)
    assert str(path) in caught.value.message and words in caught.value.message


def test_a_reference_verified_without_a_gpu_holds_nothing(tmp_path: Path) -> None:
    no_work = copy.deepcopy(GOOD)
    del no_work["gpu"]["work"]
    with pytest.raises(UsageError) as caught:
        read_reference(reference_file(tmp_path, no_work))
    assert "without a GPU" in caught.value.message


FLEET = """\
[cluster.fleet]
judge_image = "registry.example.com/ml/imgkit:0.1"
pushgateway = "http://pushgateway.monitoring:9091"
"""


def fleet_export(tmp_path: Path, *extra: str, fleet: str = FLEET) -> Any:
    """`export k8s --fleet` with `fleet` as the cluster file ([cluster.fleet] and more)."""
    from .helpers.cli import imgkit
    (tmp_path / "cluster.toml").write_text(fleet)
    return imgkit("export", "k8s", "--cuda", "11.8", "--only", PADDLE, "--registry",
                  "registry.example.com/ml", "--out", str(tmp_path / "k8s"), "--fleet",
                  "--cluster", str(tmp_path / "cluster.toml"), *extra)


def verdict_of_paddle(folder: Path) -> Path:
    document = json.loads(verdict_json(run(GOOD)))
    document["image"] = f"registry.example.com/ml/{PADDLE}"
    folder.mkdir()
    (folder / "paddle.json").write_text(json.dumps(document))
    return folder


def test_the_fleet_export_is_a_cronjob_per_image_that_kubernetes_validate_accepts(
        tmp_path: Path) -> None:
    """Each run: a pod on each of N nodes (required anti-affinity on the hostname), the probe
    as an init container writing its report to a shared folder, then `imgkit judge` in
    imgkit's image against the reference verdict, pushing to the Pushgateway."""
    from .helpers.validators import validate
    done = fleet_export(tmp_path, "--verdicts", str(verdict_of_paddle(tmp_path / "verdicts")),
                        fleet=FLEET + 'nodes = 4\nschedule = "0 3 * * *"\n'
                        'pull_secret = "registry-creds"\nmargin = 0.05\n')
    assert done.returncode == 0, done.stderr
    files = sorted((tmp_path / "k8s").glob("*.yaml"))
    assert [f.name for f in files] == ["fleet-paddle-2-6-2-gpu-cuda11-8-cudnn8.yaml",
                                       "probe-configmap.yaml",
                                       "reference-paddle-2-6-2-gpu-cuda11-8-cudnn8.yaml"]
    result = validate(*files)
    assert result.returncode == 0, result.output
    cron = yaml.safe_load(files[0].read_text())
    assert cron["kind"] == "CronJob" and cron["spec"]["schedule"] == "0 3 * * *"
    job = cron["spec"]["jobTemplate"]["spec"]
    assert job["parallelism"] == job["completions"] == 4 and job["backoffLimit"] == 0
    pod = job["template"]["spec"]
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti["topologyKey"] == "kubernetes.io/hostname"
    assert anti["labelSelector"]["matchLabels"] == {
        "imgkit.dev/fleet-check": job["template"]["metadata"]["labels"]["imgkit.dev/fleet-check"]}
    probe, judge = pod["initContainers"][0], pod["containers"][0]
    assert probe["image"] == f"registry.example.com/ml/paddle:{PADDLE.split(':')[1]}"
    assert probe["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert "nvidia.com/gpu" not in judge["resources"]["limits"]       # the judge needs no GPU
    assert judge["command"][:4] == ["imgkit", "judge", probe["image"], "/var/run/imgkit/report.txt"]
    assert judge["command"][-4:] == ["--reference", "/etc/imgkit/reference/verdict.json",
                                     "--margin", "0.05"]
    assert {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}} \
        in judge["env"]
    assert pod["imagePullSecrets"] == [{"name": "registry-creds"}]
    reference = yaml.safe_load(files[2].read_text())
    assert json.loads(reference["data"]["verdict.json"])["image"].endswith(PADDLE)
    assert {"name": "reference", "configMap": {"name": reference["metadata"]["name"]}} \
        in pod["volumes"]


@pytest.mark.parametrize("fleet,extra,words", [
    ('[cluster.fleet]\npushgateway = "http://p:9091"\n', [], "cluster.fleet.judge_image"),
    ('[cluster.fleet]\njudge_image = "j:1"\n', [], "cluster.fleet.pushgateway"),
    ('[cluster.fleet]\njudge_image = "j:1"\npushgateway = "p:9091"\n', [], "cluster.fleet.pushgateway"),
    (FLEET + 'schedule = "every day"\n', [], "not a cron schedule"),
    (FLEET, ["--verdicts", "/nonexistent"], "not a folder"),
    ("[cluster]\n", [], "--fleet needs [cluster.fleet]"),
])
def test_a_fleet_check_missing_what_it_needs_is_bad_usage_and_writes_nothing(
        tmp_path: Path, fleet: str, extra: list[str], words: str) -> None:
    done = fleet_export(tmp_path, *extra, fleet=fleet)
    said = " ".join(done.stderr.split())
    assert done.returncode == 2 and words in said and "Traceback" not in said, said
    assert not (tmp_path / "k8s").exists()


def test_an_image_without_a_reference_verdict_is_named(tmp_path: Path) -> None:
    empty = tmp_path / "verdicts"
    empty.mkdir()
    done = fleet_export(tmp_path, "--verdicts", str(empty))
    assert done.returncode == 2 and f"has no verdict of {PADDLE}" in done.stderr, done.stderr
