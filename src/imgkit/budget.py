"""Image sizes as the matrix declares them (`size_budget: 7.5GB`): parsed once, carried by
the plan. Standard library only."""
from __future__ import annotations

import re
from dataclasses import dataclass

SIZE_PATTERN = re.compile(r"^([0-9]{1,6}(?:\.[0-9]{1,3})?) ?([KMGT]B)$", re.I)
UNITS = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}   # decimal, as docker shows


@dataclass(frozen=True)
class Budget:
    size: int      # bytes an image may weigh
    file: str      # the family file that set it


def parse_size(text: str) -> int:
    """'7.5GB' -> 7_500_000_000."""
    match = SIZE_PATTERN.match(text.strip())
    if match is None:
        raise ValueError(text)
    return int(float(match.group(1)) * UNITS[match.group(2).upper()])
