"""The probe's helper interpreters (child.py): a child's result is what it EMITs; what its
interpreter does after that (a framework's teardown that hangs, crashes or prints) is no
part of it. Real child processes of this Python."""
from __future__ import annotations

from imgkit.probe import child

MODULE = "imgkit.probe.channel"   # any probe module: the child imports its names


def test_a_child_result_is_what_it_emitted() -> None:
    assert child.run(MODULE, "out = {'seen': new_token() != ''}\n") == ({"seen": True}, None)


def test_a_teardown_that_hangs_does_not_hold_the_result() -> None:
    # before EMIT ended the child, this ran into the timeout and the result was lost
    body = "import atexit, time\natexit.register(time.sleep, 60)\nout = 'kept'\n"
    assert child.run(MODULE, body, timeout=20) == ("kept", None)


def test_a_teardown_that_crashes_or_prints_does_not_spoil_the_result() -> None:
    body = ("import atexit, os, signal\n"
            "atexit.register(lambda: print('IMGKIT-REPORT-END junk'))\n"
            "atexit.register(os.kill, os.getpid(), signal.SIGSEGV)\n"
            "out = [1, 2]\n")
    assert child.run(MODULE, body) == ([1, 2], None)


def test_a_child_that_dies_before_emitting_says_so() -> None:
    out, why = child.run(MODULE, "import os\nos._exit(7)\nout = 1\n")
    assert out is None and why is not None and why.startswith("crashed")
