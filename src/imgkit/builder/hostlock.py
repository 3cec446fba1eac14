"""Work that one imgkit at a time does on a host; a second one waits its turn.

A legacy build serves its settings on a fixed port of the Docker bridge (the helper in the
image knows it) and removes the stopped step containers an interrupted build left: both
are safe only while no other imgkit build runs beside it. So a build that has something to
build takes a lock every user on the host shares. Making a base image (mmdebstrap, debootstrap, or a
pull) is the other: two builds starting together on a fresh host would each make the same
base, and one of the two would be left untagged. One that finds the lock held says so and
waits (Ctrl-C stops the wait). The kernel releases a lock when its holder ends, however it
ends.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

LOCKS = Path("/tmp")                    # /tmp, not $TMPDIR: shared by every user of the host
LOCK = LOCKS / "imgkit-build.lock"


@contextmanager
def one_build_at_a_time(say: Callable[[str], None], lock: Path = LOCK) -> Iterator[None]:
    with _held(lock, say, "another imgkit build is building on this host: waiting for it to "
               "finish (Ctrl-C stops waiting)", "the other build finished: building"):
        yield


@contextmanager
def one_maker_of(ref: str, say: Callable[[str], None]) -> Iterator[None]:
    """Held while this process makes base image `ref`; a second maker of it waits."""
    name = hashlib.sha256(ref.encode()).hexdigest()[:16]
    with _held(LOCKS / f"imgkit-base-{name}.lock", say,
               f"another imgkit is making {ref} on this host: waiting for it (Ctrl-C stops waiting)",
               f"the other imgkit finished making {ref}"):
        yield


@contextmanager
def _held(lock: Path, say: Callable[[str], None], waiting: str, done: str) -> Iterator[None]:
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:          # made by another user, without write access for us
        fd = os.open(lock, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(waiting)
            fcntl.flock(fd, fcntl.LOCK_EX)
            say(done)
        yield
    finally:
        os.close(fd)                 # releases the lock
