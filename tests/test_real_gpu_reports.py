"""The probe's real reports from a GPU, judged, compared and turned into metrics here (no GPU).

`gpu_reports/h200-run{1,2}.json`: two runs of the probe, minutes apart, as `imgkit verify`
ships it (the zip started by BOOT), on a lent NVIDIA H200 (driver 580.159.04, CUDA 13.0;
PyTorch 2.11.0+cu130, JAX 0.11.2, NVIDIA's CUDA 13 wheels), 2026-11-26, probe version 3.
The host is not an image: its libraries have two copies each (the wheels' and the
system's) and its driver libraries sit in /usr/local/nvidia, so those checks fail here as
they should, and only the GPU's checks are held to passing.

When the probe's version changes these fail: make new ones on a GPU with
`python3 -c 'import json; from tests.helpers.gpu_host import probe_host; print(json.dumps(probe_host()))'`."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from imgkit.probe import PROBE_VERSION
from imgkit.verify.evaluate import evaluate
from imgkit.verify.expect import expectations
from imgkit.verify.facts import parse_report
from imgkit.verify.fleet import fleet_checks, read_reference, shares_of
from imgkit.verify.metrics import Identity, metrics_text
from imgkit.verify.report import verdict_json
from imgkit.verify.verdict import FAIL, PASS, Verdict

from .helpers.monitoring import need_tools, promtool

HERE = Path(__file__).parent / "gpu_reports"
TAG = "pytorch:2.11.0-cuda13.0-cudnn9-runtime"   # what the host's stack is
DIGEST = "sha256:" + "0" * 64
UUID = "GPU-c9c0bbbd-0bc9-e32e-7339-ae6ced7a9fca"
# what fails because a GPU host is not an image (see the docstring), and nothing else
HOST_LAYOUT = {"cudart.single-copy", "cublas.single-copy", "cublasLt.single-copy",
               "cudnn.single-copy", "nccl.single-copy", "driver-libs-not-baked"}


def report(run: int) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HERE / f"h200-run{run}.json").read_text())
    assert data["probe_version"] == PROBE_VERSION, (
        "the probe's version changed: make these reports again on a GPU (this module's docstring)")
    return data


def judged(run: int) -> Verdict:
    return evaluate(TAG, DIGEST, parse_report(report(run)), expectations(TAG, {}, []), gpu=True)


@pytest.mark.parametrize("run", [1, 2])
def test_every_gpu_check_of_a_real_h200_run_passes(run: int) -> None:
    checks = {c.name: c for c in judged(run).checks}
    assert {c.name for c in checks.values() if c.verdict == FAIL} == HOST_LAYOUT
    for name in ("gpu.visible", "cublas.fp32-exact", "cublas.tf32-in-effect", "gemm.fp32",
                 "gemm.tf32", "gemm.fp16", "gemm.bf16", "cudnn.conv-fp16", "nccl.all-reduce",
                 "torch.gpu-step", "torch.fp32-matmul-mode", "torch.fp32-conv-mode",
                 "torch.amp-fp16", "torch.amp-bf16", "jax.gpu-step", "jax.fp32-matmul-mode",
                 "jax.fp32-conv-mode", "jax.amp-fp16", "jax.amp-bf16"):
        assert checks[name].verdict == PASS, checks[name]
    # held to the H200's own row of the peak table (989 dense FP16 TFLOPS), not skipped
    assert checks["gemm.bf16"].expected == ">= 50% of 989 TFLOPS"


def test_a_second_run_holds_to_the_first_as_a_fleet_reference(tmp_path: Path) -> None:
    path = tmp_path / "reference.json"
    path.write_text(verdict_json(judged(1)))
    reference = read_reference(path)
    assert reference.gpu == "NVIDIA H200"
    checks = fleet_checks(judged(2), reference, margin=0.1)
    assert {c.name for c in checks} >= {"fleet.gemm.tf32", "fleet.gemm.bf16", "fleet.conv.fp16",
                                        "fleet.tf32.torch.matmul", "fleet.tf32.jax.matmul"}
    assert all(c.verdict == PASS for c in checks), [c for c in checks if c.verdict != PASS]
    # run to run, the same GPU moved by under 3%: the default margin of 10% is not noise-bound
    first, second = shares_of(parse_report(report(1))), shares_of(parse_report(report(2)))
    assert max(abs(second[k] / first[k] - 1) for k in first) < 0.03
    # the same report against itself holds with no margin at all
    assert all(c.verdict == PASS for c in fleet_checks(judged(1), reference, margin=0.0))


def test_a_real_run_as_metrics_carries_the_gpus_identity_and_passes_promtool() -> None:
    text = metrics_text(judged(2), Identity(DIGEST, "linux/amd64", "h200-node"), now=1.7e9)
    samples = {(s.name, frozenset(s.labels.items())): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}

    def value(name: str, **labels: str) -> float:
        found = [v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= ls]
        assert len(found) == 1, (name, labels, found)
        return found[0]

    assert value("imgkit_verify_passed", UUID=UUID, model_name="NVIDIA H200", fault="image",
                 DCGM_FI_DRIVER_VERSION="580.159.04") == 0     # the host layout, as above
    assert value("imgkit_verify_gpu_verified") == 0      # the image did not pass, GPU or not
    shares = shares_of(parse_report(report(2)))
    for precision in ("fp32", "tf32", "fp16", "bf16"):
        assert value("imgkit_verify_gemm_peak_ratio", precision=precision, UUID=UUID) == \
            pytest.approx(shares[f"gemm {precision}"])
    assert value("imgkit_verify_tf32_in_effect", framework="torch", op="matmul") == 0
    assert value("imgkit_verify_tf32_in_effect", framework="jax", op="matmul") == 1
    need_tools()
    done = promtool("check", "metrics", stdin=text)
    assert done.returncode == 0, done.stdout + done.stderr
