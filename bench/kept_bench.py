#!/usr/bin/env python3
"""A pipeline's verify job of an image production holds unchanged, on a fresh runner:
`imgkit attest PROD@DIGEST --signing-key K` (it pulls the image, runs the probe and attaches
a new verdict: what every verify job did before --max-age) against the same command with
`--max-age 7d --trusted-key K.pub` (it keeps the signed verdict the digest carries), side by
side in one run, rounds alternating which goes first. `--gpus none` on this machine: on a
GPU runner the judged arm also pays the GPU checks, and the kept arm does not.

Set-up (not timed): the starter's one-image matrix (tests/helpers/images.py's mini project)
in a namespace of its own, built, published to a local registry on loopback as production
and attested there once with a cosign key made for the run. Before each timed job the
namespace's images are removed (a fresh runner has not pulled the image; the Debian base
the tests share stays, so its layer is not pulled again).

Usage: python bench/kept_bench.py [--rounds 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from loopback import Production, published_starter, run

PASSWORD = "bench"


def forget(ns: str) -> None:
    """The namespace's images gone, the ones pulled by digest included; its base (the
    shared Debian base, tagged again) stays."""
    listed = [line.split() for line in subprocess.run(
        ["docker", "images", "--format", "{{.ID}} {{.Repository}}"],
        capture_output=True, text=True, check=True).stdout.splitlines()]
    base = {image for image, name in listed if name.endswith("/debian")}
    doomed = sorted({image for image, name in listed if ns in name} - base)
    if doomed:
        subprocess.run(["docker", "rmi", "-f", *doomed], check=True, capture_output=True)


def timed_arms(prod: Production, rounds: int, ns: str) -> dict[str, list[float]]:
    """The published image attested once with a key made here; then each arm's time per
    round, on a fresh runner each time."""
    subprocess.run(["cosign", "generate-key-pair"], cwd=prod.checkout, check=True,
                   capture_output=True)
    attest = ("attest", prod.reference, "--gpus", "none", "--signing-key", "cosign.key")
    run(prod.checkout, prod.config, *attest)
    arms = {"judged (attest)": attest,
            "kept (attest --max-age 7d)": (*attest, "--max-age", "7d", "--trusted-key", "cosign.pub")}
    times: dict[str, list[float]] = {name: [] for name in arms}
    for n in range(rounds):
        for name in (list(arms) if n % 2 == 0 else list(reversed(arms))):
            forget(ns)
            start = time.monotonic()
            said = run(prod.checkout, prod.config, *arms[name])
            times[name].append(time.monotonic() - start)
            if ("kept the signed verdict" in said) != name.startswith("kept"):
                raise SystemExit(f"{name} did not do what it says:\n{said}")
            print(f"round {n + 1}: {name}: {times[name][-1]:.1f} s", flush=True)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    ns = f"bench-kept-{uuid.uuid4().hex[:6]}"
    os.environ["COSIGN_PASSWORD"] = PASSWORD            # the key's, for cosign and attest
    with tempfile.TemporaryDirectory() as folder:
        try:
            with published_starter(Path(folder), ns) as prod:
                times = timed_arms(prod, rounds, ns)
        finally:
            forget(ns)
            subprocess.run(["docker", "rmi", f"{ns}/debian:bookworm"], capture_output=True)
    judged, kept = (statistics.median(t) for t in times.values())
    print(f"\na verify job of an image production holds, median of {rounds}: judged "
          f"{judged:.1f} s, kept {kept:.1f} s: {kept / judged:.2f}x")
    print("each round:", ", ".join(f"{k / j:.2f}x" for j, k in zip(*times.values())))


if __name__ == "__main__":
    main()
