"""What `imgkit reproduce` proved, kept for the image id it proved it of: that a build of
the same inputs with no cache gave this very image again. verify reads it back and records
it in the verdict (the `reproduced` check), so a signed verdict carries it to promote
(`--require-reproduced`) and the site. Kept beside the verdicts ($IMGKIT_CACHE_DIR, else
~/.cache/imgkit), one file per image id; a file that cannot be read counts as none."""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .cache import cache_dir
from .cachefile import write_whole

CHECK = "reproduced"     # the verdict's check that says it


@dataclass(frozen=True)
class Reproduction:
    image_id: str        # the image built again and found the same
    image: str           # its tag
    builder: str         # what built it again ("BuildKit v0.25.1, Docker engine 28.5.2")
    reproduced_at: float
    floating: tuple[str, ...] = ()   # inputs no lock pins: it holds here and now only

    def says(self) -> str:
        """The evidence, as the verdict's check measures it."""
        day = time.strftime("%Y-%m-%d", time.gmtime(self.reproduced_at))
        text = f"the same image, built again with no cache on {day} by {self.builder}"
        if self.floating:
            text += f" (unlocked: {len(self.floating)} input(s) float, so only here and then)"
        return text


def records() -> Path:
    """The folder of kept proofs, one file per image id."""
    return cache_dir() / "reproduced"


def path_of(image_id: str) -> Path:
    return records() / f"{image_id.split(':', 1)[-1]}.json"


def keep(record: Reproduction) -> None:
    write_whole(path_of(record.image_id), json.dumps(asdict(record), indent=2))


def lookup(image_id: str) -> Reproduction | None:
    """The kept proof for `image_id`, or None (never reproduced, or not readable)."""
    try:
        found = json.loads(path_of(image_id).read_text())
        record = Reproduction(**{**found, "floating": tuple(found.get("floating") or ())})
    except (OSError, ValueError, TypeError):
        return None
    return record if record.image_id == image_id else None
