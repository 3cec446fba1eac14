"""What `imgkit scan` found in each image the site shows: the scan kept on this machine for
the image id its verdict judged (scan/record.py keeps each scan's JSON under that id), or
the signed scan production holds of it (a pipeline's site is made where no scan ran), as
its page shows it. A scan that cannot be read is no scan, never a clean one."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from ..scan.gate import FAILED, WAIVED
from .inputs import ScanFile, ScanFindingRecord, parse_scan, read_scan


@dataclass(frozen=True)
class FindingView:
    advisory: str                  # its id, with the aliases after it
    package: str                   # "PyPI pip"
    installed: str
    fixed: str                     # the versions that fix it, or "no fix yet"
    level: str                     # "low 3.3"
    verdict: str                   # fail, waived or below
    why: str
    path: str                      # the file it was found by


@dataclass(frozen=True)
class ScanView:
    when: str                      # when it was kept (UTC)
    scanner: str
    fail_on: str
    failed: bool
    database_age_days: int | None
    findings: tuple[FindingView, ...]
    unused_waivers: int
    signed: bool = False           # read from the registry, its signature verified

    @property
    def said(self) -> str:
        failing = sum(f.verdict == FAILED for f in self.findings)
        waived = sum(f.verdict == WAIVED for f in self.findings)
        count = len(self.findings)
        return (f"{'failed' if self.failed else 'passed'} (fail_on: {self.fail_on}): "
                f"{count} finding{'' if count == 1 else 's'}, {failing} failing, {waived} waived")


def read(path: Path, image_id: str) -> ScanView | None:
    """The scan kept in `path` (`imgkit scan --json`'s document) when it is of `image_id`."""
    found = read_scan(path, image_id)
    if found is None:
        return None
    return view_of(*found)


def signed_view(document: object, finished: float) -> tuple[str, ScanView] | None:
    """(image id, its view) of a signed scan's result, as the registry holds it."""
    scan = parse_scan(document)
    return None if scan is None else (scan.image_id, view_of(scan, finished, signed=True))


def view_of(scan: ScanFile, written: float, signed: bool = False) -> ScanView:
    order = {FAILED: 0, WAIVED: 1}
    findings = sorted(scan.findings, key=lambda f: (order.get(f.verdict, 2), -(f.score or 0)))
    return ScanView(
        dt.datetime.fromtimestamp(written, dt.timezone.utc).strftime("%Y-%m-%d %H:%M"),
        scan.scanner, scan.fail_on, scan.failed, scan.database.age_days,
        tuple(_view(f) for f in findings), len(scan.unused_waivers), signed)


def _view(finding: ScanFindingRecord) -> FindingView:
    aliases = [a for a in finding.aliases if a != finding.id]
    score = f" {finding.score:.1f}" if finding.score is not None else ""
    return FindingView(
        finding.id + (f" ({', '.join(aliases)})" if aliases else ""),
        f"{finding.ecosystem} {finding.package}".strip(), finding.installed,
        ", ".join(finding.fixed) or "no fix yet", f"{finding.level}{score}", finding.verdict,
        finding.why, finding.path)


def kept_scans(image_ids: set[str]) -> dict[str, ScanView]:
    """image id -> the scan this machine kept of it (only those it has)."""
    from ..scan.record import file_of
    found = {}
    for image_id in image_ids:
        view = read(file_of(image_id), image_id)
        if view is not None:
            found[image_id] = view
    return found
