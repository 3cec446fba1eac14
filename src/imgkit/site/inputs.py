"""What the site is made from: the verdicts `imgkit verify --json` wrote, read as a model
(they come from other jobs and machines: untrusted, checked), or the verdicts this machine
recorded (tickets.py); what `imgkit outdated --json` found waiting for each image; and the
scans `imgkit scan` kept. A file that cannot be read is named and skipped; the rest go on
(a scan that cannot be read is no scan, never a clean one)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..verify.attestation import VerdictRecord
from ..verify.facts import Report

MACHINES = {"x86_64": "linux/amd64", "aarch64": "linux/arm64"}   # uname -m -> platform


class CheckRecord(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    name: str
    verdict: str
    expected: str = ""
    measured: str = ""
    diagnosis: str = ""
    scope: str = "image"
    required: bool = True


class VerdictFile(BaseModel):
    """One `imgkit verify --json` document."""
    model_config = ConfigDict(extra="ignore", frozen=True)
    image: str
    image_id: str
    passed: bool
    title: str = ""               # the image's own name, when `image` is a digest reference
    size: Optional[int] = Field(default=None, ge=0)   # bytes unpacked in the engine verify ran beside
    gpu_checked: bool = False
    gpu_verified: bool = False
    host_failure: bool = False
    checks: tuple[CheckRecord, ...] = Field(default=(), max_length=2000)
    facts: Optional[Report] = None
    platform_seen: str = ""       # when the facts are not there: the image's own platform

    @property
    def platform(self) -> str:
        machine = self.facts.system.machine if self.facts else None
        return MACHINES.get(machine or "", "") or self.platform_seen

    @property
    def failed(self) -> list[CheckRecord]:
        return [c for c in self.checks if c.verdict == "fail" and c.required]


@dataclass(frozen=True)
class Found:
    verdict: VerdictFile
    file: Path
    written: float           # the file's modification time: the newest verdict wins
    stale: bool = False      # of an image id its tag no longer points at: history only


def read_verdicts(folder: Path) -> tuple[list[Found], list[str]]:
    """Every verdict file in `folder` (recursively, *.json), and a line per file skipped."""
    found, skipped = [], []
    for path in sorted(folder.rglob("*.json")):
        try:
            document = json.loads(path.read_text())
            found.append(Found(VerdictFile.model_validate(document), path, path.stat().st_mtime))
        except (OSError, ValueError) as exc:     # ValidationError is a ValueError
            reason = (f"not a verdict ({exc.error_count()} problem(s): "
                      f"{_first(exc)})" if isinstance(exc, ValidationError) else str(exc)[:200])
            skipped.append(f"{path}: {reason}")
    return found, skipped


class AptUpdateRecord(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    package: str
    suite: str
    installed: str
    available: str


class PipReleaseRecord(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    name: str
    installed: str
    newest_patch: str


class OutdatedRecord(BaseModel):
    """One image of an `imgkit outdated --json` document."""
    model_config = ConfigDict(extra="ignore", frozen=True)
    image: str
    apt: tuple[AptUpdateRecord, ...] = Field(default=(), max_length=20000)
    security: tuple[AptUpdateRecord, ...] = Field(default=(), max_length=20000)
    pip: tuple[PipReleaseRecord, ...] = Field(default=(), max_length=20000)
    base_days: Optional[int] = None


def read_outdated(path: Path) -> tuple[list[OutdatedRecord], list[str]]:
    """Every image of an `imgkit outdated --json` file; a line per image (or for the whole
    file) that could not be read."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return [], [f"{path}: {getattr(exc, 'strerror', None) or str(exc)[:200]}"]
    if not isinstance(document, list):
        return [], [f"{path}: not the JSON of `imgkit outdated --json` (a list of images)"]
    found, skipped = [], []
    for number, item in enumerate(document):
        try:
            found.append(OutdatedRecord.model_validate(item))
        except ValidationError as exc:
            skipped.append(f"{path}: image {number + 1}: {_first(exc)}")
    return found, skipped


class ScanFindingRecord(BaseModel):
    """One finding of an `imgkit scan --json` document."""
    model_config = ConfigDict(extra="ignore", frozen=True)
    id: str
    aliases: tuple[str, ...] = ()
    package: str
    ecosystem: str = ""
    installed: str = ""
    fixed: tuple[str, ...] = ()
    score: Optional[float] = None
    level: str = ""
    verdict: str = ""                 # fail, waived or below
    why: str = ""
    path: str = ""                    # the file the scanner found it by


class ScanDatabase(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    age_days: Optional[int] = None


class ScanFile(BaseModel):
    """An `imgkit scan --json` document, as `imgkit scan` keeps it under the image id."""
    model_config = ConfigDict(extra="ignore", frozen=True)
    image_id: str
    scanner: str = ""
    fail_on: str = ""
    failed: bool
    database: ScanDatabase = ScanDatabase()
    findings: tuple[ScanFindingRecord, ...] = Field(default=(), max_length=100000)
    unused_waivers: tuple[dict[str, object], ...] = ()


def parse_scan(document: object) -> ScanFile | None:
    """A scan's result as a signed attestation carries it (its predicate's scanner.result)."""
    try:
        return ScanFile.model_validate(document)
    except ValidationError:
        return None


def read_scan(path: Path, image_id: str) -> tuple[ScanFile, float] | None:
    """The scan in `path` and when it was written, when it is a scan of `image_id`."""
    try:
        scan = ScanFile.model_validate_json(path.read_text())
        written = path.stat().st_mtime
    except (OSError, ValidationError):
        return None
    return (scan, written) if scan.image_id == image_id else None


def from_record(record: VerdictRecord, platform: str, size: int | None = None) -> VerdictFile:
    """A verdict this machine recorded (its ticket: the checks, not the probe's facts);
    `size`: what the engine holds of the image id it judged."""
    return VerdictFile(image=record.image, image_id=record.image_id, passed=record.passed, size=size,
                       gpu_checked=record.gpu_checked,
                       gpu_verified=record.gpu_checked and record.passed,
                       host_failure=record.host_failure, platform_seen=platform,
                       checks=tuple(CheckRecord.model_validate(c.model_dump()) for c in record.checks))


def _first(error: ValidationError) -> str:
    first = error.errors()[0]
    return f"{'.'.join(str(p) for p in first['loc']) or 'document'}: {first['msg']}"
