"""Ctrl-C while the builder's threads work: a flag first, the default behaviour after."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from imgkit.interrupts import interrupt_sets


def ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)  # the handler runs at the main thread's next bytecode


def test_first_ctrl_c_only_sets_the_event_the_second_raises(capfd: pytest.CaptureFixture[str]) -> None:
    stop = threading.Event()
    before = signal.getsignal(signal.SIGINT)
    with interrupt_sets(stop):
        ctrl_c()
        assert stop.is_set()
        assert "stopping" in capfd.readouterr().err
        with pytest.raises(KeyboardInterrupt):
            ctrl_c()
    assert signal.getsignal(signal.SIGINT) is before


def test_outside_the_main_thread_the_block_runs_unchanged() -> None:
    seen: list[object] = []

    def work() -> None:
        with interrupt_sets(threading.Event()):
            seen.append(signal.getsignal(signal.SIGINT))

    before = signal.getsignal(signal.SIGINT)
    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert seen == [before]
