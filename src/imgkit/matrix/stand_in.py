"""What a broken family file would declare with its mistakes left out, so that its points
are planned in the same run as the rest (a team fixing a `workdir:` should not meet the
file's impossible combinations only on the next run).

Left out: an unknown key, a key a problem names (of `pip:`, only the entries at fault: the
rest are held to each point's stack as they will be), and nothing else. A stand-in is only
ever planned, never built: the run stops with every problem said. A version YAML read
as a number in a key that shapes the points (`cuda: [12.8]`) is taken as it was written,
as the hint tells the person to quote it. Any other problem in such a key stays: the
family is checked again, and has no stand-in while it has a problem.
"""
from __future__ import annotations

from typing import Any, Collection, Mapping, Sequence

from ..errors import SpecError
from ..yamlload import WrittenFloat

LEFT_OUT = "imgkit-left-out-"
# the keys that decide a family's points and their names: never left out
POINT_KEYS = frozenset({"family", "framework", "extends", "axes", "include", "exclude", "base",
                        "platforms", "cuda_libs", "repository", "tag", "aliases"})


def stand_in_raw(raw: Mapping[str, object], found: Sequence[SpecError],
                 known: Collection[str]) -> dict[str, object]:
    """`raw` less its unknown keys (not in `known`) and what `found` names outside the keys
    that shape its points, with those keys' numbers as written."""
    faulty: dict[str, set[int] | None] = {}      # key -> its entries at fault (None: all of it)
    for problem in found:
        name, _, index = problem.key.split(".")[0].partition("[")
        entries = faulty.get(name, set())
        if index[:-1].isdigit() and entries is not None:
            faulty[name] = entries | {int(index[:-1])}
        else:
            faulty[name] = None
    stood: dict[str, object] = {}
    for key, value in raw.items():
        entries = faulty.get(key)
        if key not in known:
            continue
        if key in POINT_KEYS:
            stood[key] = as_written(value)
        elif key not in faulty:
            stood[key] = value
        elif key == "pip" and entries and isinstance(value, list):
            # a pin of a name no index has in each bad entry's place: the others keep the
            # index the file gives them, which the plan's problems name
            stood[key] = [f"{LEFT_OUT}{i}==0" if i in entries else line
                          for i, line in enumerate(value)]
    return stood


def as_written(value: Any) -> Any:
    """`value` with each number YAML read from a version (9.10, 12.8) as its text."""
    if isinstance(value, WrittenFloat):
        return value.written
    if isinstance(value, list):
        return [as_written(v) for v in value]
    if isinstance(value, dict):
        return {k: as_written(v) for k, v in value.items()}
    return value
