"""The checks that need the GPU: devices seen alike by NVML and CUDA, each framework really
computing on them (no CPU fallback), TF32 as claimed, AMP steps, and GEMM and convolution
throughput as a share of the GPU's dense peak (verify/data/gpus.yaml, scaled to the SMs
visible). Pure logic over the probe's facts."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .. import yamlload
from ..options import Thresholds
from ..shipped import PACKAGE_DIR
from . import precision
from .diagnose import HOST, IMAGE, diagnose
from .expect import Expectations
from .facts import Framework, Report, Timing
from .verdict import FAIL, INFO, PASS, Check

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")
CONV_PRECISION = "fp16"          # the probe times cuDNN convolution in FP16


@dataclass(frozen=True)
class GpuModel:
    """One row of verify/data/gpus.yaml: a GPU model's dense peak TFLOPS per precision
    (None: it has no such rate) for its full chip of `sms` SMs."""
    name: str
    match: str                      # a case-insensitive regex on the NVML device name
    sms: int | None
    rates: tuple[tuple[str, float | None], ...]

    def rate(self, precision: str) -> float | None:
        return dict(self.rates).get(precision)


@lru_cache(maxsize=1)
def gpu_table() -> tuple[GpuModel, ...]:
    rows = yamlload.safe_load(PACKAGE_DIR.joinpath("verify/data/gpus.yaml").read_text())
    return tuple(GpuModel(str(row["name"]), str(row["match"]), row.get("sms"),
                          tuple((p, None if row.get(p) is None else float(row[p]))
                                for p in PRECISIONS))
                 for row in rows)


def peak_for(name: str) -> GpuModel | None:
    """The first model whose pattern matches the NVML device name `name`."""
    return next((row for row in gpu_table() if re.search(row.match, name, re.I)), None)


@dataclass(frozen=True)
class Peak:
    """A GPU's dense peak TFLOPS per precision, scaled to the SMs the probe's device has (a
    MIG slice has fewer); a precision the GPU has no rate for is left out."""
    name: str
    rates: tuple[tuple[str, float], ...]

    def rate(self, precision: str) -> float | None:
        return dict(self.rates).get(precision)

    def share(self, precision: str, tflops: float) -> float | None:
        top = self.rate(precision)
        return tflops / top if top else None


def peak_of(report: Report) -> Peak | None:
    """The peak of the first GPU the probe saw (verify/data/gpus.yaml), None when unknown."""
    names = [d.name for d in report.gpu.nvml.devices]
    row = peak_for(names[0]) if names else None
    if row is None:
        return None
    work = report.gpu.work
    device = work.devices[0] if work and work.devices else None
    scale = device.sm_count / row.sms if row.sms and device else 1.0
    return Peak(row.name, tuple((p, rate * scale) for p, rate in row.rates if rate))


def gemm_shares(report: Report) -> dict[str, float]:
    """Each GEMM precision the probe timed, as a share of its GPU's peak ({} when either is
    unknown): what the site shows and compares between builds."""
    work, peak = report.gpu.work, peak_of(report)
    if work is None or peak is None:
        return {}
    shares = {p: peak.share(p, t.tflops) for p, t in sorted(work.gemm.items()) if t.tflops}
    return {p: share for p, share in shares.items() if share is not None}


def gpu_checks(report: Report, exp: Expectations, thresholds: Thresholds) -> list[Check]:
    gpu = report.gpu
    count = gpu.device_count
    if count == 0:
        text = gpu.runtime_error.error if gpu.runtime_error else "no device"
        diag = diagnose(text)
        return [Check("gpu.visible", FAIL, ">= 1 GPU", f"0 ({text})",
                      diag.advice if diag else text,
                      scope=diag.scope if diag else HOST)]
    names = [d.name for d in gpu.nvml.devices]
    checks = [Check("gpu.visible", PASS, ">= 1 GPU",
                    f"{count}: {', '.join(names) or '?'}; driver {gpu.nvml.driver or '?'}")]
    checks += _device_count_checks(report, count)
    capability = _compute_capability(report)
    for name, fw in sorted(report.frameworks.items()):
        if fw.imported:
            checks += _framework_gpu_checks(name, fw, count, exp, thresholds, capability,
                                            report.system.env)
    work = gpu.work
    if work is None:
        return checks
    peak = peak_of(report)
    checks += _tf32_checks(report)
    for dtype, result in sorted(work.gemm.items()):
        checks.append(_throughput_check(f"gemm.{dtype}", result, peak, dtype, thresholds.gemm))
    if work.conv is not None:
        checks.append(_throughput_check(f"cudnn.conv-{CONV_PRECISION}", work.conv, peak,
                                        CONV_PRECISION, thresholds.conv))
    nccl = work.nccl
    if nccl is not None:
        if nccl.error:
            diag = diagnose(nccl.error)
            checks.append(Check("nccl.all-reduce", FAIL, "correct", nccl.error,
                                diag.advice if diag else "",
                                scope=diag.scope if diag else IMAGE))
        else:
            bus = nccl.busbw_gbs
            bandwidth = f"bus {bus:.0f} GB/s" if bus is not None else "no bandwidth with one GPU"
            checks.append(Check("nccl.all-reduce", PASS if nccl.correct else FAIL,
                                "correct sum", f"{'correct' if nccl.correct else 'WRONG'}, "
                                f"{nccl.gpus} GPU(s), {bandwidth}"))
    return checks


def _device_count_checks(report: Report, count: int) -> list[Check]:
    """NVML lists GPUs; under MIG, CUDA lists the MIG instances it was given instead."""
    nvml = report.gpu.nvml
    if not nvml.available:
        return []
    if any(d.mig for d in nvml.devices):
        instances = [d.mig_devices for d in nvml.devices if d.mig]
        known = None if None in instances else sum(i or 0 for i in instances)
        plain = sum(1 for d in nvml.devices if not d.mig)
        ok = known is None or count <= known + plain
        seen = f"{known} MIG instance(s)" if known is not None else "MIG instances NVML would not count"
        return [Check("gpu.nvml-agrees", INFO if ok else FAIL, "<= the GPUs and MIG instances NVML sees",
                      f"{count} (CUDA); {len(nvml.devices)} GPU(s) in NVML, {seen}",
                      "" if ok else "CUDA sees more devices than NVML has", required=not ok)]
    if len(nvml.devices) != count:
        return [Check("gpu.nvml-agrees", FAIL, f"{count} (CUDA)", f"{len(nvml.devices)} (NVML)",
                      "NVML and the CUDA runtime see different GPUs")]
    return []


def _framework_gpu_checks(name: str, fw: Framework, count: int, exp: Expectations,
                          thresholds: Thresholds, capability: tuple[int, int] | None,
                          env: dict[str, str | None]) -> list[Check]:
    seen = fw.gpu_count
    checks = [Check(f"{name}.gpu-count", PASS if seen == count else FAIL, str(count), str(seen),
                    "" if seen == count else
                    f"{name} sees {seen} GPUs: it would silently fall back to the CPU")]
    on_gpu = bool(fw.step_on_gpu)
    checks.append(Check(f"{name}.gpu-step", PASS if on_gpu else FAIL, "runs on the GPU",
                        str(fw.step_place or fw.error or "no step"),
                        "" if on_gpu else f"{name}'s matmul did not run on the GPU"))
    if on_gpu:
        checks += precision.tf32_checks(name, fw, exp, capability, env)
        checks += precision.amp_checks(name, fw, thresholds)
    return checks


def _compute_capability(report: Report) -> tuple[int, int] | None:
    devices = report.gpu.nvml.devices
    found = re.match(r"^(\d+)\.(\d+)", devices[0].compute_capability or "") if devices else None
    return (int(found.group(1)), int(found.group(2))) if found else None


def _tf32_checks(report: Report) -> list[Check]:
    work = report.gpu.work
    tf32 = work.tf32_check if work else None
    if tf32 is None:
        return []
    if tf32.error:
        diag = diagnose(tf32.error)
        return [Check("cublas.tf32", FAIL, "runs", tf32.error, diag.summary if diag else "")]
    fp32_err, tf32_err, boundary = tf32.fp32_error, tf32.tf32_error, tf32.boundary
    ok = fp32_err is not None and fp32_err < boundary
    checks = [Check("cublas.fp32-exact", PASS if ok else FAIL, f"rel. error < {boundary:g}",
                    f"{fp32_err:.1e}" if fp32_err is not None else "none", "" if ok else
                    "CUBLAS_COMPUTE_32F is not FP32-accurate (NVIDIA_TF32_OVERRIDE?)")]
    if tf32_err is not None and work is not None:
        fp32, fast = work.gemm.get("fp32"), work.gemm.get("tf32")
        ratio = (fast.tflops or 0) / fp32.tflops if fp32 and fp32.tflops and fast else 0.0
        ok = tf32_err > boundary and ratio > 1.2
        checks.append(Check("cublas.tf32-in-effect", PASS if ok else FAIL,
                            "TF32 error signature and > 1.2x FP32 speed",
                            f"rel. error {tf32_err:.1e}, {ratio:.1f}x FP32",
                            "" if ok else "TF32 tensor-core math is not in effect"))
    return checks


def _throughput_check(name: str, result: Timing, peak: Peak | None, dtype: str,
                      threshold: float) -> Check:
    if result.error or result.tflops is None:
        text = result.error or "no result"
        diag = diagnose(text)
        return Check(name, FAIL, "runs", text, diag.advice if diag else "",
                     scope=diag.scope if diag else IMAGE)
    tflops = result.tflops
    top = peak.rate(dtype) if peak else None
    if peak is None or not top:
        return Check(name, INFO, "no peak known for this GPU", f"{tflops:.1f} TFLOPS",
                     required=False)
    share = tflops / top
    ok = share >= threshold
    return Check(name, PASS if ok else FAIL, f">= {threshold:.0%} of {top:.0f} TFLOPS",
                 f"{tflops:.1f} TFLOPS ({share:.0%})",
                 "" if ok else f"{name} reaches only {share:.0%} of the {peak.name} peak")
