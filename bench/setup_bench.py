#!/usr/bin/env python3
"""Set-up benchmark: what `make build` installs on a fresh Debian 12 host (the engine and
debootstrap, imgkit in a venv) against what `make test` adds (QEMU, a registry, skopeo,
rsync, Node and gitlab-ci-local; imgkit's test tools in the venv), each timed in a fresh
container of the same Debian image, side by side in one run, rounds alternating which goes
first. cosign (fetched from Debian 13 by .ci/trixie-debs.sh) is left out of both: it only
makes the test side slower.

Usage: python bench/setup_bench.py [--image imgkit/debian:bookworm] [--rounds 1]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD_APT = "docker.io debootstrap"
TEST_APT = "docker-registry skopeo rsync nodejs npm qemu-user-static binfmt-support"
APT = ("apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "
       "--no-install-recommends python3-venv {packages} >/dev/null")
VENV = ("python3 -m venv /v && /v/bin/pip install -q --upgrade pip && "
        "/v/bin/pip install -q -e '/src{extras}'")
NPM = "npm install --global --no-audit --no-fund --loglevel=error gitlab-ci-local@4.60.1 >/dev/null"
SIDES = {
    "make build's set-up": " && ".join((APT.format(packages=BUILD_APT), VENV.format(extras=""))),
    "make test's set-up": " && ".join((APT.format(packages=f"{BUILD_APT} {TEST_APT}"),
                                       VENV.format(extras="[test]"), NPM)),
}


def timed(image: str, script: str) -> float:
    started = time.monotonic()
    done = subprocess.run(["docker", "run", "--rm", "-u", "0", "-v", f"{ROOT}:/src:ro",
                           "--tmpfs", "/tmp", "--entrypoint", "/bin/sh", image, "-ec",
                           # an editable install writes its egg-info: into a copy
                           "mkdir /tmp/src && tar -C /src --exclude=./.venv --exclude=./.git "
                           "-cf - . | tar -C /tmp/src -xf - && " + script.replace("/src", "/tmp/src")],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"failed: {script}\n{done.stderr[-2000:]}")
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--image", default="imgkit/debian:bookworm")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    seconds: dict[str, list[float]] = {side: [] for side in SIDES}
    for round_ in range(args.rounds):
        order = list(SIDES) if round_ % 2 == 0 else list(reversed(SIDES))
        for side in order:
            seconds[side].append(timed(args.image, SIDES[side]))
            print(f"round {round_ + 1}: {side}: {seconds[side][-1]:.0f} s", flush=True)
    build, test = (statistics.median(seconds[side]) for side in SIDES)
    print(f"\nmake build's set-up {build:.0f} s, make test's {test:.0f} s: "
          f"the main job now waits {build / test:.2f}x what it waited when it installed both")


if __name__ == "__main__":
    main()
