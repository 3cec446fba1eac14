#!/usr/bin/env python3
"""Base benchmark (issue 59): the Debian base made by debootstrap (what `imgkit build` did)
and by mmdebstrap (what it does for Debian since 2026-11-28), side by side from the same
mirror, each made twice, alternating, and finished the same way (builder/base.py: the
host's files dropped, imgkit-normalise, the sorted, clamped tarball). Reports each tool's
seconds and whether its two tarballs are the same bytes: "keep the faster one that
reproduces". Both are dated by the mirror's InRelease files, read once before the rounds,
so both make the same day's base.

Needs root, debootstrap, mmdebstrap and the mirror.

Usage: python bench/base_bench.py [--release bookworm] [--mirror URL] [--rounds 2]
                                  [--platform linux/arm64]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from imgkit.builder.base import maker_command, mirror_epoch, normalise_root, tar_root
from imgkit.matrix import compat


def epoch_of(mirror: str, release: str) -> int:
    """The newest Date: of the release's and its -updates pocket's InRelease files."""
    dates = []
    for suite in (release, f"{release}-updates"):
        with urllib.request.urlopen(f"{mirror}/dists/{suite}/InRelease", timeout=30) as answer:
            head = answer.read(8192).decode("utf-8", "replace")
        dates += [line.split(":", 1)[1].strip() for line in head.splitlines()
                  if line.startswith("Date:")][:1]
    found = mirror_epoch(dates)
    assert found is not None, dates
    return found


def packages(root: Path) -> list[str]:
    done = subprocess.run(["dpkg-query", f"--admindir={root}/var/lib/dpkg", "-W",
                           "-f", "${Package} ${Version}\n"], capture_output=True, text=True, check=True)
    return sorted(done.stdout.splitlines())


def made(tool: str, os_release: compat.OsRelease, mirror: str, epoch: int,
         platform: str | None) -> tuple[float, str, list[str]]:
    """(seconds, sha256 of the finished tarball, its packages) of one base made by `tool`."""
    with tempfile.TemporaryDirectory(prefix=f"imgkit-bench-{tool}-") as tmp:
        root = Path(tmp) / "rootfs"
        command = maker_command(tool, os_release, root, mirror, platform)
        started = time.monotonic()
        subprocess.run(command, check=True, capture_output=True,
                       env={**os.environ, "SOURCE_DATE_EPOCH": str(epoch)})
        (root / "var/lib/apt/lists").mkdir(parents=True, exist_ok=True)
        normalise_root(root, epoch)
        tarball = Path(tmp) / "rootfs.tar"
        tar_root(root, tarball, epoch)
        seconds = time.monotonic() - started
        digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
        held = packages(root)
        shutil.rmtree(root)
    return seconds, digest, held


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--release", default="bookworm")
    parser.add_argument("--mirror", default="http://deb.debian.org/debian")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--platform", help="another platform's base, under QEMU (linux/arm64)")
    args = parser.parse_args()
    os_release = compat.load().os[args.release]
    epoch = epoch_of(args.mirror, args.release)
    tools = ("debootstrap", "mmdebstrap")
    results: dict[str, list[tuple[float, str, list[str]]]] = {tool: [] for tool in tools}
    for i in range(args.rounds):
        for k in range(len(tools)):                  # a different tool first each round
            tool = tools[(i + k) % len(tools)]
            results[tool].append(made(tool, os_release, args.mirror, epoch, args.platform))
            print(f"round {i + 1} {tool}: {results[tool][-1][0]:.1f} s "
                  f"{results[tool][-1][1][:16]}", flush=True)
    print(f"{args.release} from {args.mirror}, dated {epoch}, {args.rounds} rounds, alternating")
    for tool in tools:
        seconds = [s for s, _, _ in results[tool]]
        same = len({d for _, d, _ in results[tool]}) == 1
        print(f"{tool:<12} {min(seconds):.1f}-{max(seconds):.1f} s, "
              f"{'the same tarball every time' if same else 'DIFFERENT tarballs'}")
    fastest = {tool: min(s for s, _, _ in results[tool]) for tool in tools}
    print(f"mmdebstrap / debootstrap: {fastest['mmdebstrap'] / fastest['debootstrap']:.2f} "
          f"(fastest of each); the two tools' tarballs are "
          f"{'the same' if results['debootstrap'][0][1] == results['mmdebstrap'][0][1] else 'not the same'}")
    first, second = (set(results[tool][0][2]) for tool in tools)
    print(f"packages: debootstrap {len(first)}, mmdebstrap {len(second)}; only debootstrap's: "
          f"{sorted(first - second) or 'none'}; only mmdebstrap's: {sorted(second - first) or 'none'}")


if __name__ == "__main__":
    main()
