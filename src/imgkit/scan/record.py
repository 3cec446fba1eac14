"""A scan is a ticket for one image id, as a verdict is: every `imgkit scan` keeps what it
decided under the id it scanned ($IMGKIT_CACHE_DIR/scans, else ~/.cache/imgkit/scans), and
its whole JSON beside it (scan-files/). Where the project names an advisory database,
publish asks for the scan of the id a tag points at now: none, a failing one, or one made
against a stale database is a refusal. A publish that signs attaches the scan too, as
cosign's `vuln` predicate (its own spec: invocation, scanner with db and result, metadata)."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..cache import cache_dir
from ..cachefile import write_whole
from ..console import print_warning
from ..errors import HostError
from .scanners import SCANNERS

FORMAT = 1
STALE_DAYS = 7          # osv.dev rebuilds its zips daily; a week-old copy misses a week of advisories


class ScanRecord(BaseModel):
    model_config = ConfigDict(frozen=True)
    format: int = FORMAT
    image_id: str
    image: str                       # the reference scan was given
    failed: bool
    failing: list[str]               # "ID package version" of each finding that failed
    fail_on: str
    scanner: str
    database_age_days: int | None
    recorded_at: float               # when the scan ended (seconds since the epoch)
    started_at: float = 0.0
    database: str = ""               # the advisory database's folder


def path_of(image_id: str) -> Path:
    return cache_dir() / "scans" / f"{image_id.removeprefix('sha256:')}.json"


def file_of(image_id: str) -> Path:
    return cache_dir() / "scan-files" / f"{image_id.removeprefix('sha256:')}.json"


def keep(record: ScanRecord, document: str) -> None:
    """Keep the scan of `record.image_id`: its ticket, and its JSON (`scan --json`'s)."""
    write_whole(file_of(record.image_id), document)
    write_whole(path_of(record.image_id), record.model_dump_json(indent=1))


def keep_or_say(record: ScanRecord, document: str) -> None:
    """keep, where a cache this user cannot write is a warning: the scan stands, printed and
    written where asked, but publish will not find it."""
    try:
        keep(record, document)
    except HostError as exc:
        print_warning(f"not kept as the scan of {record.image_id[:19]}: {exc.message}", exc.hint)


def vuln_predicate(image_id: str) -> bytes | None:
    """The kept scan of `image_id` as cosign's vuln predicate, or None when there is none."""
    record = lookup(image_id)
    if record is None:
        return None
    try:
        result: Any = json.loads(file_of(image_id).read_text())
    except (OSError, ValueError):
        return None
    name, _, version = record.scanner.partition(" ")
    known = SCANNERS.get(name)
    return json.dumps({
        "invocation": {"parameters": None, "uri": "", "event_id": "", "builder.id": ""},
        "scanner": {"uri": f"pkg:golang/{known.module}@v{version}" if known else name,
                    "version": version,
                    "db": {"uri": record.database, "version": f"{record.database_age_days} days old"},
                    "result": result},
        "metadata": {"scanStartedOn": _iso(record.started_at or record.recorded_at),
                     "scanFinishedOn": _iso(record.recorded_at)}}, indent=1).encode()


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def stale(age_days: int | None) -> bool:
    """Whether a database of that age misses what a scan needs (unknown age: not said stale)."""
    return age_days is not None and age_days > STALE_DAYS


def lookup(image_id: str) -> ScanRecord | None:
    try:
        found = ScanRecord.model_validate_json(path_of(image_id).read_text())
    except (OSError, ValidationError):
        return None
    return found if found.format == FORMAT and found.image_id == image_id else None


def refusal(ref: str, image_id: str, record: ScanRecord | None) -> str | None:
    """Why `ref` (now the image `image_id`) may not be published for its vulnerabilities,
    or None when it may."""
    if record is None:
        return (f"{ref} ({image_id[:19]}) was never scanned, and this project gates on known "
                f"vulnerabilities (vulnerability_db): run `imgkit scan {ref}`")
    if record.failed:
        shown = "; ".join(record.failing[:5]) + (f"; and {len(record.failing) - 5} more"
                                                  if len(record.failing) > 5 else "")
        return f"{ref}: its scan failed (fail_on: {record.fail_on}): {shown}"
    if stale(record.database_age_days):
        return (f"{ref} was scanned against an advisory database {record.database_age_days} "
                f"days old: fetch it "
                f"again and run `imgkit scan {ref}`")
    return None

