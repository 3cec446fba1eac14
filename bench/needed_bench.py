#!/usr/bin/env python3
"""A pipeline's python-layer job on a fresh runner when production holds everything built
on it unchanged: `imgkit build --only PYTHON --reuse-from PROD` and `imgkit publish PYTHON
--candidate --reuse-from PROD` as the jobs ran before `--needed-by`, against the same two
commands with `--needed-by` the final image (what `imgkit ci` writes now), side by side in
one run, rounds alternating which goes first.

Set-up (not timed): the starter's one-image matrix (tests/helpers/images.py's mini
project) in a namespace of its own, built, verified without a GPU and published to a
local registry on loopback as production. Before each timed job the namespace's images are
removed but its Debian base (with --without-base, the base too: a fresh runner's job makes
it), and BuildKit's cache is emptied (`docker buildx prune -af`, as on a fresh runner:
this empties it for every image on this engine).

Usage: python bench/needed_bench.py [--rounds 3] [--without-base]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from loopback import published_starter, run


def forget(ns: str, keep: str) -> None:
    """The namespace's images gone but its base, and BuildKit's cache emptied."""
    listed = subprocess.run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}"],
                            capture_output=True, text=True, check=True).stdout.split()
    doomed = [name for name in listed if ns in name and name != keep]
    if doomed:
        subprocess.run(["docker", "rmi", "-f", *doomed], check=True, capture_output=True)
    subprocess.run(["docker", "buildx", "prune", "-af"], check=True, capture_output=True)


def job(checkout: Path, config: Path, ns: str, production: str, staging: str,
        needed_by: tuple[str, ...], out: Path) -> float:
    python = f"{ns}/python:3.11-bookworm"
    start = time.monotonic()
    run(checkout, config, "build", "--namespace", ns, "--only", python, "--reuse-from",
        production, *needed_by)
    run(checkout, config, "publish", "--namespace", ns, python, "--candidate", "--to", staging,
        "--reuse-from", production, *needed_by, "--json", str(out))
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--without-base", action="store_true",
                        help="remove the Debian base too before each job")
    args = parser.parse_args()
    rounds, kept = args.rounds, "" if args.without_base else "debian:bookworm"
    ns = f"bench-needed-{uuid.uuid4().hex[:6]}"
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        try:
            with published_starter(work, ns) as prod:
                staging = f"{prod.registry.address}/staging"
                arms = {"before (--reuse-from alone)": (),
                        "after (--needed-by the final image)": ("--needed-by", prod.image)}
                times: dict[str, list[float]] = {name: [] for name in arms}
                for n in range(rounds):
                    order = list(arms) if n % 2 == 0 else list(reversed(arms))
                    for name in order:
                        forget(ns, f"{ns}/{kept}")
                        times[name].append(job(prod.checkout, prod.config, ns, prod.address,
                                               staging, arms[name], work / f"{n}.json"))
                        print(f"round {n + 1}: {name}: {times[name][-1]:.1f} s", flush=True)
        finally:
            forget(ns, "")
    before, after = (statistics.median(t) for t in times.values())
    print(f"\nthe python layer's job ({'base made' if args.without_base else 'base kept'}), "
          f"median of {rounds}: before {before:.1f} s, after "
          f"{after:.1f} s: {after / before:.2f}x")
    print("each round:", ", ".join(f"{a / b:.2f}x" for b, a in zip(*times.values())))


if __name__ == "__main__":
    main()
