"""The `exclude:` entries that leave a family's impossible points out: the fewest axes, the
fewest entries, and never a point that could be built. One entry per point sent a team back
for each of them in turn: `unknown torch version '2.9.1'` on four points is one entry,
`{framework_version: "2.9.1"}`. Pure logic over the family's points."""
from __future__ import annotations

import itertools
from typing import Any, Collection, Sequence


def exclude_entries(points: Sequence[Any], impossible: Collection[Any],
                    every: Sequence[Any]) -> list[dict[str, str]]:
    """Entries that leave out each of `points` and only points in `impossible`, over the
    fewest of the axes that vary across `every` (the family's points); [] where none varies."""
    varying = [axis for axis in vars(every[0])
               if len({getattr(point, axis) for point in every}) > 1]
    for size in range(1, len(varying) + 1):
        best: tuple[tuple[str, ...], list[tuple[str, ...]]] | None = None
        for axes in itertools.combinations(varying, size):
            entries = list(dict.fromkeys(_values(point, axes) for point in points))
            named = set(entries)
            if all(point in impossible for point in every if _values(point, axes) in named) \
                    and (best is None or len(entries) < len(best[1])):
                best = (axes, entries)
        if best is not None:
            return [dict(zip(best[0], entry)) for entry in best[1]]
    return []


def _values(point: Any, axes: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(getattr(point, axis) for axis in axes)


def written(entries: list[dict[str, str]]) -> str:
    """The entries as the family file's YAML takes them: [{cuda: "12.6", ...}, ...]."""
    return "[" + ", ".join("{" + ", ".join(f'{k}: "{v}"' for k, v in entry.items()) + "}"
                           for entry in entries) + "]"
