"""What the engine says of each image the site shows, when it is here: its size, when it
was made and its layers with their sizes. Best effort: with no engine (a site made from
verdict files elsewhere) or an image not here, the site shows what the verdicts say."""
from __future__ import annotations

from dataclasses import dataclass

from ..builder.weights import instruction
from ..errors import EngineUnavailable
from ..matrix.targets import Plan

INSTRUCTION = 90         # characters of a layer's instruction shown


@dataclass(frozen=True)
class Layer:
    instruction: str
    size: int


@dataclass(frozen=True)
class ImageFacts:
    size: int
    created: int                     # seconds since the epoch (its newest layer's)
    layers: tuple[Layer, ...]        # the ones that hold bytes, oldest first


def image_facts(plan: Plan) -> dict[str, ImageFacts]:
    """tag -> what the engine holds of it (nothing for an image it lacks, or no engine)."""
    from ..engine import connect
    try:
        engine = connect()
    except EngineUnavailable:
        return {}
    found = {}
    for target in plan.targets:
        info = engine.image(target.tag)
        if info is None:
            continue
        steps = engine.history(target.tag)
        found[target.tag] = ImageFacts(
            info.size, max((s.created for s in steps), default=0),
            tuple(Layer(_short(s.instruction), s.size) for s in steps if s.size > 0))
    return found


def _short(created_by: str) -> str:
    """The Dockerfile line behind a history entry (as `imgkit size` shows it), cut short."""
    text = instruction(created_by)
    return text if len(text) <= INSTRUCTION else text[:INSTRUCTION - 1] + "…"
