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
from ..versions import releases_around
from .files import Pinned

# what pip prints when the index cannot be reached (exit 3), unlike a requirement that
# cannot be met (exit 2)
UNREACHABLE = ("NewConnectionError", "Max retries exceeded", "Temporary failure in name "
               "resolution", "Connection refused", "Network is unreachable", "SSLError")
NO_SUCH_VERSION = re.compile(r"Could not find a version that satisfies the requirement "
                             r"(\S+) \(from versions: ([^)]*)\)")


class NoSuchVersion(UsageError):
    """One pin names a version the index does not hold (for this python and platform):
    `requirement` as written, with the versions the index offered."""

    def __init__(self, message: str, *, hint: str, requirement: str,
                 versions: tuple[str, ...]) -> None:
        super().__init__(message, hint=hint)
        self.requirement = requirement
        self.versions = versions


def nearest(requirement: str, offered: Sequence[str]) -> str:
    """What the index holds instead, in words: the newest release at or below the version
    asked for, and the newest release of all (`einops==0.8.99`: 0.8.2)."""
    asked = re.search(r"===?\s*([^,;\s]+)", requirement)
    below, newest = releases_around(asked.group(1) if asked else "", list(offered))
    if newest is None:
        return "the index holds no release of it for this python and platform"
    if below is None or below == newest:
        return f"the newest release the index holds is {newest}"
    return f"the index holds {below} below it, and {newest} as its newest release"


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
    # not --quiet: pip says what causes a conflict ("rich 13.9.4 depends on ...") at its
    # info level, on stdout
    command = [sys.executable, "-m", "pip", "install", "--dry-run",
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
            raise _refusal(done.stderr, done.stdout, f"{what}: pip cannot resolve {' '.join(wanted)} for "
                           f"CPython {python} on {platform}", what, whose)
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


def _causes(output: str) -> list[str]:
    """What pip says causes a conflict, a line each ("rich 13.9.4 depends on
    markdown-it-py>=2.2.0"), from its "The conflict is caused by:" block; [] for none."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "The conflict is caused by:"),
                 None)
    if start is None:
        return []
    causes = []
    for line in lines[start + 1:]:
        if not line.startswith((" ", "\t")) or not line.strip():
            break
        causes.append(line.strip())
    return causes


def _refusal(stderr: str, stdout: str, cannot: str, what: str, whose: str) -> Exception:
    """pip's failure in a line: the index not reached (exit 3), a pin it holds no such
    version of (NoSuchVersion, for the caller to say where the pin was written), or pip's
    last errors with whose pins they are."""
    errors = [line for line in stderr.splitlines()
              if line.startswith("ERROR") or "conflict" in line.lower()]
    causes = _causes(stdout)
    said = (f"{errors[0].removeprefix('ERROR: ').rstrip('.')}: {'; '.join(causes)}" if causes
            and errors else "; ".join(errors[-3:]) or stderr.strip()[-500:])
    said = re.sub(r"\(from versions: ([^)]{0,200})[^)]*\)",
                  lambda m: f"(from versions: {m.group(1).rsplit(',', 1)[0]}, ...)"
                  if len(m.group(0)) > 220 else m.group(0), said)
    if any(w in stderr for w in UNREACHABLE):       # the index, not the matrix
        return HostError(f"{what}: the package index did not answer: {said}",
                         hint="check the network, or pass --index-url")
    hint = (f"the pins are {whose}: `pip index versions NAME` lists what the index holds"
            if whose else "")
    missing = NO_SUCH_VERSION.search(stderr)
    if missing:
        offered = tuple(v.strip() for v in missing.group(2).split(",") if v.strip())
        return NoSuchVersion(f"{cannot}: {said}", hint=hint, requirement=missing.group(1),
                             versions=offered)
    return UsageError(f"{cannot}: {said}", hint=hint)
