"""The scanners `imgkit scan` can run: osv-scanner (the default) and trivy, chosen by
--scanner or the project's `scanner` setting. Each reads the image the same way (as the
engine saves it), its own advisory database on disk in its own layout, and gives its
findings in one model; imgkit compares no versions itself."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Iterable, Protocol

from ..errors import HostError, UsageError
from . import scanner as osv
from . import trivy
from .database import ecosystems_for, update
from .findings import Finding, parse

DEFAULT = "osv-scanner"


class Scanner(Protocol):
    name: str
    module: str          # its Go module: the vuln predicate names it as a purl

    def find(self) -> Path: ...

    def version(self, tool: Path) -> str: ...

    def holds(self, db: Path) -> bool:
        """Whether `db` is laid out as this scanner's database."""

    def database(self, db: Path) -> tuple[list[str], int | None]:
        """What the database holds, and its age in days; none is exit 3."""

    def update(self, db: Path, distros: Iterable[str], log: Callable[[str], None]) -> None: ...

    def findings(self, tool: Path, archive: Path, db: Path, work: Path,
                 layers: tuple[str, ...]) -> list[Finding]:
        """Its findings in the saved image at `archive`; output it does not write is
        findings.Unreadable."""


class OsvScanner:
    name, module = "osv-scanner", osv.MODULE

    def find(self) -> Path:
        return osv.find_scanner()

    def version(self, tool: Path) -> str:
        return osv.version_of(tool)

    def holds(self, db: Path) -> bool:
        return osv.holds(db)

    def database(self, db: Path) -> tuple[list[str], int | None]:
        not_the_others(self, db)
        zips = osv.database_zips(db)
        times = [p.stat().st_mtime for p in zips.values()]
        return list(zips), int((time.time() - max(times)) // 86400) if times else None

    def update(self, db: Path, distros: Iterable[str], log: Callable[[str], None]) -> None:
        update(db, ecosystems_for(distros), log=log)

    def findings(self, tool: Path, archive: Path, db: Path, work: Path,
                 layers: tuple[str, ...]) -> list[Finding]:
        return parse(osv.run(tool, archive, db, work / "osv.json"))


class TrivyScanner:
    name, module = "trivy", trivy.MODULE

    def find(self) -> Path:
        return trivy.find_scanner()

    def version(self, tool: Path) -> str:
        return trivy.version_of(tool)

    def holds(self, db: Path) -> bool:
        return trivy.holds(db)

    def database(self, db: Path) -> tuple[list[str], int | None]:
        not_the_others(self, db)
        return trivy.database(db)

    def update(self, db: Path, distros: Iterable[str], log: Callable[[str], None]) -> None:
        trivy.update(trivy.find_scanner(), db, log)     # trivy's one database holds every distro

    def findings(self, tool: Path, archive: Path, db: Path, work: Path,
                 layers: tuple[str, ...]) -> list[Finding]:
        return trivy.parse(trivy.run(tool, archive, db, work / "trivy.json"), layers)


SCANNERS: dict[str, Scanner] = {"osv-scanner": OsvScanner(), "trivy": TrivyScanner()}


def not_the_others(chosen: Scanner, db: Path) -> None:
    """Another scanner's database given to this one is exit 3 saying whose it is and the
    --scanner that reads it (rather than "no database")."""
    if chosen.holds(db):
        return
    for other in SCANNERS.values():
        if other is not chosen and other.holds(db):
            raise HostError(f"{db} is {other.name}'s database, and the scanner is {chosen.name}",
                            hint=f"--scanner {other.name} (or scanner = \"{other.name}\" in "
                                 "imgkit.toml)")


def scanner_named(name: str | None) -> Scanner:
    """The scanner of that name (osv-scanner when none is named); another is exit 2."""
    chosen = SCANNERS.get(name or DEFAULT)
    if chosen is None:
        raise UsageError(f"--scanner {name!r}: imgkit runs no such scanner",
                         hint=f"one of {', '.join(SCANNERS)}")
    return chosen
