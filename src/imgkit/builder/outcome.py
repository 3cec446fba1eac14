"""What became of each image in a build: the rows of the summary and the exit code."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import BuildFailed
from .freshness import Freshness

BUILT, UP_TO_DATE, FAILED, SKIPPED, WOULD_BUILD, CANCELLED = (
    "built", "up-to-date", "failed", "skipped", "would-build", "cancelled")


@dataclass(frozen=True)
class Result:
    tag: str
    status: str
    seconds: float = 0.0
    size: int = 0
    image_id: str = ""
    added: int = 0            # bytes its own layers add to its parent's
    reason: str = ""
    error: BuildFailed | None = None


def up_to_date(tag: str, freshness: Freshness) -> Result:
    info = freshness.info
    return Result(tag, UP_TO_DATE, 0.0, info.size if info else 0, info.id if info else "")
