#!/usr/bin/env python3
"""Scan benchmark: `imgkit scan IMAGE` against what a team would script without imgkit,
`docker save IMAGE -o image.tar` then osv-scanner on that archive with the same flags and
database, measured side by side in one run. Rounds rotate which goes first, so drift hits
both alike; each side's median is kept. Goal (issue 55): at most 1.1x. The scanner's own
time on the saved archive is reported too (the part no scan can avoid).

The advisory database defaults to the tests' records (tests/data/advisories, written as
osv.dev's zips); pass --db for a full one.

Usage: python bench/scan_bench.py [IMAGE] [--rounds 3] [--db DIR]
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
GOAL = 1.1


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.monotonic()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    if done.returncode not in (0, 1):             # 1: findings (osv-scanner) or a failing gate
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr[-500:]}")
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("image", nargs="?", default="paddle:2.6.2-gpu-cuda11.8-cudnn8")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--db", type=Path)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT))
    from imgkit.scan.scanner import find_scanner
    scanner = str(find_scanner())
    with tempfile.TemporaryDirectory(prefix="scan-bench-") as work:
        db = args.db
        if db is None:
            from tests.helpers.scanner import advisory_database
            db = advisory_database(Path(work) / "db")
        env = {**os.environ, "IMGKIT_OSV_SCANNER": scanner, "OSV_SCANNER_LOCAL_DB_CACHE_DIRECTORY": str(db)}
        archive = Path(work) / "image.tar"
        by_hand = ["sh", "-c", f'docker save "$0" -o {archive} && "$1" scan image --archive {archive} '
                   f'--offline --offline-vulnerabilities --format json --output-file {work}/osv.json',
                   args.image, scanner]
        scanner_only = [scanner, "scan", "image", "--archive", str(archive), "--offline",
                        "--offline-vulnerabilities", "--format", "json", "--output-file", f"{work}/o2.json"]
        imgkit = [sys.executable, "-m", "imgkit", "scan", args.image, "--db", str(db),
                  "--fail-on", "critical"]
        times: dict[str, list[float]] = {"imgkit scan": [], "docker save + osv-scanner": [],
                                         "osv-scanner alone": []}
        for n in range(args.rounds):
            order = [("imgkit scan", imgkit), ("docker save + osv-scanner", by_hand)]
            for name, cmd in order if n % 2 == 0 else reversed(order):
                times[name].append(timed(cmd, env))
            times["osv-scanner alone"].append(timed(scanner_only, env))
    medians = {name: statistics.median(t) for name, t in times.items()}
    for name, t in times.items():
        print(f"{name:28} median {medians[name]:6.2f} s  ({', '.join(f'{x:.2f}' for x in t)})")
    ratio = medians["imgkit scan"] / medians["docker save + osv-scanner"]
    print(f"imgkit scan / (docker save + osv-scanner) = {ratio:.3f}x (goal <= {GOAL}x)"
          f"{'' if ratio <= GOAL else '  OVER'}")


if __name__ == "__main__":
    main()
