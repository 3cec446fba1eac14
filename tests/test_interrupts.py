"""Ctrl-C while the builder's threads work: a flag first, the default behaviour after."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from imgkit.interrupts import interrupt_sets


def ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)  # the handler runs at the main thread's next bytecode


def test_first_ctrl_c_only_sets_the_event(capfd: pytest.CaptureFixture[str]) -> None:
    stop = threading.Event()
    before = signal.getsignal(signal.SIGINT)
    with interrupt_sets(stop):
        ctrl_c()
        assert stop.is_set()
    assert "stopping" in capfd.readouterr().err
    assert signal.getsignal(signal.SIGINT) is before


def test_a_second_ctrl_c_abandons_the_clean_up_at_once() -> None:
    child = (
        "import os, signal, threading, time\n"
        "from imgkit.interrupts import interrupt_sets\n"
        "with interrupt_sets(threading.Event()):\n"
        "    for _ in range(2):\n"
        "        os.kill(os.getpid(), signal.SIGINT); time.sleep(0.2)\n"
        "    time.sleep(30)\n"  # a clean-up that would take long
        "print('not reached')\n")
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 130 and "abandoned" in proc.stderr and not proc.stdout
    assert time.monotonic() - start < 20


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
