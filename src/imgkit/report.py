"""Human and machine output, from the result objects the core returns."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from .build import Result
from .errors import BuildFailed
from .plan import Plan

out = Console(highlight=False)
STATUS_STYLE = {"built": "green", "up-to-date": "green", "would-build": "cyan",
                "failed": "bold red", "skipped": "yellow", "cancelled": "yellow"}


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit in ("B", "KB") else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


def print_plan(plan: Plan) -> None:
    table = Table(title="imgkit matrix (parents first)")
    for column in ("tag", "layer", "parent"):
        table.add_column(column)
    for t in plan.targets:
        table.add_row(t.tag, t.layer, t.parent or t.base or "")
    out.print(table)


def print_build_summary(results: list[Result], seconds: float) -> None:
    table = Table(title=f"imgkit build: {len(results)} images in {seconds:.0f} s")
    for column in ("tag", "status", "size", "seconds", "note"):
        table.add_column(column, justify="right" if column in ("size", "seconds") else "left")
    for r in results:
        style = STATUS_STYLE.get(r.status, "")
        table.add_row(r.tag, f"[{style}]{r.status}[/]", human_size(r.size) if r.size else "",
                      f"{r.seconds:.1f}" if r.seconds else "", r.reason[:60])
    out.print(table)


def print_build_failure(error: BuildFailed) -> None:
    out.print(f"\n[bold red]{error.tag}[/] failed at {error.step}: {error.reason}")
    for line in error.log_tail[-15:]:
        out.print(f"  | {line}", markup=False)
