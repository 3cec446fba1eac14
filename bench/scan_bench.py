#!/usr/bin/env python3
"""Scan benchmark: `imgkit scan IMAGE` against what a team would script without imgkit,
`docker save IMAGE -o image.tar` then the scanner (osv-scanner, or trivy with --scanner
trivy) on that archive with the same flags and database, measured side by side in one
run. Rounds rotate which goes first, so drift hits both alike; each side's median is kept.
Goal (issue 55): at most 1.1x. The scanner's own time on the saved archive is reported too
(the part no scan can avoid).

The advisory database defaults to the tests' records (tests/data/advisories, written as
osv.dev's zips or trivy's database); pass --db for a full one.

Usage: python bench/scan_bench.py [IMAGE] [--rounds 3] [--db DIR] [--scanner osv-scanner|trivy]
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


def commands(scanner_name: str, scanner: str, archive: Path, db: Path,
             work: str) -> tuple[list[str], list[str]]:
    """The scanner's own run on the saved archive, as a team would script it, with the flags
    and database imgkit gives it: after `docker save` (by hand), and alone."""
    if scanner_name == "trivy":
        own = [scanner, "image", "--input", str(archive), "--cache-dir", str(db), "--cache-backend",
               "memory", "--skip-db-update", "--skip-java-db-update", "--skip-version-check",
               "--disable-telemetry", "--offline-scan", "--scanners", "vuln", "--list-all-pkgs",
               "--format", "json", "--quiet", "--output"]
    else:
        own = [scanner, "scan", "image", "--archive", str(archive), "--offline",
               "--offline-vulnerabilities", "--format", "json", "--output-file"]
    by_hand = ["sh", "-c", f'docker save "$0" -o {archive} && exec "$@"', "IMAGE",
               *own, f"{work}/own.json"]
    return by_hand, [*own, f"{work}/alone.json"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("image", nargs="?", default="paddle:2.6.2-gpu-cuda11.8-cudnn8")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--db", type=Path)
    parser.add_argument("--scanner", choices=("osv-scanner", "trivy"), default="osv-scanner")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT))
    from imgkit.scan.scanners import scanner_named
    name = args.scanner
    scanner = str(scanner_named(name).find())
    with tempfile.TemporaryDirectory(prefix="scan-bench-") as work:
        db = args.db
        if db is None:
            from tests.helpers.scanner import advisory_database, trivy_database
            db = (trivy_database if name == "trivy" else advisory_database)(Path(work) / "db")
        env = {**os.environ, "IMGKIT_OSV_SCANNER" if name == "osv-scanner" else "IMGKIT_TRIVY": scanner,
               "OSV_SCANNER_LOCAL_DB_CACHE_DIRECTORY": str(db)}
        by_hand, scanner_only = commands(name, scanner, Path(work) / "image.tar", db, work)
        by_hand[by_hand.index("IMAGE")] = args.image
        imgkit = [sys.executable, "-m", "imgkit", "scan", args.image, "--db", str(db),
                  "--scanner", name, "--fail-on", "critical"]
        hand, alone = f"docker save + {name}", f"{name} alone"
        times: dict[str, list[float]] = {"imgkit scan": [], hand: [], alone: []}
        for n in range(args.rounds):
            order = [("imgkit scan", imgkit), (hand, by_hand)]
            for label, cmd in order if n % 2 == 0 else reversed(order):
                times[label].append(timed(cmd, env))
            times[alone].append(timed(scanner_only, env))
    medians = {label: statistics.median(t) for label, t in times.items()}
    for label, t in times.items():
        print(f"{label:28} median {medians[label]:6.2f} s  ({', '.join(f'{x:.2f}' for x in t)})")
    ratio = medians["imgkit scan"] / medians[hand]
    print(f"imgkit scan / ({hand}) = {ratio:.3f}x (goal <= {GOAL}x)"
          f"{'' if ratio <= GOAL else '  OVER'}")


if __name__ == "__main__":
    main()
