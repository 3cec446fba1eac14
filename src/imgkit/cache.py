"""Where imgkit keeps what it may forget: the verdict tickets (verdicts/) and whole verdicts
(verdict-files/), the no-op build's cache (noop/) and the zstd layers published
(zstd-layers/). $IMGKIT_CACHE_DIR, else $XDG_CACHE_HOME/imgkit, else ~/.cache/imgkit. Only
os at import: the no-op build's replay (builder/noopcache.py) reads it."""
from __future__ import annotations

import os

TYPE_CHECKING = False   # typing's own costs the no-op build its import
if TYPE_CHECKING:
    from pathlib import Path


def cache_root() -> str:
    if os.environ.get("IMGKIT_CACHE_DIR"):
        return os.environ["IMGKIT_CACHE_DIR"]
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "imgkit")


def cache_dir() -> Path:
    from pathlib import Path
    return Path(cache_root())
