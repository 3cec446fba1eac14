#!/usr/bin/env python3
"""GPU proof, run directly on a GPU host (no Docker needed): the probe's cuBLAS GEMMs and
cuDNN convolution against torch.matmul / torch.nn.functional.conv2d on the same sizes,
side by side in one run, plus the time the probe's whole GPU section takes.

Goal (issue 3): probe >= 95% of PyTorch's GEMM and >= 90% of its conv; GPU section < 20 s.
Usage: PYTHONPATH=src python3 bench/gpu_proof.py [--size 8192]
"""
from __future__ import annotations

import argparse
import json
import time

import torch  # imported first: it loads the CUDA libraries the probe then finds by soname

from imgkit.probe import cuda, gpu


def torch_gemm(dtype: str, size: int) -> float:
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    kind = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
            "bf16": torch.bfloat16}[dtype]
    a = torch.rand(size, size, device="cuda", dtype=kind) * 2 - 1
    b = torch.rand(size, size, device="cuda", dtype=kind) * 2 - 1
    return _time(lambda: a @ b, 2.0 * size ** 3)


def torch_conv() -> float:
    torch.backends.cudnn.benchmark = True
    x = torch.rand(128, 256, 28, 28, device="cuda", dtype=torch.float16).to(
        memory_format=torch.channels_last)
    w = torch.rand(256, 256, 3, 3, device="cuda", dtype=torch.float16).to(
        memory_format=torch.channels_last)
    return _time(lambda: torch.nn.functional.conv2d(x, w, padding=1),
                 2.0 * 128 * 256 * 28 * 28 * 256 * 9)


def _time(fn, flops: float) -> float:  # type: ignore[no-untyped-def]
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(5):
        start.record()
        for _ in range(10):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 10)
    samples.sort()
    return flops / (samples[2] * 1e-3) / 1e12


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=8192)
    args = parser.parse_args()
    rt = cuda.Runtime()
    start = time.monotonic()
    probe = gpu.run_all(rt, gemm_size=args.size)
    probe_seconds = time.monotonic() - start
    print(json.dumps(probe, indent=1, default=str))
    print(f"device: {torch.cuda.get_device_name(0)}; probe GPU section {probe_seconds:.1f} s")
    print(f"{'what':<12}{'probe TFLOPS':>14}{'torch TFLOPS':>14}{'ratio':>8}")
    for dtype, result in probe["gemm"].items():
        theirs = torch_gemm(dtype, args.size)
        ours = result.get("tflops", 0.0)
        print(f"gemm {dtype:<7}{ours:>14.1f}{theirs:>14.1f}{ours / theirs:>8.2f}")
    theirs = torch_conv()
    ours = probe.get("conv", {}).get("tflops", 0.0)
    print(f"{'conv fp16':<12}{ours:>14.1f}{theirs:>14.1f}{ours / theirs:>8.2f}")


if __name__ == "__main__":
    main()
