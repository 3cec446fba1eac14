"""What a matrix costs, from the plan itself: how many images, how many shared layers, the
bytes a registry stores with and without sharing, the critical path of the build DAG, and
how long a build farm of N builders and a GPU pool of M GPUs would take.

Counts and the DAG are exact. Bytes and seconds come from a build's `--json` where it
lists an image, else from the layer model below (measured on this 2-core machine, CUDA 11.8
slice, 2026-11-23: docs/benchmarks.md), which the output says.
"""
from __future__ import annotations

import heapq
import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from .plan import Plan, lineage

# Bytes an image of each layer adds to its parent (uncompressed, as docker counts them; the
# python layer includes its base OS) and seconds to build it.
LAYER_MODEL: dict[str, tuple[int, float]] = {
    "python": (229_032_545, 18.2), "cuda": (1_900_000_000, 42.0),
    "cudnn": (1_200_000_000, 44.8), "nccl": (192_400_000, 10.8),
    "framework": (3_100_000_000, 65.5), "extension": (307_900_000, 36.2)}
VERIFY_SECONDS = 60.0    # one GPU verification, container start to verdict (a model)


@dataclass(frozen=True)
class Cost:
    added: int            # bytes its own layers add
    seconds: float        # to build it
    measured: bool        # from a build's --json, not the model


@dataclass(frozen=True)
class Stats:
    images: int
    named: int                                  # the images the families ask for
    by_layer: tuple[tuple[str, int], ...]
    shared: int                                 # images two or more images are built on
    bytes_shared: int                           # every layer stored once
    bytes_unshared: int                         # every named image stored whole
    critical_path: tuple[str, ...]
    critical_seconds: float
    build_seconds: float                        # on one builder, one image at a time
    farm: tuple[tuple[int, float], ...]         # (builders, seconds to build every image)
    gpu_pool: tuple[tuple[int, float], ...]     # (GPUs, seconds to verify every named image)
    measured: int                               # images whose numbers were measured


def measured_costs(build_json: Path) -> dict[str, tuple[int, float | None]]:
    """tag -> (bytes added, seconds or None) from `imgkit build --json FILE`."""
    try:
        images = json.loads(build_json.read_text())["images"]
        return {i["tag"]: (int(i["added"]), float(i["seconds"]) if i.get("seconds") else None)
                for i in images if i.get("added")}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--from-build {build_json}: not the JSON of `imgkit build --json` ({exc})")


def costs(plan: Plan, measured: dict[str, tuple[int, float | None]]) -> dict[str, Cost]:
    out = {}
    for target in plan.targets:
        added, seconds = LAYER_MODEL[target.layer]
        if target.tag in measured:
            got_added, got_seconds = measured[target.tag]
            out[target.tag] = Cost(got_added, got_seconds or seconds, True)
        else:
            out[target.tag] = Cost(added, seconds, False)
    return out


def _critical(plan: Plan, cost: dict[str, Cost]) -> tuple[tuple[str, ...], float]:
    """The chain (root first) whose build seconds add up to the most."""
    best: dict[str, tuple[float, tuple[str, ...]]] = {}
    for target in plan.targets:                       # parents first
        below = best.get(target.parent, (0.0, ())) if target.parent else (0.0, ())
        best[target.tag] = (below[0] + cost[target.tag].seconds, below[1] + (target.tag,))
    seconds, path = max(best.values(), default=(0.0, ()))
    return path, seconds


def makespan(plan: Plan, cost: dict[str, Cost], builders: int) -> float:
    """Seconds for `builders` machines to build the plan, parents before children, the
    longest remaining chain first (list scheduling)."""
    children: dict[str, list[str]] = {t.tag: [] for t in plan.targets}
    for target in plan.targets:
        if target.parent in children:
            children[target.parent].append(target.tag)
    rank: dict[str, float] = {}
    for target in reversed(plan.targets):             # children first
        rank[target.tag] = cost[target.tag].seconds + max(
            (rank[c] for c in children[target.tag]), default=0.0)
    ready = [(-rank[t.tag], t.tag) for t in plan.targets if t.parent not in children]
    heapq.heapify(ready)
    running: list[tuple[float, str]] = []
    now = 0.0
    while ready or running:
        while ready and len(running) < builders:
            _, tag = heapq.heappop(ready)
            heapq.heappush(running, (now + cost[tag].seconds, tag))
        now, done = heapq.heappop(running)
        for child in children[done]:
            heapq.heappush(ready, (-rank[child], child))
    return now


def stats(plan: Plan, measured: dict[str, tuple[int, float | None]] | None = None,
          builders: tuple[int, ...] = (1, 4, 16), gpus: tuple[int, ...] = (1, 8)) -> Stats:
    cost = costs(plan, measured or {})
    by_tag = {t.tag: t for t in plan.targets}
    children: dict[str, int] = {}
    for target in plan.targets:
        if target.parent in by_tag:
            children[target.parent] = children.get(target.parent, 0) + 1

    def whole(tag: str) -> int:
        return sum(cost[at.tag].added for at in lineage(by_tag[tag], by_tag))
    layers: dict[str, int] = {}
    for target in plan.targets:
        layers[target.layer] = layers.get(target.layer, 0) + 1
    path, seconds = _critical(plan, cost)
    named = len(plan.finals)
    return Stats(
        images=len(plan.targets), named=named, by_layer=tuple(layers.items()),
        shared=sum(1 for n in children.values() if n >= 2),
        bytes_shared=sum(c.added for c in cost.values()),
        bytes_unshared=sum(whole(tag) for tag in plan.finals),
        critical_path=path, critical_seconds=seconds,
        build_seconds=sum(c.seconds for c in cost.values()),
        farm=tuple((n, makespan(plan, cost, n)) for n in builders),
        gpu_pool=tuple((m, -(-named // m) * VERIFY_SECONDS) for m in gpus),
        measured=sum(1 for c in cost.values() if c.measured))
