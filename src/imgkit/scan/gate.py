"""The decision on an image's findings: each one at or above the threshold fails unless a
waiver covers it; a waiver that has expired, or covers a finding a version now fixes (as
AWS's gate has it: waive what cannot be fixed, upgrade what can), fails too, unless the
finding is a copy vendored inside another package (no upgrade of its own reaches it); one
that covers nothing is a warning (it outlived its finding). Pure logic."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from ..matrix.waivers import Waiver
from .findings import LEVELS, Finding

FAILED, WAIVED, BELOW = "fail", "waived", "below"


@dataclass(frozen=True)
class Judged:
    finding: Finding
    verdict: str              # fail, waived, below (the threshold)
    why: str = ""
    waiver: Waiver | None = None


@dataclass(frozen=True)
class Decision:
    judged: tuple[Judged, ...]
    unused: tuple[Waiver, ...]        # waivers that covered no finding: warnings

    @property
    def failed(self) -> bool:
        return any(j.verdict == FAILED for j in self.judged)


def at_or_above(level: str, threshold: str) -> bool:
    """Whether a finding of `level` meets the threshold; one with no score (unknown) counts
    from medium down, never silently below a strict gate."""
    if level == "unknown":
        return LEVELS.index(threshold) <= LEVELS.index("medium")
    return LEVELS.index(level) >= LEVELS.index(threshold)


def decide(findings: list[Finding], waivers: tuple[Waiver, ...], threshold: str,
           today: dt.date) -> Decision:
    used: set[int] = set()
    judged = []
    for finding in findings:
        index, waiver = next(((i, w) for i, w in enumerate(waivers)
                              if w.covers(finding.names, finding.package, finding.ecosystem)),
                             (None, None))
        if waiver is not None and index is not None:
            used.add(index)
            judged.append(_waived(finding, waiver, today))
        elif at_or_above(finding.level, threshold):
            judged.append(Judged(finding, FAILED, f"{finding.level} (fail_on: {threshold})"))
        else:
            judged.append(Judged(finding, BELOW, f"{finding.level}, under fail_on: {threshold}"))
    unused = tuple(w for i, w in enumerate(waivers) if i not in used)
    return Decision(tuple(judged), unused)


def _waived(finding: Finding, waiver: Waiver, today: dt.date) -> Judged:
    if waiver.expires < today:
        return Judged(finding, FAILED, f"its waiver expired on {waiver.expires} "
                      f"({waiver.who}: {waiver.reason})", waiver)
    if finding.fixed and not finding.vendored:
        return Judged(finding, FAILED, f"waived, but {', '.join(finding.fixed)} fixes it now: "
                      f"upgrade {finding.package} (the waiver: {waiver.reason})", waiver)
    # a vendored copy: the package that vendors it must release the fix
    vendored = (f" (a vendored copy: {', '.join(finding.fixed)} fixes it only when the package "
                "that vendors it ships that)" if finding.fixed else "")
    return Judged(finding, WAIVED, f"waived until {waiver.expires} by {waiver.who}: "
                  f"{waiver.reason}{vendored}", waiver)
