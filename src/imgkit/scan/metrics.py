"""A scan as metrics, in Prometheus' text format, written and pushed as a verdict's are
(verify/metrics.py): how many known vulnerabilities an image holds by severity and what the
gate made of each (fail, waived, below the threshold), whether it passed, and how old the
advisory database was. Every severity and verdict is a series, zeros included, so an alert
on `imgkit_scan_findings{severity="critical",verdict="fail"} > 0` sees the count fall back."""
from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from prometheus_client import CollectorRegistry

from ..verify.metrics import Series, is_pushgateway, node_name, push_registry, write_registry
from .findings import LEVELS, Scan
from .gate import BELOW, FAILED, WAIVED, Decision

PREFIX = JOB = "imgkit_scan"


def registry_of(scan: Scan, decision: Decision, threshold: str, database_age_days: int | None,
                *, now: float | None = None) -> CollectorRegistry:
    series = Series()
    image = {"image": scan.image}
    series.set(f"{PREFIX}_passed", "1 when no finding or waiver failed the gate at fail_on",
               {**image, "fail_on": threshold}, float(not decision.failed))
    counts = Counter((j.finding.level, j.verdict) for j in decision.judged)
    for level in (*LEVELS, "unknown"):
        for verdict in (FAILED, WAIVED, BELOW):
            series.set(f"{PREFIX}_findings", "Known vulnerabilities in the image, by severity "
                       "and what the gate made of each (fail, waived, below the threshold)",
                       {**image, "severity": level, "verdict": verdict},
                       counts[(level, verdict)])
    if database_age_days is not None:
        series.set(f"{PREFIX}_database_age_days", "How old the advisory database's newest "
                   "file was when the image was scanned", image, database_age_days)
    series.set(f"{PREFIX}_timestamp_seconds", "When the scan ended (Unix time)", image,
               now if now is not None else time.time())
    series.set(f"{PREFIX}_info", "The image id scanned and the scanner that scanned it",
               {**image, "image_id": scan.image_id, "scanner": scan.scanner}, 1)
    return series.registry


def send_scan_metrics(where: str, scan: Scan, decision: Decision, threshold: str,
                      database_age_days: int | None) -> None:
    """Into a file, replaced whole, or to a Pushgateway (an http(s) URL), grouped by image
    and host as a verdict is."""
    registry = registry_of(scan, decision, threshold, database_age_days)
    if is_pushgateway(where):
        push_registry(where, JOB, registry, {"image": scan.image, "Hostname": node_name()},
                      f"the scan ({'FAILED' if decision.failed else 'passed'})")
    else:
        write_registry(Path(where), registry)
