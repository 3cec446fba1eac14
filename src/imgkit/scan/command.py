"""`imgkit scan IMAGE`: the image saved as the engine holds it (a registry reference is
pulled by digest first, as verify pulls it: what production serves today), scanned by
osv-scanner or trivy (scanners.py) offline against the advisory database on disk, each
finding held to the threshold and the project's waivers. Exit 0: nothing fails; 1: a
finding fails (or a waiver expired or no longer holds); 2: bad input (a waiver file, the
threshold, the scanner's name); 3: the host (no engine, no scanner, no database, the
scanner failing)."""
from __future__ import annotations

import datetime as dt
import time
from dataclasses import replace
from pathlib import Path

from ..console import stderr_line
from ..engine import Engine, ImageInfo, connect
from ..errors import EXIT_FAILED, EXIT_OK, CompatError, HostError, SpecError, UsageError
from ..matrix.waivers import load_waivers, waivers_path
from ..outputs import write_output
from ..project import scan_required, selection_from, setting_or
from ..scratch import scratch
from . import record, report
from .archive import scannable
from .findings import LEVELS, Finding, Scan, Unreadable
from .gate import FAILED, decide
from .origin import layer_origins
from .scanners import Scanner, scanner_named

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


def scan(*, image: str | None, db: Path | None = None, fail_on: str | None = None,
         json_file: Path | None = None, today: dt.date | None = None,
         update_db: bool = False, metrics: str | None = None, scanner: str | None = None) -> int:
    """`update_db`: the scanner's database fetched first (alone without IMAGE). `metrics`:
    the scan as Prometheus metrics too, into a file or to a Pushgateway. `scanner`:
    osv-scanner (the default, or the project's `scanner` setting) or trivy."""
    threshold = threshold_of(fail_on)                        # bad: exit 2, first
    chosen = scanner_named(setting_or(scanner, "scanner"))   # bad: exit 2
    if image is None and not update_db:
        raise UsageError("imgkit scan needs an IMAGE", hint="or --update-db alone, to fetch the "
                         "advisory database only")
    waivers = load_waivers(waivers_path(selection_from().images)) if image else ()  # bad: exit 2
    database = database_of(db)
    if update_db:
        chosen.update(database, matrix_distros(), stderr_line)   # offline: exit 3
    if image is None:                                        # --update-db alone
        return EXIT_OK
    tool = chosen.find()                                     # none: exit 3
    ecosystems, age = chosen.database(database)              # none: exit 3
    engine = connect()                                       # unreachable: exit 3
    info = subject(engine, image)
    started, wall_started = time.monotonic(), time.time()
    findings = scanned(engine, info, chosen, tool, database)
    result = Scan(image=image, image_id=info.id, scanner=chosen.version(tool),
                  findings=tuple(findings))
    decision = decide(findings, waivers, threshold, today or dt.date.today())
    report.show(result, decision, threshold)
    stale = record.stale(age)
    if stale:
        stderr_line(f"warning: the advisory database at {database} is {age} days old: what was "
                    f"published since is not in this scan (fetch it again: docs/vulnerabilities.md)")
    document = report.document(result, decision, threshold, {
        "path": str(database), "ecosystems": ecosystems, "age_days": age, "stale": stale})
    record.keep_or_say(record.ScanRecord(
        image_id=info.id, image=image, failed=decision.failed, fail_on=threshold,
        failing=[f"{j.finding.id} {j.finding.package} {j.finding.installed}"
                 for j in decision.judged if j.verdict == FAILED],
        scanner=result.scanner, database_age_days=age, recorded_at=time.time(),
        started_at=wall_started, database=str(database.resolve())), document)
    if json_file is not None:
        write_output(json_file, document, "--json")
    if metrics is not None:
        from .metrics import send_scan_metrics
        send_scan_metrics(metrics, result, decision, threshold, age)
    stderr_line(f"scanned in {time.monotonic() - started:.1f} s against {database} "
                f"({', '.join(ecosystems)}; the database {age} days old)")
    return EXIT_FAILED if decision.failed else EXIT_OK


def subject(engine: Engine, image: str) -> ImageInfo:
    """The image to scan: a local one, or a registry reference (HOST/REPO:TAG or @sha256:)
    resolved to its digest and pulled exactly (this host's platform of an index), as long
    as publish waits on a registry that fails."""
    from ..registry.reference import remote_ref
    remote = remote_ref(image)
    if remote is None:
        return engine.known(image)
    from ..options import PUBLISH_DEFAULTS
    from ..registry.remote import fetch_or_host_fault  # requests and the registry client: only here
    return fetch_or_host_fault(engine, remote, retry_for=PUBLISH_DEFAULTS.retry_for)[1]


def scanned(engine: Engine, info: ImageInfo, chosen: Scanner, tool: Path,
            database: Path) -> list[Finding]:
    """The scanner's findings in the image as the engine saves it, each with the layer (and
    the image of its chain) that brought it."""
    with scratch("imgkit-scan-", info.size, f"saving {info.tags[0] if info.tags else info.id[:19]} "
                 "for the scanner") as work:
        archive = work / "image.tar"
        with archive.open("wb") as out:
            for chunk in engine.save(info.id):
                out.write(chunk)
        archive = scannable(archive)          # the containerd store's mixed layers made alike
        try:
            findings = chosen.findings(tool, archive, database, work, info.layers)
        except Unreadable as exc:
            raise HostError(f"{chosen.name}'s output is not what it writes: {exc}") from None
    origins = layer_origins(engine, info)
    return [replace(f, origin=origins[f.layer]) if f.layer is not None and f.layer < len(origins)
            else f for f in findings]


def kept_or_scanned(image_id: str) -> bytes | None:
    """What `imgkit attest` attaches: the scan kept for the image, as cosign's vuln
    predicate; in a project that gates on scans (it names vulnerability_db), one made now
    when none is kept. Its findings are printed; whether it passed travels in the predicate,
    for publish, promote and check-signed to hold."""
    kept = record.vuln_predicate(image_id)
    if kept is None and scan_required():
        scan(image=image_id)
        kept = record.vuln_predicate(image_id)
    return kept


def matrix_distros() -> set[str]:
    """The distributions the project's images stand on (none where it has no matrix)."""
    from ..matrix.load import load_plan
    try:
        plan = load_plan(selection_from())
    except (UsageError, SpecError, CompatError):     # no matrix here, or one that does not load
        return set()
    return {t.os_release.distro for t in plan.targets if t.os_release is not None}

