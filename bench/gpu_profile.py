#!/usr/bin/env python3
"""Where a framework adapter's GPU time goes, and what an environment setting changes, on a
GPU host (no Docker needed).

Each present framework's adapter (the code a GPU verify runs in its own interpreter) runs
alone, start to end, once per variant and round, variants rotating. A variant is a name and
environment settings (for example XLA's flags). Per adapter and variant it prints the median
of each phase mark (seconds since the adapter's start), its AMP step times and warm-ups, and
the FP32 matmul and convolution errors that TF32 is judged by, so that a setting that saves
time is seen to change, or not change, what the verify measures.

Usage (from the repository root, on the GPU host):
    PYTHONPATH=src python3 bench/gpu_profile.py [--rounds 2] [--only jax] \
        [--variant 'lvl1=XLA_FLAGS=--xla_gpu_autotune_level=1'] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any
from unittest.mock import patch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
from imgkit.probe import frameworks, turns  # noqa: E402


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    """NAME=KEY=VALUE[,KEY=VALUE...]; a bare NAME is the environment as it is."""
    name, _, settings = text.partition("=")
    env = dict(pair.split("=", 1) for pair in settings.split(",") if pair) if settings else {}
    return name, env


def run_adapter(name: str, env: dict[str, str]) -> dict[str, Any]:
    with patch.dict(os.environ, env):     # the adapter's interpreter inherits it
        started = time.perf_counter()
        result = turns.run(name, True)
    result["wall_s"] = time.perf_counter() - started
    return result


def flatten(result: dict[str, Any]) -> dict[str, float]:
    flat = {f"mark.{k}": v for k, v in (result.get("seconds") or {}).items()}
    flat["wall_s"] = result.get("wall_s", 0.0)
    for kind, amp in (result.get("amp") or {}).items():
        for key in ("ms", "warmup_ms"):
            if isinstance(amp.get(key), (int, float)):
                flat[f"amp.{kind}.{key}"] = amp[key]
    for key in ("fp32_matmul_error", "fp32_conv_error"):
        if isinstance(result.get(key), (int, float)):
            flat[key] = result[key]
    return flat


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", action="append", help="an adapter to run (default: all present)")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=KEY=VALUE,...")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    variants: list[tuple[str, dict[str, str]]] = [("as-is", {})]
    variants += [parse_variant(v) for v in args.variant]
    names = args.only or frameworks.present()
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {n: {v: [] for v, _ in variants}
                                                         for n in names}
    for i in range(args.rounds):
        order = variants if i % 2 == 0 else variants[::-1]
        for name in names:
            for vname, env in order:
                result = run_adapter(name, env)
                rows[name][vname].append(result)
                print(f"round {i + 1} {name} {vname}: {result['wall_s']:.1f} s"
                      f"{' error: ' + result['error'] if result.get('error') else ''}", flush=True)
    for name in names:
        print(f"\n{name}: medians, " + " | ".join(v for v, _ in variants))
        flats = {v: [flatten(r) for r in rows[name][v]] for v, _ in variants}
        keys = sorted({k for v in flats for f in flats[v] for k in f},
                      key=lambda k: (not k.startswith("mark."), k))
        for key in keys:
            cells = []
            for v, _ in variants:
                values = [f[key] for f in flats[v] if key in f]
                cells.append(f"{statistics.median(values):.4g}" if values else "-")
            print(f"  {key}: " + " | ".join(cells))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
