"""Where imgkit keeps what it may forget: the plan cache (plans/) and the verdict tickets
(verdicts/). $IMGKIT_CACHE_DIR, else $XDG_CACHE_HOME/imgkit, else ~/.cache/imgkit."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    if os.environ.get("IMGKIT_CACHE_DIR"):
        return Path(os.environ["IMGKIT_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "imgkit"
