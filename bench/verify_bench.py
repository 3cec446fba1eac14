#!/usr/bin/env python3
"""Verifier benchmark: `imgkit verify IMAGE --gpus none` against the floor it cannot go
below, `docker run --rm IMAGE python3 -c "import <framework>"` (a container plus the
framework's import), measured side by side in one run. Rounds alternate which goes first,
so drift hits both alike; each side's median is kept. Goal (issue 8): at most 1.3x.

Usage: python bench/verify_bench.py [IMAGE] [--framework paddle] [--rounds 7]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(cmd: list[str], ok: tuple[int, ...] = (0,)) -> float:
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-500:]}")
    return time.monotonic() - start


def rounds(times: list[float]) -> str:
    return ", ".join(f"{t:.2f}" for t in times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("image", nargs="?", default="paddle:2.6.2-gpu-cuda11.8-cudnn8")
    parser.add_argument("--framework", default="paddle")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    imgkit = [str(Path(sys.executable).parent / "imgkit")]
    ours = imgkit + ["verify", args.image, "--gpus", "none"]
    floor = ["docker", "run", "--rm", args.image, "python3", "-c", f"import {args.framework}"]
    timed(ours, ok=(0, 1))  # warm the engine's caches for both
    timed(floor)
    a: list[float] = []
    b: list[float] = []
    for i in range(args.rounds):
        if i % 2 == 0:
            a.append(timed(ours, ok=(0, 1)))
            b.append(timed(floor))
        else:
            b.append(timed(floor))
            a.append(timed(ours, ok=(0, 1)))
    verify_s, floor_s = statistics.median(a), statistics.median(b)
    print(f"image {args.image}, {args.rounds} rounds alternating")
    print(f"imgkit verify --gpus none   median {verify_s:.2f} s  (rounds: {rounds(a)})")
    print(f"docker run + import {args.framework:<7} median {floor_s:.2f} s  (rounds: {rounds(b)})")
    print(f"ratio {verify_s / floor_s:.2f} (goal <= 1.3)")


if __name__ == "__main__":
    main()
