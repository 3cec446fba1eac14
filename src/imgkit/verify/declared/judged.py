"""What every kind of declared test shares when it is judged: how a stream is held to its
patterns, how a command's run becomes a check, and how much of what it printed is kept as
evidence (how long a command may run is the check file's rule: checkfile.py)."""
from __future__ import annotations

from ...matrix.checkfile import COMMAND_TIMEOUT, CommandTest
from ...matrix.cst_regex import python_pattern
from ..verdict import FAIL, PASS, Check

SHOWN = 3                 # lines of what a command printed, kept as evidence


def shown(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[:SHOWN]) + (f" (+{len(lines) - SHOWN} lines)" if len(lines) > SHOWN else "")


def matching(patterns: list[str], text: str, wanted: bool) -> list[str]:
    """The patterns that do not hold: each a regular expression (Go's, as container-structure-
    test writes them; checked when the file was read) searched in `text`, wanted or not."""
    return [p for p in patterns if bool(python_pattern(p).search(text)) != wanted]


def stream_problems(expected: list[str], excluded: list[str], text: str, stream: str) -> list[str]:
    """What a command's stream (`stream`: "output", "errors"...) lacks of `expected` and
    holds of `excluded`, in words."""
    return ([f"no /{p}/ in its {stream}" for p in matching(expected, text, True)]
            + [f"/{p}/ in its {stream}" for p in matching(excluded, text, False)])


def command_check(test: CommandTest, exit_code: int | None = None, stdout: str = "",
                  stderr: str = "", seconds: float | None = None, error: str = "") -> Check:
    """A command test judged from how it ran (here, or in the probe's container): its exit
    code (None: still running at its timeout, so stopped) and what it printed."""
    name = f"check: {test.name}"
    if error:
        return Check(name, FAIL, f"{test.command} runs", "did not run",
                     f"the declared check {test.name!r} {error}")
    if exit_code is None:
        return Check(name, FAIL, f"done within {COMMAND_TIMEOUT} s", "still running: stopped",
                     f"the declared check {test.name!r} hung and was stopped at its timeout")
    problems = [f"exit {exit_code}, not {test.exit_code}"] if exit_code != test.exit_code else []
    problems += stream_problems(test.expected_output, test.excluded_output, stdout, "output")
    problems += stream_problems(test.expected_error, test.excluded_error, stderr, "errors")
    printed = shown(stdout) or shown(stderr)
    took = f" in {seconds:.1f} s" if seconds is not None else ""
    measured = f"exit {exit_code}{took}" + (f": {printed}" if printed else "")
    expected = f"exit {test.exit_code}" + "".join(f", /{p}/" for p in test.expected_output)
    if problems:
        return Check(name, FAIL, expected, measured,
                     f"the declared check {test.name!r} failed: {'; '.join(problems)}")
    return Check(name, PASS, expected, measured)
