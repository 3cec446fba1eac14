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


OS_ECOSYSTEMS = ("Debian", "Ubuntu")


def show(scan: Scan, decision: Decision, threshold: str) -> None:
    """The findings and the verdict on stdout; what to do next and the warnings on stderr."""
    for line in lines(scan, decision, threshold):
        print(line, flush=True)
    for line in next_steps(decision):
        stderr_line(line)
    warn_unused(decision)


def next_steps(decision: Decision) -> list[str]:
    """What to do about the failing findings, by kind: a distro package's fix comes with a
    rebuild of the image whose layer installed it, on the distro's current packages (the
    build is otherwise up to date, and skipped); a Python package's with a newer pin;
    one nothing fixes yet, or a vendored copy, with a waiver."""
    failing = [j.finding for j in decision.judged if j.verdict == FAILED]
    distro = sorted({f.origin for f in failing if f.fixed and not f.vendored
                     and f.ecosystem.startswith(OS_ECOSYSTEMS)})
    pinned = sorted({f.package for f in failing if f.fixed and not f.vendored
                     and not f.ecosystem.startswith(OS_ECOSYSTEMS)})
    unfixed = sorted({f.id for f in failing if not f.fixed or f.vendored})
    out = []
    for origin in distro:
        where = (f"imgkit build --force --keep-parents --only '{origin}'" if ":" in origin
                 else "imgkit build --force --keep-parents --only IMAGE (the image that installed it)")
        out.append(f"next: the distro's fix comes with a rebuild on its current packages: `{where}`, "
                   "then `imgkit build` for the images above it (with locks: `imgkit lock` first)")
    if pinned:
        out.append(f"next: raise the pin of {', '.join(pinned)} to a fixed version (the family's "
                   "packages, or `venv:` for the venv's own), then build")
    if unfixed:
        out.append(f"next: {', '.join(unfixed)}: no fix reaches this image yet; waive it with a "
                   "reason and an expiry in images/vulnerabilities.yaml (docs/vulnerabilities.md)")
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
