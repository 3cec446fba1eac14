"""What rendering one image amounts to, for everything after it: the Stamp. Standard library
only: light to load wherever a build judges freshness."""
from __future__ import annotations

from dataclasses import dataclass

from ..budget import Budget


@dataclass(frozen=True)
class Stamp:
    """What the build of one image depends on: its rendered inputs and where it sits."""
    tag: str
    parent: str | None   # an image of the plan
    base: str | None     # or the base OS image (python layer only)
    input_hash: str
    # not an input: the size the image may have, checked after every build (no-op included)
    budget: Budget | None = None
