"""What `imgkit build` and `imgkit size` print and write: the summary (one whole row per
image), a failure with its log tail, what an image weighs."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ..console import columns, console, escape, flat, human_size, tally
from ..errors import BuildFailed
from .outcome import Result

if TYPE_CHECKING:   # the weights need the engine's types: not on a no-op build's start-up
    from .weights import Layer, Overrun


def build_json(results: list[Result], seconds: float, builder: str | None = None) -> str:
    """`builder`: what built (buildx, docker), None when nothing had to be."""
    import json
    return json.dumps({"seconds": round(seconds, 2), "builder": builder, "images": [
        {"tag": r.tag, "id": r.image_id or None, "status": r.status, "size": r.size or None,
         "added": r.added or None,
         "seconds": round(r.seconds, 2) if r.seconds else None, "reason": r.reason or None}
        for r in results]}, indent=1)


def build_summary(results: list[Result], seconds: float) -> str:
    """The build summary as aligned plain text: one row per image, tags never cut."""
    return "\n".join([summary_head(results).format(seconds=seconds), *summary_rows(results)])


def summary_head(results: list[Result]) -> str:
    """The summary's first line, its time left as `{seconds}` (the no-op cache keeps it so)."""
    total = (tally(r.status for r in results) or "nothing to do").replace("{", "{{").replace("}", "}}")
    return f"imgkit build: {len(results)} images in {{seconds:.1f}} s ({total})"


def summary_rows(results: list[Result]) -> list[str]:
    """The summary's table: one row per image, tags never cut (none for no image)."""
    if not results:
        return []
    header = ("tag", "status", "size", "adds", "seconds", "note")
    rows = [(r.tag, r.status, human_size(r.size) if r.size else "",
             human_size(r.added) if r.added else "",
             f"{r.seconds:.1f}" if r.seconds else "", r.reason[:60]) for r in results]
    return columns(header, rows, right=frozenset({2, 3, 4}))


def print_build_summary(results: list[Result], seconds: float) -> None:
    print(build_summary(results, seconds), file=sys.stdout, flush=True)


def size_listing(image: str, size: int, parent: str | None, parent_size: int,
                 top: list[Layer]) -> str:
    head = f"{image}: {human_size(size)}"
    if parent:
        head += f"; its own layers add {human_size(size - parent_size)} to {parent} " \
                f"({human_size(parent_size)})"
    rows = [(human_size(layer.size), "own" if layer.own else "parent",
             flat(layer.instruction)[:120]) for layer in top]
    return "\n".join([head, *columns(("size", "layer", "step"), rows, right=frozenset({0}))])


def size_json(image: str, size: int, parent: str | None, parent_size: int,
              steps: list[Layer]) -> str:
    import json
    return json.dumps({"image": image, "size": size, "parent": parent,
                       "added": size - parent_size if parent else size,
                       "steps": [{"size": s.size, "own": s.own, "instruction": s.instruction}
                                 for s in steps]}, indent=1)


def print_overrun(overrun: Overrun, heaviest: list[Layer]) -> None:
    err = console(stderr=True)
    err.print(f"[bold red]error:[/] {escape(overrun.tag)} is {human_size(overrun.size)}, over its "
              f"size_budget of {human_size(overrun.budget.size)} ({escape(overrun.budget.file)})")
    err.print("  heaviest layers:", highlight=False)
    for layer in heaviest:
        origin = "own" if layer.own else "parent"
        err.print(f"  {human_size(layer.size):>9}  {origin:<6}  {flat(layer.instruction)[:100]}",
                  highlight=False, markup=False)


def print_build_failure(error: BuildFailed) -> None:
    out = console()
    out.print(f"\n[bold red]{error.tag}[/] failed at {error.step}: {error.reason}")
    for line in error.log_tail[-15:]:
        out.print(f"  | {line}", markup=False)
    if error.hint:
        out.print(f"  hint: {error.hint}", markup=False, highlight=False)

