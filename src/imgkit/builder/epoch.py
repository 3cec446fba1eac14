"""The build date each image is built with (SOURCE_DATE_EPOCH): the date of the base its
chain stands on (its config's: no file of it is newer), an input of the build, never the
clock. BuildKit dates the image and its history with it; pip writes hash-checked bytecode
under it; imgkit-normalise gives every file a step writes this time. So the same inputs
give the same image (docs/reproducible.md)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from ..engine import Engine
    from ..render.contexts import Context

ARG = "SOURCE_DATE_EPOCH"


def build_epochs(engine: Engine, contexts: Iterable[Context]) -> dict[str, int]:
    """tag -> the date of the base its chain stands on (followed down through the parents
    this run may rebuild, so a base made again dates everything above it). An image whose
    base the engine does not hold (a builder that pulls it itself) is left out: it builds
    undated, and says so (not reproducible)."""
    parent_of = {c.target.tag: c.target.parent or c.target.base for c in contexts}
    dates: dict[str, int | None] = {}
    out = {}
    for tag in parent_of:
        ref = parent_of[tag]
        while ref in parent_of:
            ref = parent_of[ref]
        if ref is None:
            continue
        if ref not in dates:
            info = engine.image(ref)
            dates[ref] = info.created if info is not None and info.created else None
        date = dates[ref]
        if date is not None:
            out[tag] = date
    return out
