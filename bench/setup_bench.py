#!/usr/bin/env python3
"""Set-up benchmark: what `make build` installs on a fresh Debian 12 host (an engine, CLI and
buildx unpacked by .ci/unpack-engine.sh as .ci/setup-host.sh does, Debian 12's runc, iptables and
debootstrap; imgkit in a venv) against what `make test` adds (QEMU, a registry, skopeo,
rsync, Node and a compiler; imgkit's test tools in the venv), each timed in a fresh container
of the same Debian image, side by side in one run, rounds alternating which goes first. Left
out of the test side, so the figure understates what make build no longer waits for:
cosign (fetched from Debian 13 by .ci/debian-debs.sh) and gitlab-ci-local's npm install
(it compiles a native module; in a bare container its pinned release's dependencies no
longer build with Debian 12's Node 18).

Usage: python bench/setup_bench.py [--image imgkit/debian:bookworm] [--rounds 1]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD_APT = "runc iptables debootstrap"
# what .ci/setup-host.sh does on Debian 12 (everything but starting the engine)
ENGINE = "bash /src/.ci/unpack-engine.sh /opt/imgkit-engine >/dev/null"
TEST_APT = "docker-registry skopeo rsync nodejs npm g++ make qemu-user-static binfmt-support"
APT = ("apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "
       "--no-install-recommends python3-venv {packages} >/dev/null")
VENV = ("python3 -m venv /v && /v/bin/pip install -q --upgrade pip && "
        "/v/bin/pip install -q -e '/src{extras}'")
SIDES = {
    "make build's set-up": " && ".join((APT.format(packages=BUILD_APT), ENGINE,
                                        VENV.format(extras=""))),
    "make test's set-up": " && ".join((APT.format(packages=f"{BUILD_APT} {TEST_APT}"), ENGINE,
                                       VENV.format(extras="[test]"))),
}


def host_settings(ca_bundle: str) -> list[str]:
    """docker run options that give the container this host's CA bundle (a TLS-inspecting
    proxy's root included) and its pip settings, the same to both sides."""
    options = ["-v", f"{ca_bundle}:/etc/ssl/certs/host-ca.pem:ro",
               "-e", "PIP_CERT=/etc/ssl/certs/host-ca.pem",
               "-e", "NODE_EXTRA_CA_CERTS=/etc/ssl/certs/host-ca.pem"]
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS"):
        if os.environ.get(name):
            options += ["-e", f"{name}={os.environ[name]}"]
    for folder in ("/opt/wheels", "/opt/pypi", "/opt/pypi-more"):   # local indexes, if any
        if Path(folder).is_dir():
            options += ["-v", f"{folder}:{folder}:ro"]
    return options


def timed(image: str, script: str, settings: list[str]) -> float:
    started = time.monotonic()
    done = subprocess.run(["docker", "run", "--rm", "-u", "0", "-v", f"{ROOT}:/src:ro",
                           *settings, "--tmpfs", "/tmp", "--entrypoint", "/bin/sh", image, "-ec",
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
    parser.add_argument("--ca-bundle", default="/etc/ssl/certs/ca-certificates.crt")
    args = parser.parse_args()
    settings = host_settings(args.ca_bundle)
    seconds: dict[str, list[float]] = {side: [] for side in SIDES}
    for round_ in range(args.rounds):
        order = list(SIDES) if round_ % 2 == 0 else list(reversed(SIDES))
        for side in order:
            seconds[side].append(timed(args.image, SIDES[side], settings))
            print(f"round {round_ + 1}: {side}: {seconds[side][-1]:.0f} s", flush=True)
    build, test = (statistics.median(seconds[side]) for side in SIDES)
    print(f"\nmake build's set-up {build:.0f} s, make test's {test:.0f} s: "
          f"the main job now waits {build / test:.2f}x what it waited when it installed both")


if __name__ == "__main__":
    main()
