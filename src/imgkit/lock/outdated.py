"""`imgkit outdated`: what is waiting for an image. The Debian/Ubuntu updates its packages have
in the mirror, the security ones apart (asked in a throwaway container of the image, with the
image's own apt sources, as root on the bridge network, nothing kept); the newer patch
releases of its Python distributions within the same minor (asked of the package index, from
the host); and how old its base is (the first layer's date). What moves a lock, seen from the
image: `imgkit lock` is how a team takes it in.
"""
from __future__ import annotations

import datetime as dt
import re
import subprocess
import sys
from dataclasses import dataclass, field

from ..engine import Engine, RunSpec
from ..errors import HostError
from .apt import APT_OPTIONS, APT_PREPARE

SCRIPT = (f"{APT_PREPARE} && apt list --upgradable {APT_OPTIONS} 2>/dev/null; "
          "echo '--- pip'; "
          "for py in /opt/venv/bin/python3 python3; do "
          "if command -v $py >/dev/null 2>&1; then $py -m pip list --format freeze "
          "--disable-pip-version-check 2>/dev/null && break; fi; done")
UPGRADABLE = re.compile(r"^([a-z0-9][a-z0-9+.-]*)/(\S+) (\S+) \S+ \[upgradable from: ([^\]]+)\]$")


@dataclass(frozen=True)
class AptUpdate:
    package: str
    suite: str            # bookworm-security, bookworm-updates, bookworm (a point release)
    installed: str
    available: str

    @property
    def security(self) -> bool:
        return self.suite.endswith("-security") or "/updates" in self.suite


@dataclass(frozen=True)
class PipRelease:
    name: str
    installed: str
    newest_patch: str


@dataclass
class Outdated:
    image: str
    apt: list[AptUpdate] = field(default_factory=list)
    pip: list[PipRelease] = field(default_factory=list)
    base_created: str = ""        # ISO date of the image's first layer
    base_days: int | None = None
    base_release: str = ""        # the Date: of the Release file a made base came from

    @property
    def security(self) -> list[AptUpdate]:
        return [u for u in self.apt if u.security]


def parse_container_output(text: str) -> tuple[list[AptUpdate], dict[str, str]]:
    """`apt list --upgradable` lines, then `pip list --format freeze` after a marker."""
    apt_part, _, pip_part = text.partition("--- pip")
    updates = [AptUpdate(m.group(1), m.group(2).split(",")[0], m.group(4), m.group(3))
               for m in map(UPGRADABLE.match, apt_part.splitlines()) if m]
    dists = dict(line.split("==", 1) for line in pip_part.split() if "==" in line)
    return updates, dists


def ask_image(engine: Engine, image_id: str, timeout: float = 600) -> tuple[list[AptUpdate], dict[str, str]]:
    run = engine.run_container(RunSpec(
        image=image_id, entrypoint=("/bin/sh", "-c"), command=(SCRIPT,), user="0",
        network=True, timeout=timeout, memory="2g"))
    if run.timed_out:
        raise HostError(f"asking the mirror from {image_id[:19]} took over {timeout:.0f} s")
    if run.exit_code not in (0, None) and "--- pip" not in run.stdout:
        raise HostError("apt-get update in a container of the image failed (is the mirror "
                        f"reachable from the Docker bridge?): {run.stderr.strip()[-400:]}")
    return parse_container_output(run.stdout)


def _release(version: str) -> tuple[int, ...] | None:
    parts = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?", version)
    return tuple(int(p) for p in parts.groups() if p is not None) if parts else None


def newest_patch(installed: str, available: list[str]) -> str | None:
    """The newest final release with the same major.minor, newer than `installed`."""
    mine = _release(installed)
    if mine is None:
        return None
    best: tuple[tuple[int, ...], str] | None = None
    for version in available:
        if re.search(r"(a|b|rc|dev|post)\d*", version.split("+")[0].lower()):
            continue
        theirs = _release(version)
        if theirs and theirs[:2] == mine[:2] and theirs > mine and (best is None or theirs > best[0]):
            best = (theirs, version)
    return best[1] if best else None


def index_versions(name: str, index_url: str | None = None) -> list[str]:
    """What the package index has of `name` (pip's own view: its configuration, its CA)."""
    command = [sys.executable, "-m", "pip", "index", "versions", name, "--disable-pip-version-check"]
    if index_url:
        command += ["--index-url", index_url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    found = re.search(r"Available versions: (.+)", done.stdout)
    return [v.strip() for v in found.group(1).split(",")] if found else []


def base_age(engine: Engine, image: str, today: dt.date) -> tuple[str, int | None]:
    """The date of the image's first layer (the base's rootfs), and its age in days."""
    made = engine.made_at(image)
    if made is None:
        return "", None
    created = dt.datetime.fromtimestamp(made, dt.timezone.utc).date()
    return created.isoformat(), (today - created).days


def patch_releases(dists: dict[str, str], index_url: str | None = None) -> list[PipRelease]:
    """For every distribution, the newest patch release of its minor, if newer (the index is
    asked for eight at a time)."""
    from concurrent.futures import ThreadPoolExecutor
    names = sorted(dists)
    with ThreadPoolExecutor(max_workers=8) as pool:
        available = list(pool.map(lambda n: index_versions(n, index_url), names))
    out = []
    for name, versions in zip(names, available):
        newer = newest_patch(dists[name], versions)
        if newer:
            out.append(PipRelease(name, dists[name], newer))
    return out


def outdated_line(result: Outdated) -> str:
    """One image's waiting updates, whole on one line (a CI log keeps it)."""
    security, other = result.security, [u for u in result.apt if not u.security]
    parts = [f"{len(security)} security update{'s' if len(security) != 1 else ''} waiting"
             + (": " + ", ".join(f"{u.package} {u.installed} -> {u.available}" for u in security)
                if security else ""),
             f"{len(other)} other package update{'s' if len(other) != 1 else ''}",
             f"{len(result.pip)} newer patch release{'s' if len(result.pip) != 1 else ''}"
             + (": " + ", ".join(f"{p.name} {p.installed} -> {p.newest_patch}" for p in result.pip)
                if result.pip else "")]
    if result.base_created:
        parts.append(f"base from {result.base_created} ({result.base_days} days old"
                     + (f", its mirror's Release of {result.base_release})" if result.base_release
                        else ")"))
    return f"{'OUTDATED' if security else 'ok'}  {result.image}: " + "; ".join(parts)


def outdated_json(results: list[Outdated]) -> str:
    import dataclasses
    import json
    return json.dumps([{**dataclasses.asdict(r), "security": [dataclasses.asdict(u) for u in r.security]}
                       for r in results], indent=1)
