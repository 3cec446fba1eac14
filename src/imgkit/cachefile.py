"""Writing a file into imgkit's cache (cache.py says where it is): whole, so that another
imgkit reading at the same time sees the old file or the new one; a cache this user cannot
write is the host's fault, saying where to point IMGKIT_CACHE_DIR. Apart from cache.py,
which the no-op build's replay imports and which must stay os-only."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import HostError


def write_whole(path: Path, text: str) -> None:
    """Write a cache file so that readers (another imgkit at the same time) see the old file
    or the new one, never half of it. A cache this user cannot write (a read-only home, HOME
    a folder that does not exist, as for system users and in locked-down pods) is HostError
    saying where to point IMGKIT_CACHE_DIR."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as out:
            out.write(text)
        os.replace(out.name, path)
    except OSError as exc:
        raise HostError(f"cannot write imgkit's cache at {path.parent}: "
                        f"{exc.strerror or exc}", hint=CACHE_HINT) from None


CACHE_HINT = ("set IMGKIT_CACHE_DIR to a folder this user can write (imgkit keeps verdict "
              "tickets and scans there, which publish gates on)")
