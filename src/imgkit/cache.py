"""Where imgkit keeps what it may forget: the plan cache (plans/), the verdict tickets
(verdicts/) and whole verdicts (verdict-files/), and the zstd layers published
(zstd-layers/). $IMGKIT_CACHE_DIR, else $XDG_CACHE_HOME/imgkit, else ~/.cache/imgkit."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    if os.environ.get("IMGKIT_CACHE_DIR"):
        return Path(os.environ["IMGKIT_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "imgkit"


def write_whole(path: Path, text: str) -> None:
    """Write a cache file so that readers (another imgkit at the same time) see the old file
    or the new one, never half of it. Raises OSError as open() does."""
    import tempfile  # here: the no-op build imports this module, not this
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as out:
        out.write(text)
    os.replace(out.name, path)
