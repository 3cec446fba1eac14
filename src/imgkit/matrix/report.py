"""What `imgkit list` prints and writes: the matrix parents first, and what it costs."""
from __future__ import annotations

import json

from ..console import columns
from .plan import Plan
from .stats import Stats


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
        {"tag": t.tag, "layer": t.layer, "family": t.family, "checks": t.checks,
         "parent": t.parent, "base": t.base, "cuda": t.cuda,
         "final": t.tag in plan.finals, "components": dict(t.components),
         "packages": list(t.packages), "platforms": list(t.platforms)} for t in plan.targets]}


def plan_json(plan: Plan) -> str:
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

