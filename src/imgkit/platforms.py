"""Platforms as the OCI names them (linux/amd64, linux/arm64): the host's, the Debian and
machine names of each, and whether this host can run a foreign one (QEMU's binfmt handler)."""
from __future__ import annotations

import os
from pathlib import Path

# OCI platform -> (Debian architecture, `uname -m`, binfmt_misc handler of QEMU for it)
KNOWN = {"linux/amd64": ("amd64", "x86_64", "qemu-x86_64"),
         "linux/arm64": ("arm64", "aarch64", "qemu-aarch64")}
BINFMT = Path("/proc/sys/fs/binfmt_misc")
EMULATION_HINT = ("install QEMU's handlers: apt-get install qemu-user-static binfmt-support "
                  "(bash .ci/setup-host.sh does it), or build and verify on a machine of "
                  "that platform")


def of_machine(machine: str) -> str:
    """linux/arm64 for aarch64 (as `uname -m` says it); linux/<machine> when unknown."""
    machine = machine.lower()
    return next((p for p, (_, m, _) in KNOWN.items() if m == machine), f"linux/{machine}")


def host() -> str:
    # os.uname: what platform.machine() reads on Linux, without that module's import (a
    # few milliseconds of every verify)
    return of_machine(os.uname().machine)


def debian_arch(platform: str) -> str:
    return KNOWN[platform][0]


def machine(platform: str) -> str:
    """x86_64 for linux/amd64, aarch64 for linux/arm64: `uname -m` and wheel tags' name."""
    return KNOWN[platform][1]


def os_arch(platform: str) -> str:
    """linux/arm64 of linux/arm64/v8 (an image config's platform, variant dropped)."""
    return "/".join(platform.split("/")[:2])


def can_run(platform: str, binfmt: Path = BINFMT) -> bool:
    """Whether this host runs `platform`'s binaries: its own, or one with an enabled QEMU
    handler registered with the F flag (opened at registration, so containers see it)."""
    if platform == host():
        return True
    if platform not in KNOWN:
        return False
    try:
        entry = (binfmt / KNOWN[platform][2]).read_text()
    except OSError:
        return False
    flags = next((line.split(":", 1)[1].strip() for line in entry.splitlines()
                  if line.startswith("flags:")), "")
    return entry.startswith("enabled") and "F" in flags


def local_ref(ref: str, platform: str) -> str:
    """Where this engine keeps `ref`'s image of `platform`: the tag itself for the host's
    platform, `TAG-ARCH` for another (a classic image store holds one platform per tag),
    e.g. imgkit/debian:bookworm-arm64."""
    if platform == host():
        return ref
    repository, tag = ref.rsplit(":", 1)
    return f"{repository}:{tag}-{platform.split('/')[1]}"
