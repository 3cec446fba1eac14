"""Ctrl-C as a request, not an exception.

A KeyboardInterrupt raised at an arbitrary bytecode can land inside concurrent.futures'
own locking (between two lock acquisitions, with no `with` yet to undo them) and leave a
worker unable to report its result: the build then hangs instead of stopping. While work
runs in threads, SIGINT therefore only sets an event; the scheduler notices it at a point
of its choosing, stops cleanly, and raises KeyboardInterrupt itself. A second Ctrl-C gets
an immediate exit, for whoever cannot wait for the clean stop.
"""
from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from types import FrameType
from typing import Iterator

from .errors import EXIT_INTERRUPTED


@contextmanager
def interrupt_sets(event: threading.Event) -> Iterator[None]:
    """Within the block, the first SIGINT sets `event`; a second one exits at once with
    130, abandoning the clean-up. Outside the main thread, where signals cannot be
    handled, the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        # Only flag-setting here: this runs between two bytecodes of whatever the main
        # thread was doing. Event.set takes the event's own lock, which no thread holds
        # for long. os.write, not print: print could re-enter an interrupted stderr write.
        if event.is_set():
            os.write(2, b"abandoned: build steps may still run (docker ps shows them)\n")
            os._exit(EXIT_INTERRUPTED)
        event.set()
        os.write(2, b"stopping: cleaning up (Ctrl-C again to abandon the clean-up)\n")

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def terminate_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM (a CI job cancelled) unwinds like Ctrl-C, so the same
    clean-up runs (no push tag left behind). For single-threaded work only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
