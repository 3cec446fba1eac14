"""Evaluation of probe facts (pure logic): each failure category gets its diagnosis."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from imgkit.verify.diagnose import KNOWN, diagnose
from imgkit.verify.expect import Expectations, expectations, from_tag
from imgkit.verify.facts import parse_report
from imgkit.verify.gpu_checks import peak_for
from imgkit.verify.verdict import WARN

from .helpers.reports import GOOD, lib, run


def names(verdict) -> set[str]:
    return {c.name for c in verdict.failed}


def test_good_report_passes() -> None:
    verdict = run(GOOD)
    assert not verdict.failed, verdict.failed
    assert verdict.gpu_verified


def test_without_gpu_says_the_gpu_was_not_verified() -> None:
    verdict = run(GOOD, gpu=False)
    assert not verdict.failed and not verdict.gpu_verified
    assert any(c.name == "gpu" and "NOT verified" in c.diagnosis for c in verdict.checks)


def test_version_mismatch_with_tag() -> None:
    verdict = run(GOOD, opts=["cuda=11.8"])
    assert "cudart.version" in names(verdict)
    said = {c.name: c.diagnosis for c in verdict.failed}
    assert said["cudart.version"].endswith("--expect says 11.8")       # who claimed it
    assert said["stack.cublas"].endswith("not CUDA 11.8 as --expect says")
    from imgkit.verify.evaluate import evaluate
    tagged = "pytorch:2.5.1-cuda11.8-cudnn9-runtime"
    verdict = evaluate(tagged, "sha256:" + "0" * 64, parse_report(GOOD),
                       expectations(tagged, {}, []), gpu=True)
    assert {c.name: c.diagnosis for c in verdict.failed}["cudart.version"].endswith(
        "its tag says 11.8")


def test_a_cuda_release_with_its_patch_is_held_as_far_as_the_libraries_tell() -> None:
    """`--expect cuda=12.4.1` (as NVIDIA's CUDA_VERSION spells it): cuBLAS's series says
    12.4, which is that release; it failed 'cuBLAS belongs to CUDA 12.4, not 12.4.1'."""
    assert not names(run(GOOD, opts=["cuda=12.4.1"]))


def test_two_copies_fail_and_list_both() -> None:
    report = copy.deepcopy(GOOD)
    report["libraries"]["families"]["cudnn"]["copies"].append(lib("/usr/lib/libcudnn.so.8", "8.9.7"))
    verdict = run(report)
    check = next(c for c in verdict.failed if c.name == "cudnn.single-copy")
    assert "/l/libcudnn.so.9" in check.diagnosis and "/usr/lib/libcudnn.so.8" in check.diagnosis


def test_unloadable_library_is_named() -> None:
    report = copy.deepcopy(GOOD)
    report["libraries"]["families"]["nccl"]["copies"] = [lib("/l/libnccl.so.2", None, loadable=False)]
    check = next(c for c in run(report).failed if c.name == "nccl.loadable")
    assert "/l/libnccl.so.2" in check.diagnosis


def test_driver_library_baked_in() -> None:
    report = copy.deepcopy(GOOD)
    report["libraries"]["driver_libs_in_image"] = ["/usr/lib/x86_64-linux-gnu/libcuda.so.1"]
    check = next(c for c in run(report).failed if c.name == "driver-libs-not-baked")
    assert "libcuda.so.1" in check.diagnosis


def test_framework_import_failure_names_the_missing_library() -> None:
    report = copy.deepcopy(GOOD)
    report["frameworks"]["torch"] = {"imported": False, "missing_library": "libgomp.so.1",
                                     "error": "ImportError: libgomp.so.1: cannot open"}
    check = next(c for c in run(report).failed if c.name == "torch.import")
    assert "libgomp.so.1" in check.diagnosis


def test_a_framework_the_probe_cannot_run_fails_saying_so_not_that_it_is_missing() -> None:
    # a compat overlay's own framework (tensorflow): built by imgkit, labelled so, not probed
    from imgkit.verify.evaluate import evaluate
    labels = {"org.imgkit.framework": "tensorflow", "org.imgkit.framework_version": "2.17.0"}
    verdict = evaluate("ml/tf:2.17.0-cuda12.4", "sha256:" + "0" * 64, parse_report(GOOD),
                       expectations("ml/tf:2.17.0-cuda12.4", labels, []), gpu=True)
    check = next(c for c in verdict.failed if c.name == "tensorflow.import")
    assert check.measured == "not probed" and "not installed" not in check.diagnosis
    assert "imgkit's probe cannot run (it proves jax, paddle, torch)" in check.diagnosis


def test_a_framework_that_crashes_under_qemu_blames_the_host_not_the_image() -> None:
    """What torch 2.15's arm64 image does under this x86-64 host's QEMU (seen here): its
    oneDNN reads an arm64 register from sysfs and the emulated process dies. Not the image."""
    report = copy.deepcopy(GOOD)
    report["frameworks"]["torch"] = {"imported": False, "error": (
        "crashed (exit -11): .../xbyak_aarch64/src/util_impl_linux.h, 477: Can't open "
        "MIDR_EL1 sysfs entry | qemu: uncaught target signal 11 (Segmentation fault) - core dumped")}
    verdict = run(report)
    check = next(c for c in verdict.failed if c.name == "torch.import")
    assert check.scope == "host" and "QEMU emulation" in check.diagnosis
    assert verdict.host_failure


def test_silent_cpu_fallback_fails() -> None:
    report = copy.deepcopy(GOOD)
    report["frameworks"]["torch"].update(gpu_count=0, step_on_gpu=False, step_place="cpu")
    assert {"torch.gpu-count", "torch.gpu-step"} <= names(run(report))


def test_tf32_claim_is_checked_against_the_error_signature() -> None:
    assert "torch.fp32-matmul-mode" in names(run(GOOD, opts=["tf32=on"]))
    assert "torch.fp32-matmul-mode" not in names(run(GOOD, opts=["tf32=off"]))
    report = copy.deepcopy(GOOD)
    report["gpu"]["work"]["tf32_check"]["tf32_error"] = 1e-7  # TF32 asked, FP32 done
    assert "cublas.tf32-in-effect" in names(run(report))


def test_throughput_is_judged_against_the_peak_scaled_by_visible_sms() -> None:
    report = copy.deepcopy(GOOD)
    report["gpu"]["work"]["gemm"]["bf16"]["tflops"] = 100.0
    assert "gemm.bf16" in names(run(report))
    # a 1/7 MIG slice (18 of 132 SMs) reaching 110 TFLOPS is near its share of the peak
    report["gpu"]["work"]["devices"][0]["sm_count"] = 18
    for dtype in ("fp32", "tf32", "bf16", "fp16"):
        report["gpu"]["work"]["gemm"][dtype]["tflops"] /= 7
    report["gpu"]["work"]["gemm"]["bf16"]["tflops"] = 110.0
    report["gpu"]["work"]["conv"]["tflops"] = 50.0
    assert not run(report).failed


def test_no_gpu_inside_is_a_host_problem_with_a_diagnosis() -> None:
    report = copy.deepcopy(GOOD)
    report["gpu"] = {"device_count": 0, "runtime_error": {
        "error": "cudaGetDeviceCount failed: error 35 (CUDA driver version is insufficient "
                 "for CUDA runtime version)", "code": 35}}
    verdict = run(report)
    assert verdict.host_failure
    assert "too old" in verdict.failed[0].diagnosis


def test_root_user_and_default_shm_are_warnings() -> None:
    report = copy.deepcopy(GOOD)
    report["system"].update(uid=0, user="root", shm_bytes=64 << 20)
    verdict = run(report)
    warned = {c.name for c in verdict.checks if c.verdict == WARN}
    assert {"default user", "/dev/shm"} <= warned and not verdict.failed


def require_check(require: str | None, compat: list[str] | None = None,
                  opts: list[str] | None = None) -> Any:
    report = copy.deepcopy(GOOD)                  # cudart 12.4, tagged CUDA 12.4
    report["system"]["env"]["NVIDIA_REQUIRE_CUDA"] = require
    if compat is not None:
        report["system"]["cuda_compat"] = compat
    verdict = run(report, opts=opts)
    return next(c for c in verdict.checks if c.name == "env NVIDIA_REQUIRE_CUDA"), verdict


def test_a_driver_floor_is_never_a_failure_of_the_image() -> None:
    """NGC's framework containers say cuda>=9.0 and carry NVIDIA's forward-compatibility
    libraries: an honest image, which passes. The floor is a requirement on the host."""
    ngc = ["/usr/local/cuda-12.4/compat/lib.real/libcuda.so.550.54.15"]
    check, verdict = require_check("cuda>=9.0", ngc)
    assert check.verdict == "pass" and "forward-compatibility" in check.measured
    assert not verdict.failed
    check, verdict = require_check("cuda>=12.4 brand=tesla,driver>=470,driver<471")
    assert check.verdict == "pass" and not verdict.failed


def test_a_floor_below_the_runtime_without_compat_libraries_names_the_driver_it_fails_on() -> None:
    check, verdict = require_check("cuda>=9.0")
    assert check.verdict == "warn" and not check.required and not verdict.failed
    assert "525.60.13" in check.diagnosis and "550.54.14" in check.diagnosis, check.diagnosis
    assert "forward-compatibility" in check.diagnosis


def test_a_floor_above_the_runtime_refuses_hosts_that_could_run_it() -> None:
    check, verdict = require_check("cuda>=12.8")
    assert check.verdict == "warn" and not verdict.failed
    assert "CUDA 12.8" in check.diagnosis and "CUDA 12.4 runtime" in check.diagnosis


def test_no_floor_is_said_where_the_image_holds_a_runtime() -> None:
    check, _ = require_check(None)
    assert check.verdict == "warn" and "too-old driver" in check.diagnosis


@pytest.mark.parametrize("text, key", [
    ('could not select device driver "" with capabilities: [[gpu]]', "toolkit-missing"),
    ("nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update",
     "driver-too-old-require"),
    ("cudaGetDeviceCount failed: error 35 (CUDA driver version is insufficient)", "driver-insufficient"),
    ("error 804 (forward compatibility was attempted on non supported HW)", "forward-compat"),
    ("error 802 (system not yet initialized)", "fabric-manager"),
    ("Failed to initialize NVML: Unknown Error", "nvml-init"),
    ("Failed to initialize NVML: Driver/library version mismatch", "nvml-init"),
    ("NVML: Driver/library version mismatch", "driver-library-mismatch"),
    ("unresolvable CDI devices nvidia.com/gpu=all", "cdi-unresolvable"),
    ("CUDA error: no kernel image is available for execution on the device", "no-kernel-image"),
    ("CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH", "cudnn-sublibrary-mismatch"),
    ("NCCL error in: ..., unhandled system error", "nccl-system"),
    ("Bus error (core dumped)", "shm-bus-error"),
    ("error 100 (no CUDA-capable device is detected)", "no-gpu"),
    ("qemu: uncaught target signal 11 (Segmentation fault) - core dumped", "qemu-emulation"),
])
def test_known_failure_messages_map_to_their_diagnosis(text: str, key: str) -> None:
    found = diagnose(text)
    assert found is not None and found.key == key


def test_every_known_entry_is_exercised() -> None:
    keys = {d.key for _, d in KNOWN}
    tested = {"toolkit-missing", "driver-too-old-require", "driver-insufficient", "forward-compat",
              "fabric-manager", "nvml-init", "driver-library-mismatch", "cdi-unresolvable",
              "no-kernel-image", "cudnn-sublibrary-mismatch", "nccl-system", "shm-bus-error",
              "no-gpu", "qemu-emulation"}
    assert keys == tested


def test_expectations_from_tag_labels_and_options() -> None:
    assert from_tag("paddle:2.6.2-gpu-cuda11.8-cudnn8") == {
        "cuda": "11.8", "cudnn": "8", "framework": "paddle", "framework_version": "2.6.2"}
    assert from_tag("registry:5000/team/pytorch:2.5.1-cuda12.4-cudnn9-runtime")["cuda"] == "12.4"
    exp: Expectations = expectations("paddle:2.6.2-gpu-cuda11.8-cudnn8",
                                     {"org.imgkit.cudnn": "8.6.0.163"}, ["cuda=12.4"])
    assert exp.get("cudnn") == "8.6.0.163" and exp.source("cudnn") == "label"
    assert exp.get("cuda") == "12.4" and exp.source("cuda") == "--expect"


def test_peak_table_covers_the_named_gpus() -> None:
    for name in ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe",
                 "NVIDIA H200", "NVIDIA L4", "NVIDIA L40S", "NVIDIA A10", "Tesla T4",
                 "Tesla V100-SXM2-16GB", "NVIDIA GeForce RTX 4090"):
        assert peak_for(name) is not None, name
    h100, t4 = peak_for("NVIDIA H100 PCIe"), peak_for("Tesla T4")
    assert h100 is not None and h100.name == "H100 PCIe" and h100.rate("tf32") == 378
    assert t4 is not None and t4.rate("tf32") is None and t4.rate("fp16") == 65


def test_nccl_reports_bandwidth_only_when_there_is_traffic() -> None:
    """One GPU: the all-reduce moves nothing, so only correctness is judged (seen on an H100)."""
    one = next(c for c in run(GOOD).checks if c.name == "nccl.all-reduce")
    assert one.verdict == "pass" and "no bandwidth with one GPU" in one.measured
    report = copy.deepcopy(GOOD)
    report["gpu"]["work"]["nccl"] = {"gpus": 8, "correct": True, "busbw_gbs": 181.4}
    eight = next(c for c in run(report).checks if c.name == "nccl.all-reduce")
    assert "8 GPU(s), bus 181 GB/s" in eight.measured
    report["gpu"]["work"]["nccl"]["correct"] = False
    assert "nccl.all-reduce" in names(run(report))


def with_copy(family: str, **fields: Any) -> dict[str, Any]:
    report = copy.deepcopy(GOOD)
    report["libraries"]["families"][family]["copies"][0].update(fields)
    return report


@pytest.mark.parametrize("family,fields,culprit", [
    ("cublas", {"version": "11.11.3.6"}, "cuBLAS 11.11.3.6 (/l/libcublas.so.12) belongs to CUDA 11.8"),
    ("cudnn", {"cuda_build": "11.8"}, "cuDNN 9.1.0 (/l/libcudnn.so.9) belongs to CUDA 11.8"),
    ("nccl", {"owner": {"kind": "wheel", "name": "nvidia_nccl_cu11", "version": "2.21.5"}},
     "belongs to CUDA 11"),
    ("nccl", {"owner": {"kind": "dpkg", "name": "libnccl2", "version": "2.21.5-1+cuda11.8"}},
     "belongs to CUDA 11.8"),
])
def test_a_component_of_another_cuda_fails_naming_both(family: str, fields: dict[str, Any],
                                                       culprit: str) -> None:
    verdict = run(with_copy(family, **fields))
    check = next(c for c in verdict.failed if c.name == f"stack.{family}")
    assert culprit in check.diagnosis and "not CUDA 12.4" in check.diagnosis


def test_components_of_the_claimed_cuda_pass() -> None:
    report = with_copy("cudnn", cuda_build="12.8")  # built for 12.8, runs on any CUDA 12
    report["libraries"]["families"]["nccl"]["copies"][0]["owner"] = {
        "kind": "wheel", "name": "nvidia_nccl_cu12", "version": "2.21.5", "component": True}
    checks = {c.name: c for c in run(report).checks}
    assert [checks[f"stack.{f}"].verdict for f in ("cublas", "cudnn", "nccl")] == ["pass"] * 3


def test_a_wrong_tag_fails_on_the_runtime_not_on_the_floor() -> None:
    """An image tagged CUDA 11.8 that holds 12.4 fails where the content disagrees with the
    tag (cudart.version); its floor, cuda>=12.4, is right for what it holds."""
    check, verdict = require_check("cuda>=12.4", opts=["cuda=11.8"])
    assert check.verdict == "pass"
    assert "cudart.version" in {c.name for c in verdict.failed}


def test_only_copies_on_the_loader_path_compete_but_every_copy_is_versioned() -> None:
    report = copy.deepcopy(GOOD)
    cudart = report["libraries"]["families"]["cudart"]["copies"]
    cudart.append(lib("/venv/site-packages/torch/lib/libcudart-0f1e2d3c.so.12", "12.4"))
    cudart[-1]["where"] = "environment"
    assert not run(report).failed
    cudart[-1]["version"] = "11.8"
    assert {c.name for c in run(report).failed} == {"cudart.version"}


@pytest.mark.parametrize("devices,cuda_count,verdict", [
    ([{"name": "NVIDIA A100", "mig": True, "mig_devices": 7}], 1, "info"),   # one instance given
    ([{"name": "NVIDIA A100", "mig": True, "mig_devices": None}], 1, "info"),  # NVML won't count
    ([{"name": "NVIDIA A100", "mig": True, "mig_devices": 1}], 2, "fail"),   # more than exist
    ([{"name": "NVIDIA H100"}, {"name": "NVIDIA H100"}], 1, "fail"),         # no MIG: must agree
    ([{"name": "NVIDIA H100"}], 1, None),                                    # agrees: no check
])
def test_device_count_knows_mig(devices: list[dict[str, Any]], cuda_count: int, verdict: str | None) -> None:
    """Under MIG, NVML lists the parent GPU and CUDA the MIG instances it was given."""
    report = copy.deepcopy(GOOD)
    report["gpu"]["nvml"]["devices"] = devices
    report["gpu"]["device_count"] = cuda_count
    report["frameworks"]["torch"]["gpu_count"] = cuda_count
    checks = {c.name: c for c in run(report).checks}
    assert (checks["gpu.nvml-agrees"].verdict if "gpu.nvml-agrees" in checks else None) == verdict
    assert ("gpu.nvml-agrees" in names(run(report))) == (verdict == "fail")


@pytest.mark.parametrize("driver,cuda,verdict,says", [
    ("580.159.04", "12.4", "pass", ""),                      # seen on the lent H100
    ("535.104.05", "12.4", "warn", "minor-version compatibility"),
    ("470.82.01", "12.4", "fail", "too old for CUDA 12.4"),
    ("450.80.02", "11.8", "warn", "minor-version compatibility"),
    ("440.33.01", "11.8", "fail", "the image needs driver >= 520.61.05"),
    ("580.159.04", None, "info", ""),
    ("not-a-version", "12.4", "info", ""),
    ("580.159.04", "13.2", "warn", "minor-version compatibility"),   # 13.2 wants 595.58.03
    ("580.159.04", "13.5", "pass", "toolkit's own driver is not in imgkit's data"),
    ("575.57.08", "13.5", "fail", "needs driver >= 580"),
])
def test_the_host_driver_against_the_images_cuda(driver: str, cuda: str | None, verdict: str,
                                                 says: str) -> None:
    from imgkit.matrix.compat import load
    from imgkit.verify.run import driver_check
    check = driver_check(driver, cuda, load())
    assert check.verdict == verdict and says in check.diagnosis and check.scope == "host"


@pytest.mark.parametrize("env, cuda, said", [
    ({"NVIDIA_REQUIRE_CUDA": "cuda>=12.4 brand=tesla,driver>=470,driver<471", "CUDA_VERSION": "12.4.1"},
     "12.4", "NVIDIA_REQUIRE_CUDA says cuda>=12.4"),
    ({"CUDA_VERSION": "11.8.0"}, "11.8", "CUDA_VERSION is 11.8.0"),
    ({}, None, ""),
])
def test_an_nvidia_style_image_names_the_cuda_its_host_must_run(env: dict[str, str], cuda: str | None,
                                                                said: str) -> None:
    """Without imgkit's labels or a tag that says it, the image's own environment names
    the CUDA the host's driver is held to, and a driver too old for it says which is needed."""
    from imgkit.matrix.compat import load
    from imgkit.verify.run import cuda_needed, driver_check
    needed, source = cuda_needed(expectations("nvcr.io/nvidia/pytorch:24.05-py3", {}, []), env)
    assert (needed, said in source) == (cuda, True)
    tagged = cuda_needed(expectations("x:1", {}, ["cuda=12.8"]), env)
    assert tagged == ("12.8", "")                                   # the tag's claim comes first
    if cuda == "12.4":
        check = driver_check("470.82.01", needed, load(), source)
        assert check.verdict == "fail" and check.scope == "host"
        assert "(the image's NVIDIA_REQUIRE_CUDA says cuda>=12.4)" in check.diagnosis
        assert "needs driver >= 550" in check.diagnosis, check.diagnosis


# -- dependencies and the parent's stack (extension images) -----------------------------------
def test_pip_check_problems_are_named_and_a_missing_pip_is_no_failure() -> None:
    broken = {**copy.deepcopy(GOOD), "pip_check": {"ran": True, "ok": False, "problems": [
        "opencv-python-headless 4.10.0.84 has requirement numpy>=1.21, but you have numpy 1.19.5."]}}
    verdict = run(broken)
    check = next(c for c in verdict.checks if c.name == "pip.check")
    assert check in verdict.failed and "numpy>=1.21" in check.diagnosis
    fine = run({**copy.deepcopy(GOOD), "pip_check": {"ran": True, "ok": True}})
    assert next(c for c in fine.checks if c.name == "pip.check").verdict == "pass"
    missing = run({**copy.deepcopy(GOOD), "pip_check": {"ran": False, "error": "no pip"}})
    assert not missing.failed and next(c for c in missing.checks if c.name == "pip.check").verdict == "skip"


def test_an_extension_must_keep_its_parents_library_copies() -> None:
    from imgkit.verify.evaluate import library_summary, parent_stack_checks
    report = parse_report(copy.deepcopy(GOOD))
    same = library_summary(report)
    assert [c.verdict for c in parent_stack_checks(report, "paddle:x", same)] == ["pass"]
    changed = {**same, "cudnn": [["/l/libcudnn.so.8", "8.6.0"]]}
    checks = parent_stack_checks(report, "paddle:x", changed)
    assert [(c.name, c.verdict) for c in checks] == [("parent-stack.cudnn", "fail")]
    assert "/l/libcudnn.so.9 (9.1.0)" in checks[0].measured
    unknown = parent_stack_checks(report, "paddle:x", None)
    assert unknown[0].verdict == "skip" and not unknown[0].required
