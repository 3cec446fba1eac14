"""Scratch folders for what imgkit writes whole before a tool reads it (an image saved for
its scanner, layers compressed for a push): in TMPDIR, as Python's tempfile chooses it, and
checked for room first. /tmp is memory on Debian 13, Fedora and Arch (a tmpfs of half the
RAM), where a 7 GB image does not fit: too little room, or a folder that fills on the way,
is the host's fault (exit 3) saying where to point TMPDIR, never a traceback."""
from __future__ import annotations

import contextlib
import errno
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from .console import human_size
from .errors import HostError

HINT = ("point TMPDIR at a folder on a disk with room (e.g. TMPDIR=/var/tmp): /tmp is memory "
        "on some systems")


@contextlib.contextmanager
def scratch(prefix: str, needs: int, what: str) -> Iterator[Path]:
    """A folder that is removed afterwards; `needs`: the bytes `what` (words for a message:
    "saving the image for the scanner") will write there, at least (0: not known)."""
    where = Path(tempfile.gettempdir())
    free = shutil.disk_usage(where).free
    if needs > free:
        raise HostError(f"{what} needs about {human_size(needs)} in {where}, which has "
                        f"{human_size(free)} free", hint=HINT)
    try:
        with tempfile.TemporaryDirectory(prefix=prefix) as folder:
            yield Path(folder)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise HostError(f"{what}: {where} ran out of room ({exc.strerror})", hint=HINT) from None
