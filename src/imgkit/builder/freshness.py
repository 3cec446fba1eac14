"""Is an image up to date? Decided from labels and layers, before any `docker build`.

An image is up to date when its tag exists, carries the input hash its rendered context
has now, and sits on its parent's current layers; an image whose parent is rebuilt is
rebuilt too. This module needs only the engine's inspect call and each image's Stamp
(what rendering made); the no-op cache (noopcache.py) keeps what it judged fresh.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import labels
from ..engine import Engine, ImageInfo
from ..options import BuildOptions
from ..render.stamp import Stamp


@dataclass(frozen=True)
class Freshness:
    why: str                  # why it must be built; "" when it is up to date
    info: ImageInfo | None    # the image the tag points at now

    @property
    def fresh(self) -> bool:
        return not self.why


def check_freshness(engine: Engine, stamps: list[Stamp],
                    seen: dict[str, ImageInfo | None] | None = None) -> dict[str, Freshness]:
    """One inspect per image (and base); `stamps` come parents first. `seen` is filled with
    every reference inspected and what it showed."""
    infos: dict[str, ImageInfo | None] = {} if seen is None else seen

    def inspect(ref: str) -> ImageInfo | None:
        if ref not in infos:
            infos[ref] = engine.image(ref)
        return infos[ref]

    out: dict[str, Freshness] = {}
    for stamp in stamps:
        current = inspect(stamp.tag)
        parent_ref = stamp.parent or stamp.base
        if current is None:
            why = "not built yet"
        elif current.labels.get(labels.INPUT_HASH) != stamp.input_hash:
            why = "inputs changed"
        elif stamp.parent in out and not out[stamp.parent].fresh:
            why = f"parent {stamp.parent} is rebuilt"
        else:
            parent = inspect(parent_ref) if parent_ref else None
            if parent is None:
                why = f"{parent_ref} is missing"
            elif current.layers[: len(parent.layers)] != parent.layers:
                why = f"{parent_ref} changed"
            else:
                why = ""
        out[stamp.tag] = Freshness(why, current)
    return out


def builds_something(options: BuildOptions, freshness: dict[str, Freshness]) -> bool:
    """Whether this run builds anything: not a dry run, and forced or something is stale."""
    return not options.dry_run and (options.force or not all(f.fresh for f in freshness.values()))
