"""`imgkit scan IMAGE`: the image saved as the engine holds it, scanned by osv-scanner
offline against the advisory database on disk, each finding held to the threshold and the
project's waivers. Exit 0: nothing fails; 1: a finding fails (or a waiver expired or no
longer holds); 2: bad input (a waiver file, the threshold); 3: the host (no engine, no
scanner, no database, the scanner failing)."""
from __future__ import annotations

import datetime as dt
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from ..console import stderr_line
from ..engine import connect
from ..errors import EXIT_FAILED, EXIT_OK, HostError, UsageError
from ..matrix.waivers import load_waivers, waivers_path
from ..project import selection_from, setting_or
from . import record, report, scanner
from .findings import LEVELS, Scan, Unreadable, parse
from .gate import FAILED, decide
from .origin import layer_origins

DEFAULT_FAIL_ON = "high"


def threshold_of(given: str | None) -> str:
    level = (setting_or(given, "fail_on") or DEFAULT_FAIL_ON).lower()
    if level not in LEVELS:
        raise UsageError(f"--fail-on {level!r}: not a severity", hint=f"one of {', '.join(LEVELS)}")
    return level


def database_of(given: Path | None) -> Path:
    named = setting_or(None, "vulnerability_db")
    found = given or (Path(named) if named else None)
    if found is None:
        raise UsageError("imgkit scan needs an advisory database: --db DIR",
                         hint="or set vulnerability_db in imgkit.toml (or IMGKIT_VULNERABILITY_DB); "
                              "docs/vulnerabilities.md says how to get one")
    return found


def scan(*, image: str, db: Path | None = None, fail_on: str | None = None,
         json_file: Path | None = None, today: dt.date | None = None) -> int:
    threshold = threshold_of(fail_on)                        # bad: exit 2, first
    waivers = load_waivers(waivers_path(selection_from().images))   # bad file: exit 2
    database = database_of(db)
    tool = scanner.find_scanner()                            # none: exit 3
    zips = scanner.database_zips(database)                   # none: exit 3
    engine = connect()                                       # unreachable: exit 3
    info = engine.known(image)
    started, wall_started = time.monotonic(), time.time()
    with tempfile.TemporaryDirectory(prefix="imgkit-scan-") as work:
        archive = Path(work) / "image.tar"
        with archive.open("wb") as out:
            for chunk in engine.save(info.id):
                out.write(chunk)
        raw = scanner.run(tool, archive, database, Path(work) / "osv.json")
    try:
        findings = parse(raw)
    except Unreadable as exc:
        raise HostError(f"osv-scanner's output is not what it writes: {exc}") from None
    origins = layer_origins(engine, info)
    findings = [replace(f, origin=origins[f.layer]) if f.layer is not None and f.layer < len(origins)
                else f for f in findings]
    result = Scan(image=image, image_id=info.id, scanner=scanner.version_of(tool),
                  findings=tuple(findings))
    decision = decide(findings, waivers, threshold, today or dt.date.today())
    for line in report.lines(result, decision, threshold):
        print(line, flush=True)
    report.warn_unused(decision)
    ecosystems, age = list(zips), _age_days(list(zips.values()))
    stale = record.stale(age)
    if stale:
        stderr_line(f"warning: the advisory database at {database} is {age} days old: what was "
                    f"published since is not in this scan (fetch it again: docs/vulnerabilities.md)")
    document = report.document(result, decision, threshold, {
        "path": str(database), "ecosystems": ecosystems, "age_days": age, "stale": stale})
    record.keep(record.ScanRecord(
        image_id=info.id, image=image, failed=decision.failed, fail_on=threshold,
        failing=[f"{j.finding.id} {j.finding.package} {j.finding.installed}"
                 for j in decision.judged if j.verdict == FAILED],
        scanner=result.scanner, database_age_days=age, recorded_at=time.time(),
        started_at=wall_started, database=str(database.resolve())), document)
    if json_file is not None:
        json_file.write_text(document)
    stderr_line(f"scanned in {time.monotonic() - started:.1f} s against {database} "
                f"({', '.join(ecosystems)}; newest file {age} days old)")
    return EXIT_FAILED if decision.failed else EXIT_OK


def _age_days(zips: list[Path]) -> int | None:
    """How old the newest of the database's zips is, in whole days."""
    times = [p.stat().st_mtime for p in zips]
    return int((time.time() - max(times)) // 86400) if times else None
