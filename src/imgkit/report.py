"""Human and machine output, from the result objects the core returns.

rich is imported on first use, not at start-up (~40 ms with its tables): the build summary
is plain aligned text, so a no-op `imgkit build` never loads it. Plain text also keeps
every tag whole and greppable in CI logs, where a rich table would truncate long tags.
"""
from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

if TYPE_CHECKING:  # types only: the verifier's modules stay out of a `build` run's start-up
    from rich.console import Console

    from .builder.outcome import Result
    from .builder.weights import Layer, Overrun
    from .errors import BuildFailed
    from .matrix.plan import Plan
    from .matrix.stats import Stats
    from .publish.push import Published
    from .verify.outdated import Outdated
    from .verify.verdict import Check, Verdict


@functools.lru_cache(maxsize=2)
def console(stderr: bool = False) -> Console:
    from rich.console import Console
    return Console(stderr=stderr, highlight=False, soft_wrap=True)  # whole lines in CI logs


def print_error(message: str, hint: str = "") -> None:
    """An error for a person: one paragraph and its hint, never a traceback."""
    from rich.markup import escape
    err = console(stderr=True)
    # messages quote user input ("[/namespace]" is text, not a style)
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True)
    if hint:
        err.print(f"  hint: {hint}", highlight=False, markup=False)


def stderr_line(line: str) -> None:
    """A progress line (build, publish, promote, export), whole and unstyled."""
    console(stderr=True).print(line, highlight=False, markup=False)


def append_step_summary(markdown: str) -> None:
    """Add to the CI job's summary page ($GITHUB_STEP_SUMMARY) when there is one."""
    import os
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a") as out:
            out.write(markdown)


class PushBars:
    """A bar per image being pushed (bytes of the layers the registry lacked), on stderr
    when it is a terminal; nothing in CI logs, where the progress lines say enough."""

    def __init__(self) -> None:
        self.layers: dict[str, dict[str, tuple[int, int]]] = {}   # image -> layer -> (sent, size)
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> PushBars:
        err = console(stderr=True)
        if err.is_terminal:
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn
            self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                      DownloadColumn(), TransferSpeedColumn(), console=err)
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def sent(self, image: str) -> tuple[int, int]:
        """(bytes sent, bytes to send) for the image so far."""
        layers = self.layers.get(image, {}).values()
        return sum(s for s, _ in layers), sum(t for _, t in layers)

    def update(self, image: str, layer: str, sent: int, size: int) -> None:
        self.layers.setdefault(image, {})[layer] = (sent, size)
        if self._progress is None:
            return
        if image not in self._tasks:
            self._tasks[image] = self._progress.add_task(f"pushing {image}", total=None)
        done, total = self.sent(image)
        self._progress.update(self._tasks[image], completed=done, total=total)


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit in ("B", "KB") else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


def columns(header: tuple[str, ...], rows: Sequence[tuple[str, ...]],
            right: frozenset[int] = frozenset()) -> list[str]:
    """Aligned plain-text columns, a rule under the header; no cell is ever cut."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        cells = [cell.rjust(w) if i in right else cell.ljust(w)
                 for i, (cell, w) in enumerate(zip(row, widths))]
        return "  ".join(cells).rstrip()

    return [line(header), line(tuple("-" * w for w in widths)), *(line(row) for row in rows)]


def plan_listing(plan: Plan) -> str:
    """The matrix, parents first, one whole line per image."""
    rows: list[tuple[str, ...]]
    if all(t.platforms == ("linux/amd64",) for t in plan.targets):
        rows = [(t.tag, t.layer, t.parent or t.base or "") for t in plan.targets]
        head: tuple[str, ...] = ("tag", "layer", "parent")
    else:                                   # a multi-platform matrix says which is which
        rows = [(t.tag, t.layer, t.parent or t.base or "", ",".join(t.platforms))
                for t in plan.targets]
        head = ("tag", "layer", "parent", "platforms")
    return "\n".join([f"imgkit matrix: {len(rows)} images (parents first)",
                      *columns(head, rows)])


def print_plan(plan: Plan) -> None:
    print(plan_listing(plan), flush=True)


def plan_document(plan: Plan) -> dict[str, object]:
    return {"images": [
        {"tag": t.tag, "layer": t.layer, "parent": t.parent, "base": t.base, "cuda": t.cuda,
         "final": t.tag in plan.finals, "components": dict(t.components),
         "packages": list(t.packages), "platforms": list(t.platforms)} for t in plan.targets]}


def plan_json(plan: Plan) -> str:
    import json
    return json.dumps(plan_document(plan), indent=1)


def _duration(seconds: float) -> str:
    minutes = seconds / 60
    return f"{seconds:.0f} s" if minutes < 2 else (f"{minutes:.0f} min" if minutes < 120
                                                    else f"{minutes / 60:.1f} h")


def stats_listing(stats: Stats) -> str:
    """`imgkit list --stats`: what the matrix costs."""
    gb = 1e9
    lines = [
        f"images: {stats.images} ({', '.join(f'{n} {layer}' for layer, n in stats.by_layer)}); "
        f"named by families: {stats.named}",
        f"shared layers: {stats.shared} image{'s are' if stats.shared != 1 else ' is'} built on "
        "by two or more",
        f"bytes stored: {stats.bytes_shared / gb:.1f} GB with sharing, "
        f"{stats.bytes_unshared / gb:.1f} GB if every named image stood alone "
        f"(ratio {stats.bytes_shared / max(stats.bytes_unshared, 1):.2f}; uncompressed)",
        f"build: {_duration(stats.build_seconds)} on one builder, one image at a time; critical "
        f"path {_duration(stats.critical_seconds)} over {len(stats.critical_path)} images "
        f"({' -> '.join(stats.critical_path)})",
        "build farm: " + ", ".join(f"{n} builder{'s' if n > 1 else ''} {_duration(s)}"
                                   for n, s in stats.farm),
        "GPU pool (verify every named image): " + ", ".join(
            f"{m} GPU{'s' if m > 1 else ''} {_duration(s)}" for m, s in stats.gpu_pool),
        f"numbers measured for {stats.measured} of {stats.images} images, the rest from "
        "imgkit's layer model (matrix/stats.py)",
    ]
    return "\n".join(lines)


def stats_json(stats: Stats) -> dict[str, object]:
    import dataclasses
    return dataclasses.asdict(stats)


def build_json(results: list[Result], seconds: float) -> str:
    import json
    return json.dumps({"seconds": round(seconds, 2), "images": [
        {"tag": r.tag, "id": r.image_id or None, "status": r.status, "size": r.size or None,
         "added": r.added or None,
         "seconds": round(r.seconds, 2) if r.seconds else None, "reason": r.reason or None}
        for r in results]}, indent=1)


def tally(statuses: Iterable[str]) -> str:
    """"2 built, 1 up-to-date", in the order the statuses first appear."""
    counts: dict[str, int] = {}
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in counts.items())


def build_summary(results: list[Result], seconds: float) -> str:
    """The build summary as aligned plain text: one row per image, tags never cut."""
    header = ("tag", "status", "size", "adds", "seconds", "note")
    rows = [(r.tag, r.status, human_size(r.size) if r.size else "",
             human_size(r.added) if r.added else "",
             f"{r.seconds:.1f}" if r.seconds else "", r.reason[:60]) for r in results]
    total = tally(r.status for r in results)
    return "\n".join([f"imgkit build: {len(results)} images in {seconds:.1f} s ({total or 'nothing to do'})",
                      *columns(header, rows, right=frozenset({2, 3, 4}))])


def print_build_summary(results: list[Result], seconds: float) -> None:
    print(build_summary(results, seconds), file=sys.stdout, flush=True)


def size_listing(image: str, size: int, parent: str | None, parent_size: int,
                 top: list[Layer]) -> str:
    head = f"{image}: {human_size(size)}"
    if parent:
        head += f"; its own layers add {human_size(size - parent_size)} to {parent} " \
                f"({human_size(parent_size)})"
    rows = [(human_size(layer.size), "own" if layer.own else "parent",
             _flat(layer.instruction)[:120]) for layer in top]
    return "\n".join([head, *columns(("size", "layer", "step"), rows, right=frozenset({0}))])


def size_json(image: str, size: int, parent: str | None, parent_size: int,
              steps: list[Layer]) -> str:
    import json
    return json.dumps({"image": image, "size": size, "parent": parent,
                       "added": size - parent_size if parent else size,
                       "steps": [{"size": s.size, "own": s.own, "instruction": s.instruction}
                                 for s in steps]}, indent=1)


def print_overrun(overrun: Overrun, heaviest: list[Layer]) -> None:
    from rich.markup import escape
    err = console(stderr=True)
    err.print(f"[bold red]error:[/] {escape(overrun.tag)} is {human_size(overrun.size)}, over its "
              f"size_budget of {human_size(overrun.budget.size)} ({escape(overrun.budget.file)})")
    err.print("  heaviest layers:", highlight=False)
    for layer in heaviest:
        origin = "own" if layer.own else "parent"
        err.print(f"  {human_size(layer.size):>9}  {origin:<6}  {_flat(layer.instruction)[:100]}",
                  highlight=False, markup=False)


def outdated_line(result: Outdated) -> str:
    """One image's waiting updates, whole on one line (a CI log keeps it)."""
    security, other = result.security, [u for u in result.apt if not u.security]
    parts = [f"{len(security)} security update{'s' if len(security) != 1 else ''} waiting"
             + (": " + ", ".join(f"{u.package} {u.installed} -> {u.available}" for u in security)
                if security else ""),
             f"{len(other)} other package update{'s' if len(other) != 1 else ''}",
             f"{len(result.pip)} newer patch release{'s' if len(result.pip) != 1 else ''}"
             + (": " + ", ".join(f"{p.name} {p.installed} -> {p.newest_patch}" for p in result.pip)
                if result.pip else "")]
    if result.base_created:
        parts.append(f"base from {result.base_created} ({result.base_days} days old"
                     + (f", its mirror's Release of {result.base_release})" if result.base_release
                        else ")"))
    return f"{'OUTDATED' if security else 'ok'}  {result.image}: " + "; ".join(parts)


def print_outdated(result: Outdated) -> None:
    print(outdated_line(result), flush=True)


def outdated_json(results: Sequence[Outdated]) -> str:
    import dataclasses
    import json
    return json.dumps([{**dataclasses.asdict(r), "security": [dataclasses.asdict(u) for u in r.security]}
                       for r in results], indent=1)


def print_build_failure(error: BuildFailed) -> None:
    out = console()
    out.print(f"\n[bold red]{error.tag}[/] failed at {error.step}: {error.reason}")
    for line in error.log_tail[-15:]:
        out.print(f"  | {line}", markup=False)


# -- verification ------------------------------------------------------------------------
VERDICT_STYLE = {"pass": "green", "fail": "bold red", "warn": "yellow", "skip": "yellow",
                 "info": "dim"}


def print_verdict(verdict: Verdict, *, terminal: bool | None = None) -> None:
    """In a terminal, a table; elsewhere (a CI log) one whole line per check, never cut."""
    if terminal if terminal is not None else sys.stdout.isatty():
        _print_table(verdict)
    else:
        print("\n".join([*verdict_lines(verdict), verdict_summary(verdict)]), flush=True)


def write_verdict(verdict: Verdict, *, json_file: Path | None = None, junit_file: Path | None = None,
                  markdown_file: Path | None = None) -> None:
    """Every form of the verdict the user asked for: the table or lines on stdout, JSON,
    JUnit and Markdown files, and the CI job's summary."""
    print_verdict(verdict)
    if json_file is not None:
        json_file.write_text(verdict_json(verdict))
    if junit_file is not None:
        junit_file.write_text(verdict_junit(verdict))
    if markdown_file is not None:
        markdown_file.write_text(verdict_markdown(verdict))
    append_step_summary(verdict_markdown(verdict))


def _print_table(verdict: Verdict) -> None:
    from rich.table import Table
    out = console()
    table = Table(title=f"imgkit verify {verdict.image}", show_lines=False)
    for column in ("check", "expected", "measured", "verdict", "diagnosis"):
        table.add_column(column, overflow="fold")
    for c in verdict.checks:
        style = VERDICT_STYLE.get(c.verdict, "")
        table.add_row(c.name, c.expected, c.measured, f"[{style}]{_label(c)}[/]", c.diagnosis)
    out.print(table)
    colour = "bold red" if verdict.failed else "bold yellow" if not verdict.gpu_checked else "bold green"
    head, _, rest = verdict_summary(verdict).partition(":")
    out.print(f"[{colour}]{head}[/]:{rest}", markup=True, highlight=False)


def _label(check: Check) -> str:
    return check.verdict if check.required or check.verdict != "fail" else "fail (optional)"


def _flat(text: str) -> str:
    return " ".join(text.split())


def verdict_lines(verdict: Verdict) -> list[str]:
    """One line per check: verdict, name, expected, measured, diagnosis."""
    lines = [f"imgkit verify {verdict.image} ({verdict.image_id[:19]})"]
    for c in verdict.checks:
        line = (f"{_label(c):<5} {c.name}  expected: {_flat(c.expected) or '-'}  "
                f"measured: {_flat(c.measured) or '-'}")
        lines.append(line + (f"  diagnosis: {_flat(c.diagnosis)}" if c.diagnosis else ""))
    return lines


def verdict_summary(verdict: Verdict) -> str:
    failed = verdict.failed
    if failed:
        who = "the host" if verdict.host_failure else "the image"
        return (f"FAILED: {len(failed)} required check(s); fix {who} first: "
                + ", ".join(c.name for c in failed))
    if not verdict.gpu_checked:
        return "PASSED without a GPU: the GPU was NOT verified (--gpus none)"
    return "PASSED: every required check"


def verdict_markdown(verdict: Verdict) -> str:
    """A Markdown table of the verdict (GitHub's job summary renders it)."""
    def cell(text: str) -> str:
        return _flat(text).replace("|", "\\|") or " "
    rows = [f"### imgkit verify `{verdict.image}`", "", f"**{verdict_summary(verdict)}**",
            f"(image `{verdict.image_id}`)", "",
            "| check | expected | measured | verdict | diagnosis |", "|---|---|---|---|---|"]
    rows += [f"| {cell(c.name)} | {cell(c.expected)} | {cell(c.measured)} | {cell(_label(c))} | "
             f"{cell(c.diagnosis)} |" for c in verdict.checks]
    return "\n".join(rows) + "\n"


def verdict_json(verdict: Verdict) -> str:
    import json
    from dataclasses import asdict
    doc = {"image": verdict.image, "image_id": verdict.image_id, "passed": verdict.passed,
           "gpu_checked": verdict.gpu_checked, "gpu_verified": verdict.gpu_verified,
           "host_failure": verdict.host_failure, "checks": [asdict(c) for c in verdict.checks],
           "facts": verdict.facts.model_dump(mode="json") if verdict.facts else None}
    return json.dumps(doc, indent=1, sort_keys=True, default=str)


def verdict_junit(verdict: Verdict) -> str:
    import xml.etree.ElementTree as ET
    suite = ET.Element("testsuite", name=f"imgkit verify {verdict.image}",
                       tests=str(len(verdict.checks)),
                       failures=str(sum(c.verdict == "fail" and c.required for c in verdict.checks)),
                       skipped=str(sum(c.verdict == "skip" for c in verdict.checks)))
    for c in verdict.checks:
        case = ET.SubElement(suite, "testcase", classname=verdict.image, name=c.name)
        if c.verdict == "fail" and c.required:
            failure = ET.SubElement(case, "failure", message=c.diagnosis or c.measured)
            failure.text = f"expected {c.expected}; measured {c.measured}"
        elif c.verdict == "skip":
            ET.SubElement(case, "skipped", message=c.diagnosis)
        ET.SubElement(case, "system-out").text = f"{c.verdict}: {c.measured}"
    return ET.tostring(suite, encoding="unicode")


# -- publishing --------------------------------------------------------------------------
def publish_summary(results: list[Published], seconds: float) -> str:
    """One row per image and destination: where it went, its digest, what points at it."""
    rows = [(r.image, r.destination, r.status, r.digest, ", ".join(r.tags), r.detail)
            for r in results]
    total = tally(r.status for r in results)
    return "\n".join([f"imgkit publish: {len(results)} in {seconds:.1f} s ({total or 'nothing'})",
                      *columns(("image", "destination", "status", "digest", "tags", "note"), rows)])


def publish_json(results: list[Published], seconds: float) -> str:
    import dataclasses
    import json
    return json.dumps({"seconds": round(seconds, 2), "published": [
        {**dataclasses.asdict(r), "reference": r.reference or None} for r in results]}, indent=1)


def write_published(results: list[Published], seconds: float, json_file: Path | None) -> None:
    """The publish/promote summary on stdout, as JSON when asked, and as the job summary."""
    print(publish_summary(results, seconds), flush=True)
    if json_file is not None:
        json_file.write_text(publish_json(results, seconds))
    append_step_summary(publish_markdown(results))


def publish_markdown(results: list[Published]) -> str:
    def cell(text: str) -> str:
        return _flat(text).replace("|", "\\|")
    lines = ["### imgkit publish", "", "| image | destination | status | digest | tags | note |",
             "|---|---|---|---|---|---|"]
    lines += [f"| `{r.image}` | `{r.destination}` | {r.status} | `{r.digest}` | "
              f"{cell(', '.join(r.tags))} | {cell(r.detail)} |" for r in results]
    return "\n".join(lines) + "\n\n"
