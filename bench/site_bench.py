#!/usr/bin/env python3
"""Site benchmark: `imgkit site` for a matrix of N images (default 500, issue 35's scale),
each with a verdict file made by verify's own JSON writer from the synthetic report of
tests/test_evaluate.py. Times reading the verdicts, laying out the grid and writing the
pages, each round in a fresh folder; prints the median and the grid page's size.
Goal: under 5 s, and the grid page under 1 MB.

Usage: python bench/site_bench.py [--images 500] [--rounds 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from imgkit.site.grid import rows  # noqa: E402
from imgkit.site.inputs import read_verdicts  # noqa: E402
from imgkit.site.pages import write_site  # noqa: E402
from tests.helpers.reports import GOOD, run  # noqa: E402
from tests.helpers.site import plan_of, slow, write_verdict  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    plan = plan_of(args.images)
    times, size = [], 0
    with tempfile.TemporaryDirectory(prefix="imgkit-site-bench-") as scratch:
        verdicts = Path(scratch) / "verdicts"
        verdicts.mkdir()
        for i, target in enumerate(plan.targets):
            write_verdict(verdicts, f"v{i}", target.tag, run(GOOD if i % 7 else slow()))
        for i in range(args.rounds):
            out = Path(scratch) / f"site-{i}"
            start = time.monotonic()
            found, skipped = read_verdicts(verdicts)
            write_site(out, rows(plan, found), verdicts=len(found), skipped=skipped)
            times.append(time.monotonic() - start)
            size = (out / "index.html").stat().st_size
    print(f"{args.images} images, {args.rounds} rounds: median {statistics.median(times):.2f} s "
          f"(rounds: {', '.join(f'{t:.2f}' for t in times)}); grid page {size / 1024:.0f} KiB "
          f"(goal: under 5 s and 1024 KiB)")


if __name__ == "__main__":
    main()
