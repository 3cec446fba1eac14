"""What a scan says: a whole line per finding (CI logs keep them), the summary, the
warnings, and the same as JSON."""
from __future__ import annotations

import json
from dataclasses import asdict

from ..builder.weights import without_build_args
from ..console import stderr_line
from .findings import Scan
from .gate import BELOW, FAILED, WAIVED, Decision

SIGN = {FAILED: "FAIL  ", WAIVED: "waived", BELOW: "ok    "}


def lines(scan: Scan, decision: Decision, threshold: str) -> list[str]:
    out = []
    for judged in sorted(decision.judged, key=lambda j: (j.verdict != FAILED, -(j.finding.score or 0))):
        f = judged.finding
        score = f"{f.score:.1f}" if f.score is not None else "?"
        fixed = f" -> {', '.join(f.fixed)}" if f.fixed else " (no fix yet)"
        aliases = f" ({', '.join(a for a in f.aliases if a != f.id)})" if f.aliases else ""
        where = f"  {f.path}" + (f"  layer {f.layer} of {f.origin}" if f.layer is not None else "")
        if f.step:
            where += f" ({_short(f.step)})"
        out.append(f"{SIGN[judged.verdict]} {f.level:<8} {score:>4}  {f.id}{aliases}  {f.ecosystem} "
                   f"{f.package} {f.installed}{fixed}{where}  [{judged.why}]")
    failed = sum(1 for j in decision.judged if j.verdict == FAILED)
    waived = sum(1 for j in decision.judged if j.verdict == WAIVED)
    by_level: dict[str, int] = {}
    for judged in decision.judged:
        by_level[judged.finding.level] = by_level.get(judged.finding.level, 0) + 1
    counts = ", ".join(f"{n} {level}" for level, n in sorted(by_level.items())) or "none"
    out.append(f"{'FAILED' if failed else 'PASSED'}: {scan.image} ({scan.image_id[:19]}), "
               f"{_count(len(decision.judged), 'finding')} ({counts}), {failed} failing, {waived} waived "
               f"(fail_on: {threshold}; {scan.scanner})")
    return out


def warn_unused(decision: Decision) -> None:
    for waiver in decision.unused:
        stderr_line(f"warning: the waiver of {waiver.id} ({waiver.ecosystem} {waiver.package}, "
                    f"expires {waiver.expires}) covers no finding: remove it")


def document(scan: Scan, decision: Decision, threshold: str, database: dict[str, object]) -> str:
    return json.dumps({
        "image": scan.image, "image_id": scan.image_id, "scanner": scan.scanner,
        "database": database, "fail_on": threshold, "failed": decision.failed,
        "findings": [{**asdict(j.finding), "level": j.finding.level, "verdict": j.verdict,
                      "why": j.why} for j in decision.judged],
        "unused_waivers": [w.model_dump(mode="json") for w in decision.unused]}, indent=1)


def _short(step: str, width: int = 60) -> str:
    """A build step on one line, cut to width: enough to know it (RUN pip install ...)."""
    flat = without_build_args(" ".join(step.replace(" # buildkit", "").split()))
    return flat if len(flat) <= width else flat[:width - 3] + "..."


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
