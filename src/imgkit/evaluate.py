"""Judge the probe's facts against expectations: a list of checks, each with what was
expected, what was measured, a verdict and, when it fails, a diagnosis. Pure logic."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from . import yamlload
from .compat import parse_version
from .diagnose import HOST, IMAGE, diagnose
from .expect import Expectations
from .shipped import PACKAGE_DIR

PASS, FAIL, WARN, SKIP, INFO = "pass", "fail", "warn", "skip", "info"
DOCKER_DEFAULT_SHM = 64 * 1024 * 1024
PADDLE_BARE_NAMES = ("libcudart.so", "libcublas.so", "libcudnn.so", "libcurand.so",
                     "libcusolver.so", "libcusparse.so", "libnccl.so")


@dataclass(frozen=True)
class Thresholds:
    """Minimum share of the GPU's dense peak (scaled to the SMs visible) to pass."""
    gemm: float = 0.5
    conv: float = 0.25


@dataclass(frozen=True)
class Check:
    name: str
    verdict: str
    expected: str = ""
    measured: str = ""
    diagnosis: str = ""
    scope: str = IMAGE          # who must act when it fails: the image or the host
    required: bool = True


@dataclass
class Verdict:
    image: str
    checks: list[Check] = field(default_factory=list)
    gpu_verified: bool = False
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.verdict == FAIL and c.required]

    @property
    def host_failure(self) -> bool:
        return any(c.scope == HOST for c in self.failed)


def _matches(measured: str, expected: str) -> bool:
    """'8.6.0' satisfies '8', '8.6', '8.6.0' and the label's '8.6.0.163'."""
    m, e = measured.split("."), expected.split(".")
    width = min(len(m), len(e)) if len(e) > len(m) else len(e)
    return m[:width] == e[:width]


def library_checks(report: dict[str, Any], exp: Expectations) -> list[Check]:
    checks = []
    families = report["libraries"]["families"]
    wanted = {"cudart": exp.get("cuda"), "cublas": exp.get("cublas"),
              "cudnn": exp.get("cudnn"), "nccl": exp.get("nccl")}
    for family in ("cudart", "cublas", "cublasLt", "cudnn", "nccl"):
        copies = families.get(family, {}).get("copies", [])
        expected = wanted.get(family)
        for copy in copies:
            if not copy.get("loadable"):
                checks.append(Check(f"{family}.loadable", FAIL, "loads", "cannot load",
                                    f"{copy['path']}: {copy.get('error')}"))
        versions = {c["path"]: c.get("version") for c in copies if c.get("loadable")}
        if len({c["realpath"] for c in copies}) > 1:
            listing = "; ".join(f"{c['path']} ({c.get('version') or c.get('error')})" for c in copies)
            checks.append(Check(f"{family}.single-copy", FAIL, "one copy on the loader path",
                                f"{len(copies)} copies", f"two copies reachable: {listing}"))
        if family == "cublasLt":
            continue
        if not copies:
            if expected:
                checks.append(Check(f"{family}.version", FAIL, expected, "not found",
                                    f"no {family} library on the loader path"))
            continue
        version = next((v for v in versions.values() if v), None)
        if expected is None:
            checks.append(Check(f"{family}.version", INFO, "", version or "unknown", required=False))
        elif version is None:
            checks.append(Check(f"{family}.version", FAIL, expected, "unreadable",
                                "the library did not report a version"))
        else:
            bad = [v for v in versions.values() if v and not _matches(v, expected)]
            ok = not bad
            checks.append(Check(f"{family}.version", PASS if ok else FAIL, expected,
                                ", ".join(sorted(set(filter(None, versions.values())))),
                                "" if ok else f"{family} is {bad[0]}, the tag/labels say {expected}"))
    driver = report["libraries"].get("driver_libs_in_image", [])
    checks.append(Check("driver-libs-not-baked", FAIL if driver else PASS, "none in the image",
                        ", ".join(driver) or "none",
                        "driver libraries must come from the host (the NVIDIA toolkit mounts "
                        "them); remove: " + ", ".join(driver) if driver else ""))
    return checks


def framework_checks(report: dict[str, Any], exp: Expectations) -> list[Check]:
    checks = []
    found = report.get("frameworks", {})
    expected = exp.get("framework")
    names = sorted(set(found) | ({expected} if expected else set()))
    runtime = {f: next((c.get("version") for c in report["libraries"]["families"].get(f, {})
                        .get("copies", []) if c.get("version")), None) for f in ("cudart", "cudnn")}
    for name in names:
        result = found.get(name)
        if result is None:
            checks.append(Check(f"{name}.import", FAIL, "installed", "not installed",
                                f"{name} is not installed in the image"))
            continue
        if not result.get("imported"):
            missing = result.get("missing_library")
            why = f"missing {missing}" if missing else result.get("error", "")
            checks.append(Check(f"{name}.import", FAIL, "imports", "import failed",
                                f"import {name} failed: {why}"))
            continue
        checks.append(Check(f"{name}.import", PASS, "imports", result.get("version", "")))
        if expected == name and exp.get("framework_version"):
            ok = str(result.get("version", "")).startswith(exp.get("framework_version") or "")
            checks.append(Check(f"{name}.version", PASS if ok else FAIL,
                                str(exp.get("framework_version")), str(result.get("version"))))
        if not result.get("compiled_with_cuda"):
            checks.append(Check(f"{name}.cuda-build", FAIL, "a CUDA build", "CPU-only build",
                                f"{name} was built without CUDA: it can only use the CPU"))
            continue
        for key, label, built, lib in (
                ("build-cuda", "CUDA", str(result.get("build_cuda") or ""), runtime["cudart"]),
                ("build-cudnn", "cuDNN", _cudnn_text(result.get("build_cudnn")), runtime["cudnn"])):
            if built and lib:
                checks.append(_build_agrees(f"{name}.{key}", name, label, built, lib))
    return checks


def _build_agrees(check: str, framework: str, label: str, built: str, lib: str) -> Check:
    """The library the image has must be the build's major version and not older."""
    ok = (built.split(".")[0] == lib.split(".")[0]
          and parse_version(lib) >= parse_version(built))
    return Check(check, PASS if ok else FAIL, f"runtime >= {built}, same major", lib,
                 "" if ok else f"{framework} was built for {label} {built} but the image "
                               f"has {lib}")


def _cudnn_text(value: Any) -> str | None:
    """Paddle says '8.6.0'; torch says 90100 (an int in cuDNN's own encoding)."""
    if value in (None, "", "None"):
        return None
    if isinstance(value, int) or str(value).isdigit():
        v = int(value)
        major, rest = (v // 10000, v % 10000) if v >= 90000 else (v // 1000, v % 1000)
        return f"{major}.{rest // 100}.{rest % 100}"
    return str(value)


def bare_name_checks(report: dict[str, Any], exp: Expectations) -> list[Check]:
    """Names the framework dlopens unversioned must resolve, to the copy the checks saw."""
    names = PADDLE_BARE_NAMES if exp.get("framework") == "paddle" or "paddle" in report.get(
        "frameworks", {}) else ()
    checks = []
    by_realpath = {c["realpath"]: c for f in report["libraries"]["families"].values()
                   for c in f.get("copies", [])}
    for name, result in sorted(report.get("bare_names", {}).items()):
        required = name in names
        if not result.get("loadable"):
            if required:
                checks.append(Check(f"dlopen {name}", FAIL, "resolves", "does not resolve",
                                    f"{name} does not resolve: {result.get('error')}"))
            continue
        path = result.get("path") or ""
        copy = by_realpath.get(os.path.realpath(path)) if path else None
        measured = f"{path}" + (f" ({copy.get('version')})" if copy and copy.get("version") else "")
        checks.append(Check(f"dlopen {name}", PASS, "resolves", measured, required=required))
    return checks


def environment_checks(report: dict[str, Any], exp: Expectations) -> list[Check]:
    env = report["system"]["env"]
    checks = []
    visible = env.get("NVIDIA_VISIBLE_DEVICES")
    checks.append(Check("env NVIDIA_VISIBLE_DEVICES", PASS if visible else WARN, "set",
                        visible or "unset", "" if visible else
                        "without it the NVIDIA runtime exposes no GPU unless --gpus is given",
                        required=False))
    caps = env.get("NVIDIA_DRIVER_CAPABILITIES") or ""
    ok = "compute" in caps or caps == "all"
    checks.append(Check("env NVIDIA_DRIVER_CAPABILITIES", PASS if ok else WARN,
                        "includes compute", caps or "unset",
                        "" if ok else "the toolkit will not mount the CUDA driver library",
                        required=False))
    require = env.get("NVIDIA_REQUIRE_CUDA") or ""
    cudart = next((c.get("version") for c in report["libraries"]["families"].get("cudart", {})
                   .get("copies", []) if c.get("version")), None)
    match = re.search(r"cuda>=\s*(\d+\.\d+)", require)
    if match and cudart:
        ok = match.group(1) == ".".join(cudart.split(".")[:2])
        checks.append(Check("env NVIDIA_REQUIRE_CUDA", PASS if ok else FAIL, f"cuda>={cudart}",
                            require, "" if ok else "NVIDIA_REQUIRE_CUDA disagrees with the "
                            "image's CUDA runtime: hosts are checked against the wrong version"))
    else:
        checks.append(Check("env NVIDIA_REQUIRE_CUDA", WARN if cudart else INFO,
                            "cuda>=X.Y", require or "unset",
                            "hosts with a too-old driver will not be refused at start"
                            if cudart else "", required=False))
    user, uid = report["system"].get("user"), report["system"].get("uid")
    checks.append(Check("default user", WARN if uid == 0 else PASS, "non-root", f"{user} ({uid})",
                        "the image runs as root by default" if uid == 0 else "", required=False))
    shm = report["system"].get("shm_bytes")
    if shm is not None:
        small = shm <= DOCKER_DEFAULT_SHM
        checks.append(Check("/dev/shm", WARN if small else PASS, "> 64 MB for DataLoader/NCCL",
                            f"{shm // (1024 * 1024)} MB", "Docker's 64 MB default: run with "
                            "--shm-size=8g or --ipc=host for data loaders and NCCL" if small else "",
                            required=False))
    return checks


@lru_cache(maxsize=1)
def gpu_table() -> list[dict[str, Any]]:
    return list(yamlload.safe_load(PACKAGE_DIR.joinpath("data/gpus.yaml").read_text()))


def peak_for(name: str) -> dict[str, Any] | None:
    for row in gpu_table():
        if re.search(row["match"], name, re.I):
            return row
    return None


def gpu_checks(report: dict[str, Any], exp: Expectations, thresholds: Thresholds) -> list[Check]:
    gpu = report.get("gpu", {})
    checks: list[Check] = []
    count = gpu.get("device_count", 0)
    if count == 0:
        err = gpu.get("runtime_error") or {}
        text = err.get("error", "no device")
        diag = diagnose(text)
        checks.append(Check("gpu.visible", FAIL, ">= 1 GPU", f"0 ({text})",
                            f"{diag.summary}; fix: {diag.fix}" if diag else text,
                            scope=diag.scope if diag else HOST))
        return checks
    nvml = gpu.get("nvml", {})
    names = [d["name"] for d in nvml.get("devices", [])]
    checks.append(Check("gpu.visible", PASS, ">= 1 GPU",
                        f"{count}: {', '.join(names) or '?'}; driver {nvml.get('driver', '?')}"))
    if nvml.get("available") and len(names) != count:
        checks.append(Check("gpu.nvml-agrees", FAIL, f"{count} (CUDA)", f"{len(names)} (NVML)",
                            "NVML and the CUDA runtime see different GPUs"))
    for name, fw in sorted(report.get("frameworks", {}).items()):
        if not fw.get("imported"):
            continue
        seen = fw.get("gpu_count", 0)
        checks.append(Check(f"{name}.gpu-count", PASS if seen == count else FAIL, str(count),
                            str(seen), "" if seen == count else
                            f"{name} sees {seen} GPUs: it would silently fall back to the CPU"))
        on_gpu = fw.get("step_on_gpu")
        checks.append(Check(f"{name}.gpu-step", PASS if on_gpu else FAIL, "runs on the GPU",
                            str(fw.get("step_place", fw.get("error", "no step"))),
                            "" if on_gpu else f"{name}'s matmul did not run on the GPU"))
        err = fw.get("fp32_matmul_error")
        if err is not None:
            mode = "tf32" if err > 2e-5 else "fp32"
            claim = exp.get("tf32")
            ok = claim is None or (claim in ("on", "1", "true")) == (mode == "tf32")
            checks.append(Check(f"{name}.fp32-matmul-mode", PASS if ok else FAIL,
                                f"tf32={claim}" if claim else "reported",
                                f"{mode} (rel. error {err:.1e}); switches {fw.get('tf32_switches')}",
                                "" if ok else f"{name}'s default FP32 matmul is {mode}",
                                required=claim is not None))
    work = gpu.get("work", {})
    device = work.get("devices", [{}])[0]
    peak = peak_for(names[0]) if names else None
    scale = (device.get("sm_count", 0) / peak["sms"]) if peak and peak.get("sms") else 1.0
    tf32 = work.get("tf32_check", {})
    if "error" in tf32:
        diag = diagnose(tf32["error"])
        checks.append(Check("cublas.tf32", FAIL, "runs", tf32["error"],
                            diag.summary if diag else ""))
    elif tf32:
        fp32_err, tf32_err, boundary = tf32.get("fp32_error"), tf32.get("tf32_error"), tf32["boundary"]
        ok = fp32_err is not None and fp32_err < boundary
        checks.append(Check("cublas.fp32-exact", PASS if ok else FAIL, f"rel. error < {boundary:g}",
                            f"{fp32_err:.1e}", "" if ok else
                            "CUBLAS_COMPUTE_32F is not FP32-accurate (NVIDIA_TF32_OVERRIDE?)"))
        if tf32_err is not None:
            gemm = work.get("gemm", {})
            ratio = (gemm.get("tf32", {}).get("tflops", 0) / gemm["fp32"]["tflops"]
                     if gemm.get("fp32", {}).get("tflops") else 0)
            ok = tf32_err > boundary and ratio > 1.2
            checks.append(Check("cublas.tf32-in-effect", PASS if ok else FAIL,
                                "TF32 error signature and > 1.2x FP32 speed",
                                f"rel. error {tf32_err:.1e}, {ratio:.1f}x FP32",
                                "" if ok else "TF32 tensor-core math is not in effect"))
    for dtype, result in sorted(work.get("gemm", {}).items()):
        checks.append(_throughput_check(f"gemm.{dtype}", result, peak, dtype, scale,
                                        thresholds.gemm))
    if "conv" in work:
        checks.append(_throughput_check("cudnn.conv-fp16", work["conv"], peak, "fp16", scale,
                                        thresholds.conv))
    nccl = work.get("nccl")
    if nccl is not None:
        if "error" in nccl:
            diag = diagnose(nccl["error"])
            checks.append(Check("nccl.all-reduce", FAIL, "correct", nccl["error"],
                                f"{diag.summary}; fix: {diag.fix}" if diag else "",
                                scope=diag.scope if diag else IMAGE))
        else:
            bus = nccl.get("busbw_gbs")
            bandwidth = f"bus {bus:.0f} GB/s" if bus is not None else "no bandwidth with one GPU"
            checks.append(Check("nccl.all-reduce", PASS if nccl["correct"] else FAIL,
                                "correct sum", f"{'correct' if nccl['correct'] else 'WRONG'}, "
                                f"{nccl['gpus']} GPU(s), {bandwidth}"))
    return checks


def _throughput_check(name: str, result: dict[str, Any], peak: dict[str, Any] | None,
                      dtype: str, scale: float, threshold: float) -> Check:
    if "error" in result:
        diag = diagnose(result["error"])
        return Check(name, FAIL, "runs", result["error"],
                     f"{diag.summary}; fix: {diag.fix}" if diag else "",
                     scope=diag.scope if diag else IMAGE)
    tflops = result["tflops"]
    top = peak.get(dtype) if peak else None
    if not peak or not top:
        return Check(name, INFO, "no peak known for this GPU", f"{tflops:.1f} TFLOPS",
                     required=False)
    share = tflops / (top * scale)
    ok = share >= threshold
    return Check(name, PASS if ok else FAIL, f">= {threshold:.0%} of {top * scale:.0f} TFLOPS",
                 f"{tflops:.1f} TFLOPS ({share:.0%})",
                 "" if ok else f"{name} reaches only {share:.0%} of the {peak['name']} peak")


def evaluate(image: str, report: dict[str, Any], exp: Expectations, *, gpu: bool,
             thresholds: Thresholds = Thresholds()) -> Verdict:
    verdict = Verdict(image=image, facts=report)
    verdict.checks.append(Check("python3", PASS, "present", report["system"]["python"]))
    verdict.checks += library_checks(report, exp)
    verdict.checks += framework_checks(report, exp)
    verdict.checks += bare_name_checks(report, exp)
    verdict.checks += environment_checks(report, exp)
    if gpu:
        verdict.checks += gpu_checks(report, exp, thresholds)
        verdict.gpu_verified = not verdict.failed
    else:
        verdict.checks.append(Check("gpu", SKIP, "", "not run (--gpus none)",
                                    "the GPU was NOT verified", required=False))
    return verdict
