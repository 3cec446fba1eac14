#!/usr/bin/env python3
"""Verifier benchmark: `imgkit verify IMAGE --gpus none` against the floor it cannot go
below, `docker run --rm IMAGE python3 -c "import <framework>"` (a container plus the
framework's import), measured side by side in one run. Rounds rotate which goes first,
so drift hits all alike; each side's median is kept. Goal (issues 21 and 34, the latter
with five command tests): at most 1.2x.

With --baseline DIR (a checkout of another commit, e.g. `git worktree add /tmp/base HEAD~3`),
that commit's verify runs in the same rounds, with this Python, so a change is measured
against what it changes, not against another hour's noise.

With --checks FILE, verify runs the team's declared checks too (issue 34: five command
tests must keep verify within 1.2x of the same floor).

With --json, verify also writes its verdict file (`--json FILE`: what is installed, read in
the same run, included). Goals (issue 57): 1.05x plain, 1.10x with --json.

Usage: python bench/verify_bench.py [IMAGE] [--framework paddle] [--rounds 7] [--baseline DIR]
                                    [--checks FILE] [--json]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL = 1.05
GOAL_JSON = 1.10


def timed(cmd: list[str], ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None) -> float:
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-500:]}")
    return time.monotonic() - start


def paired(these: list[float], those: list[float]) -> float:
    """The median of each round's own ratio: the two ran side by side in that round, so a
    slow minute of the machine's slows both."""
    return statistics.median(a / b for a, b in zip(these, those))


def rounds(times: list[float]) -> str:
    return ", ".join(f"{t:.2f}" for t in times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("image", nargs="?", default="paddle:2.6.2-gpu-cuda11.8-cudnn8")
    parser.add_argument("--framework", default="paddle")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--baseline", type=Path, help="a checkout of another commit to run alongside")
    parser.add_argument("--checks", type=Path, help="a declared-checks file verify runs too")
    parser.add_argument("--json", action="store_true", help="verify writes its verdict file too")
    args = parser.parse_args()
    verify_args = ["verify", args.image, "--gpus", "none"]
    if args.checks is not None:
        verify_args += ["--checks", str(args.checks)]
    if args.json:
        verify_args += ["--json", str(Path(tempfile.mkdtemp()) / "verdict.json")]
    # (label, command, accepted exit codes, environment)
    sides: list[tuple[str, list[str], tuple[int, ...], dict[str, str] | None]] = [
        ("imgkit verify --gpus none", [str(Path(sys.executable).parent / "imgkit")] + verify_args,
         (0, 1), None),
        (f"docker run + import {args.framework}",
         ["docker", "run", "--rm", args.image, "python3", "-c", f"import {args.framework}"], (0,), None)]
    if args.baseline is not None:
        # its bytecode compiled as `make setup` compiles this tree's: with
        # PYTHONDONTWRITEBYTECODE set, a fresh worktree would compile on every run (~0.1 s)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(args.baseline / "src")], check=True)
        entry = "import sys; from imgkit.entry import main; sys.argv[0] = 'imgkit'; main()"
        sides.append((f"baseline {args.baseline.name}", [sys.executable, "-c", entry] + verify_args,
                      (0, 1), dict(os.environ, PYTHONPATH=str(args.baseline.resolve() / "src"))))
    for _, cmd, ok, env in sides:                   # warm the engine's caches for all
        timed(cmd, ok, env)
    times: list[list[float]] = [[] for _ in sides]
    for i in range(args.rounds):
        for k in range(len(sides)):                 # a different side first each round
            j = (i + k) % len(sides)
            _, cmd, ok, env = sides[j]
            times[j].append(timed(cmd, ok, env))
    medians = [statistics.median(t) for t in times]
    print(f"image {args.image}, {args.rounds} rounds, order rotating")
    for (label, *_), median, t in zip(sides, medians, times):
        print(f"{label:<30} median {median:.2f} s  (rounds: {rounds(t)})")
    print(f"ratio {medians[0] / medians[1]:.2f} (goal <= {GOAL_JSON if args.json else GOAL}); "
          f"median of each round's own ratio {paired(times[0], times[1]):.2f}")
    if args.baseline is not None:
        print(f"baseline ratio {medians[2] / medians[1]:.2f} (each round's: "
              f"{paired(times[2], times[1]):.2f}); this tree / baseline "
              f"{medians[0] / medians[2]:.2f} (each round's: {paired(times[0], times[2]):.2f})")


if __name__ == "__main__":
    main()
