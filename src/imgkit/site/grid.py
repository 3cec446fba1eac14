"""The grid, as plain data: one row per image of the matrix, one cell per platform, each
the newest verdict of that image there (pure logic: the plan and the verdicts in, rows out).
An image with no verdict is shown as such, never as passed."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

from ..console import human_size
from ..matrix.targets import Plan, Target
from ..reproduction import CHECK
from ..verify.gpu_checks import gemm_shares
from .changes import Changes, changes
from .images import ImageFacts, Layer
from .inputs import Found, OutdatedRecord, VerdictFile
from .locks import LockView
from .scans import ScanView
from .signatures import Signed

PASSED, UNVERIFIED, FAILED, NONE = "passed", "gpu-unverified", "failed", "none"
ABSENT = "absent"        # the image is not made for that platform
COMPARED = 8             # the newest verdicts of an image and platform its page compares, any two


@dataclass(frozen=True)
class Cell:
    platform: str
    state: str                     # PASSED, UNVERIFIED, FAILED, NONE or ABSENT
    said: str                      # the state in words (readable without colour)
    fault: str = ""                # a failed verdict: who must act, "host" or "image"
    gpu: str = ""                  # the GPU it ran on
    tf32: str = ""                 # GEMM share of peak, e.g. "71%"
    fp16: str = ""
    verdict: VerdictFile | None = None
    changes: Changes | None = None     # since the verdict before it (of another image id)
    history: tuple[Past, ...] = ()     # every verdict of this image and platform, newest first
    comparisons: tuple[Comparison, ...] = ()   # every two of the newest COMPARED in history
    signed: Signed | None = None       # what the registry holds of it (None: not asked, or
                                       # an image no pipeline promotes)
    scan: ScanView | None = None       # the scan kept of the image id its verdict judged


@dataclass(frozen=True)
class Comparison:
    """What changed between two verdicts of the history, chosen on the page by hand."""
    older: int                     # positions in the history (0: the newest)
    newer: int
    changes: Changes


@dataclass(frozen=True)
class Past:
    """One verdict in an image's history, as the image's page lists it."""
    when: str                      # when its file was written (UTC)
    image_id: str
    said: str
    tf32: str = ""
    fp16: str = ""
    size: str = ""                 # unpacked, as the verdict recorded it


@dataclass(frozen=True)
class Updates:
    """What `imgkit outdated` found waiting for an image."""
    security: tuple[str, ...]      # "openssl 3.0.15-1~deb12u1 -> 3.0.17-1~deb12u2"
    other: int                     # the other Debian package updates
    pip: tuple[str, ...]           # newer patch releases of its Python distributions
    base_days: int | None = None

    @property
    def said(self) -> str:
        count = len(self.security)
        return f"{count} security update{'s' if count != 1 else ''}" if count else "no security updates"


@dataclass(frozen=True)
class Row:
    tag: str
    slug: str
    family: str
    layer: str
    cuda: str
    framework: str
    cells: tuple[Cell, ...]
    size: str = ""                 # what the engine here holds of it, else what its newest
                                   # verdict recorded ("" when neither says)
    built: str = ""                # the day its newest layer was made
    layers: tuple[Layer, ...] = ()
    updates: Updates | None = None     # None: `imgkit outdated` was not asked
    lock: LockView | None = None       # None: nothing of its own to lock

    @property
    def failed(self) -> int:
        return sum(c.state == FAILED for c in self.cells)


def matches(image: str, tag: str) -> bool:
    """Whether an image a verdict or an outdated report names is the matrix image `tag`:
    named by it, or by it under a registry (REGISTRY[/NAMESPACE]/TAG)."""
    return image == tag or image.endswith("/" + tag)


def is_of(verdict: VerdictFile, tag: str) -> bool:
    """Whether a verdict judged the matrix image `tag`: named by it (matches), or by its
    title, as a verify job's verdict of a staged digest is."""
    return matches(verdict.image, tag) or verdict.title == tag


def rows(plan: Plan, found: list[Found], held: dict[str, ImageFacts] | None = None,
         outdated: list[OutdatedRecord] | None = None,
         locks: dict[str, LockView] | None = None,
         signed: dict[tuple[str, str], Signed] | None = None,
         scans: dict[str, ScanView] | None = None) -> list[Row]:
    """`held`: what the engine holds of each image (image_facts), when it was asked;
    `outdated`: what `imgkit outdated` found waiting, when it was given; `locks`: each
    image's lock (lock_views); `signed`: what the registry holds of each image and
    platform (signatures.read), when it was asked; `scans`: image id -> its scan."""
    platforms = sorted({p for t in plan.targets for p in t.platforms})
    history: dict[tuple[str, str], list[Found]] = {}
    for target in plan.targets:
        for item in found:
            if is_of(item.verdict, target.tag):
                key = (target.tag, item.verdict.platform or target.platforms[0])
                history.setdefault(key, []).append(item)
    for items in history.values():
        items.sort(key=lambda item: item.written, reverse=True)     # newest first
    laid_out = [replace(_with_facts(_row(t, platforms, history), (held or {}).get(t.tag)),
                        lock=(locks or {}).get(t.tag)) for t in plan.targets]
    if signed is not None:
        laid_out = [replace(row, cells=tuple(replace(c, signed=signed.get((row.tag, c.platform)))
                                             for c in row.cells)) for row in laid_out]
    if scans:
        laid_out = [replace(row, cells=tuple(
            replace(c, scan=scans.get(c.verdict.image_id)) if c.verdict else c
            for c in row.cells)) for row in laid_out]
    if outdated is None:
        return laid_out
    return [replace(row, updates=next((updates_of(r) for r in reversed(outdated)
                                       if matches(r.image, row.tag)), None)) for row in laid_out]


def updates_of(record: OutdatedRecord) -> Updates:
    from ..lock.outdated import AptUpdate
    security = record.security or tuple(
        u for u in record.apt if AptUpdate(u.package, u.suite, u.installed, u.available).security)
    return Updates(tuple(f"{u.package} {u.installed} -> {u.available}" for u in security),
                   len(record.apt) - len(security),
                   tuple(f"{p.name} {p.installed} -> {p.newest_patch}" for p in record.pip),
                   record.base_days)


def _with_facts(row: Row, facts: ImageFacts | None) -> Row:
    if facts is None:
        recorded = next((c.verdict.size for c in row.cells if c.verdict and c.verdict.size), None)
        return replace(row, size=human_size(recorded)) if recorded else row
    built = dt.datetime.fromtimestamp(facts.created, dt.timezone.utc).date().isoformat() \
        if facts.created else ""
    return replace(row, size=human_size(facts.size), built=built, layers=facts.layers)


def _row(target: Target, platforms: list[str], history: dict[tuple[str, str], list[Found]]) -> Row:
    components = target.component_map
    framework = " ".join(filter(None, (components.get("framework"), components.get("framework_version"))))
    cells = tuple(_cell_of(history[(target.tag, p)], p) if (target.tag, p) in history
                  else Cell(p, NONE, "no verdict") if p in target.platforms
                  else Cell(p, ABSENT, "not built")
                  for p in platforms)
    return Row(target.tag, slug(target.tag), target.family, target.layer, target.cuda or "",
               framework, cells)


def _cell_of(items: list[Found], platform: str) -> Cell:
    """The newest verdict's cell, with what changed since the newest one of another image.
    Verdicts of image ids the tag has moved from are history only: with nothing else, the
    image has no verdict."""
    compared = items[:COMPARED]
    pairs = tuple(Comparison(older, newer, changes(compared[older].verdict, compared[newer].verdict))
                  for newer in range(len(compared)) for older in range(newer + 1, len(compared)))
    history = tuple(_past(item, platform) for item in items)
    at = next((n for n, item in enumerate(items) if not item.stale), None)
    if at is None:
        return Cell(platform, NONE, "no verdict (rebuilt since it was verified)", history=history,
                    comparisons=pairs)
    newest = items[at].verdict
    before = next((i.verdict for i in items[at + 1:] if i.verdict.image_id != newest.image_id), None)
    found = replace(cell(platform, newest), history=history, comparisons=pairs)
    return replace(found, changes=changes(before, newest)) if before is not None else found


def _past(item: Found, platform: str) -> Past:
    judged = cell(platform, item.verdict)
    when = dt.datetime.fromtimestamp(item.written, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
    size = item.verdict.size
    return Past(when, item.verdict.image_id, judged.said, judged.tf32, judged.fp16,
                human_size(size) if size is not None else "")


def cell(platform: str, verdict: VerdictFile) -> Cell:
    gpu, tf32, fp16 = _throughput(verdict)
    if verdict.failed:
        first = verdict.failed[0]
        who = "host" if verdict.host_failure else "image"
        return Cell(platform, FAILED, f"failed: {first.name}", who, gpu, tf32, fp16, verdict)
    # `imgkit reproduce` got this very image again from its inputs (reproduction.py)
    again = ", reproduced" if any(c.name == CHECK and c.verdict == "pass"
                                  for c in verdict.checks) else ""
    if not verdict.gpu_verified:
        return Cell(platform, UNVERIFIED, f"passed, GPU not verified{again}", "", gpu, tf32,
                    fp16, verdict)
    return Cell(platform, PASSED, f"passed{again}", "", gpu, tf32, fp16, verdict)


def _throughput(verdict: VerdictFile) -> tuple[str, str, str]:
    """The GPU a verdict made on a GPU ran on, and its GEMM TF32 and FP16 shares of peak."""
    facts = verdict.facts
    if facts is None or not verdict.gpu_checked or facts.gpu.work is None:
        return "", "", ""
    devices = facts.gpu.nvml.devices
    shares = gemm_shares(facts)
    tf32, fp16 = (f"{shares[p]:.0%}" if p in shares else "" for p in ("tf32", "fp16"))
    return (devices[0].name if devices else ""), tf32, fp16


def slug(tag: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in tag)
