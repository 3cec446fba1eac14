#!/usr/bin/env python3
"""A GPU verify's wall time, on a GPU host (no Docker needed), side by side with a baseline.

Each tree's probe runs exactly as `imgkit verify` ships it into a container (its zipped
probe started by its own BOOT, with NVIDIA's CUDA wheels on the loader path the way an
image's LD_LIBRARY_PATH puts them), rounds alternating between the trees (A B, B A, ...).
Per tree: the median wall time, where the time went (the probe's `seconds`: its sections
and each framework adapter's phases, from the tree's report when it has them), and the
throughput numbers, so that a faster verify is seen to measure the same.

Usage (from the repository root, on the GPU host):
    PYTHONPATH=src python3 bench/gpu_verify_bench.py --tree new=src --tree base=OLD/src \
        [--rounds 3] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from imgkit.probe import channel  # noqa: E402
from tests.helpers.gpu_host import judge, loader_env  # noqa: E402

SHIP = ("import base64, sys\nfrom imgkit.verify.run import BOOT\nfrom imgkit.shipped import probe_zip\n"
        "sys.stdout.write(base64.b64encode(probe_zip()).decode() + '\\n' + BOOT)")


def shipped(src: str) -> tuple[str, str]:
    """The tree's probe zip (base64) and its BOOT, as its verify would send them."""
    out = subprocess.run([sys.executable, "-c", SHIP], env={**loader_env(), "PYTHONPATH": src},
                         capture_output=True, text=True, check=True).stdout
    zipped, boot = out.split("\n", 1)
    return zipped, boot


def run_once(zipped: str, boot: str) -> tuple[float, dict[str, Any]]:
    env = loader_env()
    env.update(IMGKIT_PROBE=zipped, PYTHONPATH="")
    token = channel.new_token()
    env[channel.MARK_ENV] = token
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", boot, "--gemm-size", "8192"], env=env,
                          capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"probe exit {proc.returncode}: {proc.stderr[-2000:]}")
    return wall, json.loads(channel.unframe(proc.stdout, token) or "null")


def numbers(report: dict[str, Any]) -> dict[str, float | None]:
    """The throughput figures and AMP step times a verify judges."""
    work = report.get("gpu", {}).get("work", {})
    got: dict[str, float | None] = {f"gemm.{k}": v.get("tflops")
                                    for k, v in work.get("gemm", {}).items()}
    got["conv.fp16"] = work.get("conv", {}).get("tflops")
    got["probe.gpu_section_s"] = work.get("seconds")
    for name, fw in report.get("frameworks", {}).items():
        for kind, amp in (fw.get("amp") or {}).items():
            got[f"{name}.amp-{kind}.ms"] = amp.get("ms")
            got[f"{name}.amp-{kind}.warmup_ms"] = amp.get("warmup_ms")
    return got


def phases(report: dict[str, Any]) -> dict[str, float]:
    flat = {f"probe.{k}": v for k, v in (report.get("seconds") or {}).items()}
    parts = report.get("gpu", {}).get("work", {}).get("parts_seconds") or {}
    flat.update({f"probe.gpu.{k}": v for k, v in parts.items()})
    for name, fw in report.get("frameworks", {}).items():
        flat.update({f"{name}.{k}": v for k, v in (fw.get("seconds") or {}).items()})
    return flat


def median_of(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
    return statistics.median(values) if values else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", action="append", required=True, metavar="NAME=SRC",
                        help="a source tree to run (the first is 'this'); two or more")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    ships = {name: shipped(src) for name, src in trees.items()}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    order = list(trees)
    for i in range(args.rounds):
        for name in (order if i % 2 == 0 else order[::-1]):
            wall, report = run_once(*ships[name])
            failed = sorted(n for n, c in judge(report).items()
                            if c.verdict == "fail")
            runs[name].append({"wall": wall, "phases": phases(report), "numbers": numbers(report),
                               "failed": failed})
            print(f"round {i + 1} {name}: {wall:.1f} s, failed: {failed or 'none'}",
                  flush=True)
    print("\nmedians", " | ".join(order))
    walls = {name: statistics.median(r["wall"] for r in runs[name]) for name in order}
    print("wall s", " | ".join(f"{walls[n]:.1f}" for n in order))
    first = order[0]
    for other in order[1:]:
        print(f"{first} / {other}: {walls[first] / walls[other]:.2f}")
    for part in ("phases", "numbers"):
        keys = sorted({k for name in order for r in runs[name] for k in r[part]})
        for key in keys:
            cells = [median_of([r[part] for r in runs[n]], key) for n in order]
            print(f"{part[:-1]} {key}: " + " | ".join("-" if c is None else f"{c:.3g}" for c in cells))
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
