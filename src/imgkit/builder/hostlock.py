"""One imgkit build at a time builds on a host; a second one waits its turn.

A build serves its settings on a fixed port of the Docker bridge (the helper in the image
knows it) and removes the stopped step containers an interrupted build left: both are safe
only while no other imgkit build runs beside it. So a build that has something to build
takes a lock every user on the host shares, and one that finds it held says so and waits
(Ctrl-C stops the wait). The kernel releases the lock when its holder ends, however it ends.
"""
from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

LOCK = Path("/tmp/imgkit-build.lock")   # /tmp, not $TMPDIR: shared by every user of the host


@contextmanager
def one_build_at_a_time(say: Callable[[str], None], lock: Path = LOCK) -> Iterator[None]:
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    except PermissionError:          # made by another user, without write access for us
        fd = os.open(lock, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say("another imgkit build is building on this host: waiting for it to finish "
                "(Ctrl-C stops waiting)")
            fcntl.flock(fd, fcntl.LOCK_EX)
            say("the other build finished: building")
        yield
    finally:
        os.close(fd)                 # releases the lock
