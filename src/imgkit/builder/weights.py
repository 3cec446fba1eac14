"""What images weigh: the bytes each adds to its parent, the families' size budgets, and
the steps that weigh most (what to look at when a budget is exceeded)."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable

from ..budget import Budget
from ..engine import Engine, Step
from ..render.stamp import Stamp
from .outcome import BUILT, UP_TO_DATE, Result


@dataclass(frozen=True)
class Overrun:
    tag: str
    size: int
    budget: Budget


@dataclass(frozen=True)
class Layer:
    size: int
    instruction: str
    own: bool             # made by this image's own build, not inherited from its parent


def with_added(results: list[Result], stamps: list[Stamp],
               size_of: Callable[[str], int | None]) -> list[Result]:
    """Each image's size less its parent's (or its base OS image's)."""
    sizes = {r.tag: r.size for r in results if r.size}
    by_tag = {s.tag: s for s in stamps}
    out = []
    for result in results:
        stamp = by_tag[result.tag]
        parent = stamp.parent or stamp.base
        below = sizes.get(parent) if parent else 0
        if below is None and parent is not None:
            below = size_of(parent)
        out.append(replace(result, added=max(0, result.size - below))
                   if result.size and below is not None else result)
    return out


def overruns(results: list[Result], stamps: list[Stamp]) -> list[Overrun]:
    """Images (built or up to date) heavier than their family allows."""
    budgets = {s.tag: s.budget for s in stamps if s.budget is not None}
    return [Overrun(r.tag, r.size, budgets[r.tag]) for r in results
            if r.tag in budgets and r.status in (BUILT, UP_TO_DATE)
            and r.size > budgets[r.tag].size]


def without_build_args(text: str) -> str:
    """A RUN's history entry without the build arguments its builder records before the
    command (`|1 SOURCE_DATE_EPOCH=... /bin/sh -c ...`; BuildKit's after `RUN `)."""
    head = "RUN " if text.startswith("RUN |") else ""
    count = re.match(r"\|(\d+) ", text[len(head):])
    if count is None:
        return text
    return head + text[len(head) + count.end():].split(" ", int(count.group(1)))[-1]


def instruction(created_by: str) -> str:
    """The Dockerfile line behind a history entry (the classic builder records a RUN as
    `/bin/sh -c ...`, after its build arguments, and other steps as `/bin/sh -c #(nop) ...`)."""
    text = without_build_args(" ".join(created_by.split()))
    if text.startswith("/bin/sh -c #(nop) "):
        return text[len("/bin/sh -c #(nop) "):]
    if text.startswith("/bin/sh -c "):
        return "RUN " + text[len("/bin/sh -c "):]
    return text


def layers(engine: Engine, ref: str, parent: str | None) -> list[Layer]:
    """Every step of `ref`, oldest first, marked own when its parent's history lacks it."""
    steps: list[Step] = engine.history(ref)
    inherited = len(engine.history(parent)) if parent and engine.image(parent) else 0
    return [Layer(s.size, instruction(s.instruction), i >= inherited) for i, s in enumerate(steps)]


def heaviest(all_layers: list[Layer], count: int) -> list[Layer]:
    return sorted((layer for layer in all_layers if layer.size), key=lambda x: -x.size)[:count]
