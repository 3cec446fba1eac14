"""GPU paths of the probe, proven on a real GPU. Skipped on hosts without an NVIDIA GPU.

The GPU hosts these run on have no Docker, so the probe runs here as a plain process
against the host's CUDA libraries (NVIDIA's wheels, put on the loader path the way an
image's LD_LIBRARY_PATH does), and its report is judged by the same `evaluate` as
`imgkit verify`. Framework checks use the host's PyTorch; the TF32 switches are set the
ways an image sets them (a sitecustomize, or an environment override)."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from imgkit.options import Thresholds
from imgkit.probe import gpu
from imgkit.verify import precision
from imgkit.verify.expect import Expectations
from imgkit.verify.verdict import FAIL, PASS

from .helpers.gpu_host import (
    CPU_FALLBACKS,
    TF32_CASES,
    framework_facts_once,
    judge,
    nvidia_gpu_present,
    probe_host,
)

pytestmark = pytest.mark.gpu

if not nvidia_gpu_present():
    pytest.skip("no NVIDIA GPU on this host", allow_module_level=True)

# Checks whose subject is the GPU (not the host's library layout, which is no image's)
GPU_CHECKS = ("gpu.", "cublas.fp32-exact", "cublas.tf32", "gemm.", "cudnn.conv", "nccl.all-reduce",
              "torch.gpu-", "torch.fp32-", "torch.amp-", "jax.gpu-", "jax.fp32-", "jax.amp-")


@pytest.fixture(scope="module")
def host_report() -> dict[str, Any]:
    # as `verify --json` runs it: what is installed is listed in the probe's pool while the
    # frameworks import and measure, so every GPU check below is judged with it running
    return probe_host(gemm_size=8192, args=("--inventory",))


def test_the_inventory_is_listed_beside_the_gpu_work(host_report: dict[str, Any]) -> None:
    names = {d["name"].lower() for d in host_report["inventory"]["python"]}
    assert {"torch", "jax"} <= names, sorted(names)[:40]
    assert judge(host_report)["torch.gpu-step"].verdict == PASS


def test_probe_gpu_section_runs_every_measurement(host_report: dict[str, Any]) -> None:
    work = host_report["gpu"]["work"]
    assert host_report["gpu"]["device_count"] >= 1
    assert set(work["gemm"]) == {"fp32", "tf32", "fp16", "bf16"}
    for name, result in [*work["gemm"].items(), ("conv", work["conv"]), ("nccl", work["nccl"])]:
        assert "error" not in result, (name, result)
    assert work["nccl"]["correct"]
    assert work["tf32_check"]["fp32_error"] < gpu.TF32_ERROR_BOUNDARY < work["tf32_check"]["tf32_error"]
    assert work["seconds"] < 20, work["seconds"]


def test_verdict_of_a_good_gpu_host_passes_every_gpu_check(host_report: dict[str, Any]) -> None:
    checks = judge(host_report)
    gpu_checks = {n: c for n, c in checks.items() if n.startswith(GPU_CHECKS)}
    for name in ("gpu.visible", "cublas.fp32-exact", "cublas.tf32-in-effect", "gemm.fp32",
                 "gemm.tf32", "gemm.fp16", "gemm.bf16", "cudnn.conv-fp16", "nccl.all-reduce",
                 "torch.gpu-count", "torch.gpu-step", "torch.fp32-matmul-mode",
                 "torch.fp32-conv-mode", "torch.amp-fp16", "torch.amp-bf16", "jax.gpu-count",
                 "jax.gpu-step", "jax.fp32-matmul-mode", "jax.fp32-conv-mode", "jax.amp-fp16",
                 "jax.amp-bf16"):
        assert gpu_checks[name].verdict == PASS, gpu_checks[name]
    assert not [c for c in gpu_checks.values() if c.verdict == FAIL and c.required]


def test_nvml_and_cuda_agree_on_the_gpus(host_report: dict[str, Any]) -> None:
    nvml = host_report["gpu"]["nvml"]
    assert nvml["available"], nvml
    assert len(nvml["devices"]) == host_report["gpu"]["device_count"]
    assert nvml["driver"] and nvml["driver_cuda"]
    # each device's UUID, DCGM exporter's join key for the metrics
    assert all(str(d["uuid"]).startswith("GPU-") for d in nvml["devices"]), nvml["devices"]


@pytest.mark.parametrize("framework,case,prelude,env,matmul,conv", TF32_CASES,
                         ids=[f"{c[0]}: {c[1]}" for c in TF32_CASES])
def test_tf32_reading_follows_the_framework_switch(host_report: dict[str, Any], framework: str,
                                                   case: str, prelude: str, env: dict[str, str],
                                                   matmul: str, conv: str) -> None:
    report = copy.deepcopy(host_report)
    report["frameworks"] = {framework: framework_facts_once(framework, prelude, **env)}
    facts = report["frameworks"][framework]
    assert facts.get("step_on_gpu"), facts
    for op, key, mode in (("matmul", "tf32", matmul), ("conv", "tf32_conv", conv)):
        name = f"{framework}.fp32-{op}-mode"
        right = judge(report, framework=framework, **{key: "on" if mode == "tf32" else "off"})  # type: ignore[arg-type]
        wrong = judge(report, framework=framework, **{key: "off" if mode == "tf32" else "on"})  # type: ignore[arg-type]
        assert right[name].verdict == PASS, right[name]
        assert right[name].measured.startswith(mode), right[name]
        assert wrong[name].verdict == FAIL, wrong[name]


@pytest.mark.parametrize("framework,case,prelude,env,matmul,conv", TF32_CASES,
                         ids=[f"{c[0]}: {c[1]}" for c in TF32_CASES])
def test_tf32_is_judged_against_the_framework_default_when_nothing_is_claimed(
        host_report: dict[str, Any], framework: str, case: str, prelude: str,
        env: dict[str, str], matmul: str, conv: str) -> None:
    report = copy.deepcopy(host_report)
    report["frameworks"] = {framework: framework_facts_once(framework, prelude, **env)}
    checks = judge(report, framework=framework)
    defaults = precision.DEFAULTS[framework]
    for op, mode in (("matmul", matmul), ("conv", conv)):
        check = checks[f"{framework}.fp32-{op}-mode"]
        default = "tf32" if defaults[op] == "on" else "fp32"
        assert check.required and f"{framework}'s default" in check.expected, check
        assert check.verdict == (PASS if mode == default else FAIL), check
        if mode != default:   # both values in the words
            assert mode in check.diagnosis and default in check.diagnosis, check


@pytest.mark.parametrize("framework,env", CPU_FALLBACKS,
                         ids=[f"{f}: {e}" for f, e in CPU_FALLBACKS])
def test_gpu_hidden_from_the_framework_is_a_cpu_fallback_failure(
        host_report: dict[str, Any], framework: str, env: dict[str, str]) -> None:
    report = copy.deepcopy(host_report)
    report["frameworks"] = {framework: framework_facts_once(framework, **env)}
    checks = judge(report, framework=framework)
    assert checks[f"{framework}.gpu-count"].verdict == FAIL
    assert "fall back to the CPU" in checks[f"{framework}.gpu-count"].diagnosis
    assert checks[f"{framework}.gpu-step"].verdict == FAIL
    assert checks["gpu.visible"].verdict == PASS  # the host's GPU is fine: the image is at fault


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_an_amp_training_step_runs_on_the_gpu_and_is_judged(host_report: dict[str, Any],
                                                            framework: str) -> None:
    report = copy.deepcopy(host_report)
    report["frameworks"] = {framework: framework_facts_once(framework)}
    amp = report["frameworks"][framework]["amp"]
    for kind in ("fp32", "fp16", "bf16"):   # Hopper has BF16
        assert amp[kind].get("finite") and amp[kind].get("stepped"), (kind, amp)
    assert amp["fp16"]["scale"] > 0
    checks = judge(report, framework=framework)
    for kind in ("fp16", "bf16"):
        assert checks[f"{framework}.amp-{kind}"].verdict == PASS, checks[f"{framework}.amp-{kind}"]
        assert "x FP32" in checks[f"{framework}.amp-{kind}"].measured
    floor = judge(report, thresholds=Thresholds(amp_speedup=1000.0), framework=framework)
    assert floor[f"{framework}.amp-fp16"].verdict == FAIL
    assert "1000x faster" in floor[f"{framework}.amp-fp16"].diagnosis


def test_host_driver_preflight_reads_the_real_driver() -> None:
    pytest.importorskip("pynvml")
    from imgkit.verify.run import host_driver_checks
    (check,) = host_driver_checks(Expectations((("cuda", "12.4"),), (("cuda", "--expect"),)))
    assert check.verdict == PASS, check
    assert check.measured.split(".")[0].isdigit()


@pytest.mark.parametrize("env", [{"NVIDIA_REQUIRE_CUDA": "cuda>=12.4 brand=tesla,driver>=470,driver<471"},
                                 {"CUDA_VERSION": "12.4.1"}], ids=["NVIDIA_REQUIRE_CUDA", "CUDA_VERSION"])
def test_host_driver_preflight_takes_the_cuda_from_the_image_environment(env: dict[str, str]) -> None:
    """An image in NVIDIA's style with no tag or labels imgkit reads: the CUDA its driver
    must run comes from the image's own environment, judged against the real driver."""
    pytest.importorskip("pynvml")
    from imgkit.verify.run import host_driver_checks
    (check,) = host_driver_checks(Expectations((), ()), env)
    assert check.verdict == PASS, check
    assert "CUDA 12.4" in check.expected, check


def test_an_image_needing_a_newer_cuda_than_the_driver_is_not_passed() -> None:
    """NVIDIA_REQUIRE_CUDA naming CUDA 13.1, whose own driver is 590: a driver before that
    runs it at best under minor-version compatibility (13.x on >= 580), else not at all.
    The driver is read with nvidia-smi, not the code under test."""
    import subprocess
    pytest.importorskip("pynvml")
    from imgkit.verify.diagnose import HOST
    from imgkit.verify.run import host_driver_checks
    from imgkit.verify.verdict import WARN
    driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                            capture_output=True, text=True, check=True).stdout.split()[0]
    if int(driver.split(".")[0]) >= 590:
        pytest.skip(f"driver {driver} runs CUDA 13.1 natively")
    (check,) = host_driver_checks(Expectations((), ()), {"NVIDIA_REQUIRE_CUDA": "cuda>=13.1"})
    assert check.verdict in (WARN, FAIL) and check.scope == HOST, check
    assert check.measured == driver and check.diagnosis, check


LDSO = "/lib64/ld-linux-x86-64.so.2"


def test_wheels_reached_only_by_rpath_are_found_and_used() -> None:
    """`pip install torch`: the CUDA libraries live in NVIDIA's wheels, which torch finds by
    its RPATH; none is on the loader's path. Run with the loader's cache inhibited and no
    LD_LIBRARY_PATH, no soname resolves to cuBLAS, so the probe must find the wheels' copies
    and run its GPU work with them, loaded by path."""
    import os
    import subprocess
    import sys

    from imgkit.probe.libs import LOADER_NAMES
    if not os.path.exists(LDSO):
        pytest.skip(f"no {LDSO}")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    run = [LDSO, "--inhibit-cache", sys.executable]
    check = ("import ctypes, sys\nfor n in sys.argv[1:]:\n"
             "  try: ctypes.CDLL(n); print(n)\n  except OSError: pass")
    resolves = subprocess.run(run + ["-c", check, *LOADER_NAMES["cublas"]], env=env,
                              capture_output=True, text=True).stdout.split()
    if resolves:
        pytest.skip(f"{resolves} resolves from the loader's default folders on this host")
    report = probe_host(gemm_size=4096, loader=run, env=env)
    copies = [c for c in report["libraries"]["families"]["cublas"]["copies"] if c["where"] == "environment"]
    assert copies and all(c["version"] and "/site-packages/" in c["realpath"] for c in copies), copies
    work = report["gpu"]["work"]
    assert "/site-packages/" in work["loaded"]["cublas"], work["loaded"]
    for dtype, result in work["gemm"].items():
        assert "error" not in result, (dtype, result)
    assert work["tf32_check"]["fp32_error"] < gpu.TF32_ERROR_BOUNDARY < work["tf32_check"]["tf32_error"]


def test_declared_gpu_tests_run_with_the_gpu_visible() -> None:
    """A team's gpuTests as `imgkit verify --checks` sends them: run by the probe after its
    GPU work, with the GPU visible; a forward pass on the GPU passes, a bad device fails."""
    from imgkit.matrix.checkfile import CheckFile
    from imgkit.verify.declared.gpu_tests import gpu_test_checks
    from imgkit.verify.declared.in_probe import probe_environment
    from imgkit.verify.evaluate import evaluate
    from imgkit.verify.facts import parse_report

    from .helpers.gpu_host import loader_env
    checks = CheckFile.model_validate({"schemaVersion": "2.0.0", "gpuTests": [
        {"name": "a forward pass on the GPU", "expectedOutput": ["^cuda:0 NVIDIA"],
         "run": "import torch\nm = torch.nn.Linear(64, 8).cuda()\ny = m(torch.randn(4, 64, "
                "device='cuda'))\nprint(y.device, torch.cuda.get_device_name(0))"},
        {"name": "a device that is not there", "run": "import torch; torch.zeros(1, device='cuda:99')"}]})
    report = probe_host(gemm_size=1024, env=loader_env(**probe_environment(checks, gpu=True, timeout=600)))
    verdict = evaluate("host", "host", parse_report(report), Expectations((), ()), gpu=True,
                       thresholds=Thresholds())
    judged = {c.name: c for c in gpu_test_checks(checks.gpu_tests, verdict)}
    assert judged["check: a forward pass on the GPU"].verdict == PASS, judged
    assert judged["check: a device that is not there"].verdict == FAIL, judged
