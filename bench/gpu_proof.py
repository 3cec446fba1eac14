#!/usr/bin/env python3
"""GPU proof, run directly on a GPU host (no Docker needed), all in one run:

1. the probe's whole report of this host, run as `imgkit verify` ships it (the zipped probe
   started by verify's BOOT), judged as verify judges it, and the time its GPU section
   takes (goal: under 20 s);
2. side by side, same sizes, same timing (the probe's own `time_ms`: CUDA events, warm-up
   until 200 ms of GPU time, median of 5 x 10 calls), probe and PyTorch rounds alternating:
   the probe's cuBLAS GEMMs against torch.matmul, its cuDNN convolution against
   torch.nn.functional.conv2d (goals: >= 95% of PyTorch's GEMM, >= 90% of its conv);
3. TF32 truth (PyTorch's and JAX's switches set both ways, matmul and convolution),
   CPU-fallback detection, and each framework's AMP training step, read through the probe's
   adapters and judged by `evaluate`.

Usage: PYTHONPATH=src python3 bench/gpu_proof.py [--size 8192] [--rounds 3] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch  # first: it loads the CUDA libraries (by soname) that the probe then opens

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from imgkit.probe import cuda, gpu  # noqa: E402
from tests.helpers.gpu_host import CPU_FALLBACKS, TF32_CASES, framework_facts, judge, probe_host  # noqa: E402

TORCH_DTYPE = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
               "bf16": torch.bfloat16}
CONV = dict(n=128, c=256, k=256, hw=28, rs=3)


class TorchClock:
    """The three calls `gpu.time_ms` makes of the CUDA runtime, through torch's events."""

    def event(self) -> torch.cuda.Event:
        return torch.cuda.Event(enable_timing=True)

    def record(self, ev: torch.cuda.Event, stream: Any = None) -> None:
        ev.record()

    def elapsed_ms(self, start: torch.cuda.Event, end: torch.cuda.Event) -> float:
        end.synchronize()
        return float(start.elapsed_time(end))


def torch_gemm_tflops(dtype: str, size: int) -> float:
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    a = torch.rand(size, size, device="cuda", dtype=TORCH_DTYPE[dtype]) * 2 - 1
    b = torch.rand(size, size, device="cuda", dtype=TORCH_DTYPE[dtype]) * 2 - 1
    ms = gpu.time_ms(TorchClock(), lambda: torch.matmul(a, b))
    return 2.0 * size ** 3 / (ms * 1e-3) / 1e12


def torch_conv_tflops() -> float:
    torch.backends.cudnn.benchmark = True
    n, c, k, hw, rs = CONV["n"], CONV["c"], CONV["k"], CONV["hw"], CONV["rs"]
    x = (torch.rand(n, c, hw, hw, device="cuda", dtype=torch.float16) * 2 - 1).to(
        memory_format=torch.channels_last)
    w = (torch.rand(k, c, rs, rs, device="cuda", dtype=torch.float16) * 2 - 1).to(
        memory_format=torch.channels_last)
    ms = gpu.time_ms(TorchClock(), lambda: torch.nn.functional.conv2d(x, w, padding=rs // 2),
                     iters=20)
    return 2.0 * n * k * hw * hw * c * rs * rs / (ms * 1e-3) / 1e12


def side_by_side(rounds: int, ours: Callable[[], float], theirs: Callable[[], float]) -> dict[str, Any]:
    """Alternate the two (ours first, then theirs first) and keep each side's median."""
    a: list[float] = []
    b: list[float] = []
    for i in range(rounds):
        if i % 2 == 0:
            a.append(ours())
            b.append(theirs())
        else:
            b.append(theirs())
            a.append(ours())
    probe, ref = statistics.median(a), statistics.median(b)
    return {"probe_tflops": probe, "torch_tflops": ref, "ratio": probe / ref,
            "probe_rounds": a, "torch_rounds": b}


def throughput(size: int, rounds: int) -> dict[str, Any]:
    rt = cuda.Runtime()
    blas = gpu.Blas(rt)
    out = {}
    try:
        for dtype in ("fp32", "tf32", "fp16", "bf16"):
            out[f"gemm {dtype}"] = side_by_side(
                rounds, lambda: gpu.gemm_throughput(rt, blas, dtype, size)["tflops"],
                lambda: torch_gemm_tflops(dtype, size))
    finally:
        blas.close()
    out["conv fp16"] = side_by_side(rounds, lambda: gpu.conv_throughput(rt, "fp16", **CONV)["tflops"],
                                    torch_conv_tflops)
    return out


def tf32_and_fallback(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each framework's switches set both ways: what the probe read against what is in
    effect, and whether the claim-free verdict (the framework's default) passed."""
    rows = []
    for framework, case, prelude, env, matmul, conv in TF32_CASES:
        facts = framework_facts(framework, prelude, **env)
        checks = judge({**report, "frameworks": {framework: facts}}, framework=framework)
        row: dict[str, Any] = {"framework": framework, "case": case}
        for op, mode in (("matmul", matmul), ("conv", conv)):
            check = checks.get(f"{framework}.fp32-{op}-mode")
            row[op] = {"in_effect": mode, "probe_reads": check.measured.split()[0] if check else None,
                       "error": facts.get(f"fp32_{op}_error"),
                       "default_verdict": check.verdict if check else None}
        rows.append(row)
    for framework, env in [("torch", {}), ("jax", {}), *CPU_FALLBACKS]:
        checks = judge({**report, "frameworks": {framework: framework_facts(framework, **env)}},
                       framework=framework)
        rows.append({"framework": framework, "case": f"fallback {env or 'none'}",
                     "gpu-count": checks[f"{framework}.gpu-count"].verdict,
                     "gpu-step": checks[f"{framework}.gpu-step"].verdict,
                     "diagnosis": checks[f"{framework}.gpu-count"].diagnosis})
    return rows


def amp_steps(report: dict[str, Any]) -> dict[str, Any]:
    """The AMP step of each framework as the probe reports it, with its judged checks."""
    out = {}
    for framework in ("torch", "jax"):
        facts = report["frameworks"].get(framework) or framework_facts(framework)
        checks = judge({**report, "frameworks": {framework: facts}}, framework=framework)
        out[framework] = {"amp": facts.get("amp"),
                          "checks": {k: (c.verdict, c.measured) for k, c in checks.items()
                                     if k.startswith(f"{framework}.amp-")}}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write every number here")
    args = parser.parse_args()

    started = time.monotonic()
    report = probe_host(gemm_size=args.size)
    probe_wall = time.monotonic() - started
    work = report["gpu"]["work"]
    nvml = report["gpu"]["nvml"]
    print(f"device: {[d['name'] for d in nvml['devices']]}, driver {nvml['driver']} "
          f"(CUDA {nvml['driver_cuda']}); torch {torch.__version__}")
    print(f"probe wall {probe_wall:.1f} s; its GPU section {work['seconds']} s")
    checks = judge(report)
    for name, check in checks.items():
        if name.startswith(("gpu.", "cublas.", "gemm.", "cudnn.conv", "nccl.", "torch.", "jax.")):
            print(f"  {check.verdict:<5} {name:<24} {check.measured}  [expected {check.expected}]")

    results = throughput(args.size, args.rounds)
    print(f"\n{'what':<12}{'probe TFLOPS':>14}{'torch TFLOPS':>14}{'ratio':>8}")
    for what, r in results.items():
        print(f"{what:<12}{r['probe_tflops']:>14.1f}{r['torch_tflops']:>14.1f}{r['ratio']:>8.3f}")

    rows = tf32_and_fallback(report)
    print()
    for row in rows:
        print("  " + ", ".join(f"{k}={v}" for k, v in row.items()))
    amp = amp_steps(report)
    print()
    for framework, found in amp.items():
        for name, (verdict, measured) in found["checks"].items():
            print(f"  {verdict:<5} {name:<16} {measured}")
    if args.json:
        args.json.write_text(json.dumps({"report": report, "probe_wall_s": probe_wall,
                                         "side_by_side": results, "switches": rows, "amp": amp},
                                        indent=1, default=str))


if __name__ == "__main__":
    main()
