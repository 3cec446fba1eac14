"""Resolve one image's pip step with pip's own resolver, for the image's python and platform
rather than the host's: `pip install --dry-run --report` with `--python-version`, the
manylinux tags its glibc takes and `--only-binary :all:` (imgkit's images install wheels
only), the parents' locked pins as constraints. pip reads wheel metadata by HTTP range
requests (`fast-deps`), so a 900 MB framework wheel is not downloaded to be locked.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence
from urllib.parse import urlsplit

from .. import platforms
from ..errors import HostError, UsageError
from .files import Pinned

# what pip prints when the index cannot be reached (exit 3), unlike a requirement that
# cannot be met (exit 2)
UNREACHABLE = ("NewConnectionError", "Max retries exceeded", "Temporary failure in name "
               "resolution", "Connection refused", "Network is unreachable", "SSLError")


def wheel_platforms(platform: str, glibc: str) -> list[str]:
    """Every manylinux tag a system with `glibc` accepts, newest first (pip's --platform
    takes exactly the tags it is given, not what they imply)."""
    arch = platforms.machine(platform)
    minor = int(glibc.split(".")[1])
    tags = [f"manylinux_2_{m}_{arch}" for m in range(minor, 16, -1)]
    return tags + [f"manylinux2014_{arch}"] + (
        [f"manylinux2010_{arch}", f"manylinux1_{arch}"] if arch == "x86_64" else [])


def pip_command(wanted: Sequence[str], constraints: Path, report: Path, python: str,
                platform: str, glibc: str, target: Path, index_url: str | None,
                extra_index_url: str | None = None) -> list[str]:
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
               "--ignore-installed", "--only-binary=:all:", "--use-feature=fast-deps",
               "--disable-pip-version-check", "--no-input", "--report", str(report),
               "--target", str(target), "--python-version", python, "--implementation", "cp",
               "--abi", f"cp{python.replace('.', '')}", "--constraint", str(constraints)]
    for tag in wheel_platforms(platform, glibc):
        command += ["--platform", tag]
    if index_url:
        command += ["--index-url", index_url, *trusted_host(index_url)]
    if extra_index_url:
        command += ["--extra-index-url", extra_index_url, *trusted_host(extra_index_url)]
    return [*command, *wanted]


def trusted_host(index_url: str) -> list[str]:
    """An index named over plain HTTP is one the user chose: pip would ignore it unless its
    host is trusted (the lock's hashes still check every file)."""
    parts = urlsplit(index_url)
    if parts.scheme != "http" or not parts.hostname:
        return []
    return ["--trusted-host", parts.hostname + (f":{parts.port}" if parts.port else "")]


def resolve(wanted: Sequence[str], below: Sequence[Pinned], *, python: str, platform: str,
            glibc: str, index_url: str | None = None, what: str = "",
            extra_index_url: str | None = None, whose: str = "") -> list[Pinned]:
    """Every distribution `wanted` needs on top of `below` (the parents' pins, kept);
    `whose`: where the pins were written, for the hint of one pip cannot resolve."""
    with tempfile.TemporaryDirectory(prefix="imgkit-lock-") as tmp:
        constraints = Path(tmp, "constraints.txt")
        constraints.write_text("".join(f"{p.name}=={p.version}\n" for p in below))
        report = Path(tmp, "report.json")
        try:
            done = subprocess.run(pip_command(wanted, constraints, report, python, platform,
                                              glibc, Path(tmp, "target"), index_url,
                                              extra_index_url),
                                  capture_output=True, text=True, timeout=1800)
        except subprocess.TimeoutExpired:
            raise HostError(f"{what}: pip did not resolve in 30 minutes")
        if done.returncode != 0:
            errors = [line for line in done.stderr.splitlines()
                      if line.startswith("ERROR") or "conflict" in line.lower()]
            said = "; ".join(errors[-3:]) or done.stderr.strip()[-500:]
            said = re.sub(r"\(from versions: ([^)]{0,200})[^)]*\)",
                          lambda m: f"(from versions: {m.group(1).rsplit(',', 1)[0]}, ...)"
                          if len(m.group(0)) > 220 else m.group(0), said)
            if any(w in done.stderr for w in UNREACHABLE):   # the index, not the matrix
                raise HostError(f"{what}: the package index did not answer: {said}",
                                hint="check the network, or pass --index-url")
            raise UsageError(f"{what}: pip cannot resolve {' '.join(wanted)} for CPython "
                             f"{python} on {platform}: {said}",
                             hint=f"the pins are {whose}: `pip index versions NAME` lists what "
                                  "the index holds" if whose else "")
        installs = json.loads(report.read_text()).get("install", [])
    kept = {(p.name.lower().replace("_", "-"), p.version) for p in below}
    out = []
    for item in installs:
        name, version = item["metadata"]["name"], item["metadata"]["version"]
        if (name.lower().replace("_", "-"), version) in kept:
            continue
        archive = item.get("download_info", {}).get("archive_info", {})
        hashes = dict(archive.get("hashes") or {})
        if "sha256" not in hashes and str(archive.get("hash", "")).startswith("sha256="):
            hashes["sha256"] = archive["hash"].split("=", 1)[1]
        if "sha256" not in hashes:
            raise HostError(f"{what}: the index gave no sha256 for {name} {version}",
                            hint="lock against an index that publishes hashes (PyPI does)")
        out.append(Pinned(name, version, (hashes["sha256"],)))
    return out
