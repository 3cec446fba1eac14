"""The declared tests that ride in the probe's own container (one container start for
them all): commandTests always (probe/declared.py runs them while the frameworks import),
gpuTests when the GPU is used (after the probe's GPU work). They go in as variables of that
container and come back in its report, where commands.py and gpu_tests.py judge them. A
report made elsewhere (a Kubernetes Job's) has no command results: their commands then run
here, each in a container of its own."""
from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from ...errors import SpecError
from ...matrix.checkfile import CheckFile
from ...probe.declared import COMMANDS_ENV
from ...probe.declared import ENV as GPU_TESTS_ENV
from .judged import COMMAND_TIMEOUT

# Linux starts no program with one environment variable of 128 KiB or more (MAX_ARG_STRLEN):
# tests longer than this, once encoded, would keep the probe's container from starting.
LONGEST = 120 << 10


def probe_environment(checks: CheckFile, *, gpu: bool, timeout: int) -> dict[str, str]:
    """The probe container's variables carrying the tests it runs ({} for none)."""
    env = {v.key: v.value for v in checks.global_env_vars}
    limit = min(timeout, COMMAND_TIMEOUT)
    out = {}
    if checks.command_tests:
        out[COMMANDS_ENV] = _encoded([{
            "name": t.name, "argv": [t.command, *t.args], "timeout": limit,
            "env": {**env, **{v.key: v.value for v in t.env_vars}}} for t in checks.command_tests])
    if gpu and checks.gpu_tests:
        out[GPU_TESTS_ENV] = _encoded([{"name": t.name, "run": t.run, "timeout": t.timeout}
                                       for t in checks.gpu_tests])
    return out


def refuse_too_long(checks: CheckFile, file: Path) -> None:
    """A SpecError naming `file` and its key when the tests that ride in the probe's
    container would not fit in one variable of it, before anything runs."""
    riders = probe_environment(checks, gpu=True, timeout=COMMAND_TIMEOUT)
    for variable, key in ((COMMANDS_ENV, "commandTests"), (GPU_TESTS_ENV, "gpuTests")):
        size = len(riders.get(variable, ""))
        if size > LONGEST:
            raise SpecError(str(file), key, f"{size >> 10} KiB once encoded for the probe's "
                            f"container, more than one of its variables may hold ({LONGEST >> 10} "
                            "KiB: Linux starts no program with a longer one)",
                            hint="shorten them, or put long scripts in the image and run them "
                                 "from there")


def extra_seconds(checks: CheckFile, *, gpu: bool, timeout: int) -> int:
    """How much longer the probe's container may run for the tests riding in it (each may
    take its own timeout), so a hung test is stopped alone, not the whole probe."""
    commands = len(checks.command_tests) * min(timeout, COMMAND_TIMEOUT)
    return commands + (sum(t.timeout for t in checks.gpu_tests) if gpu else 0)


def _encoded(payload: list[dict[str, Any]]) -> str:
    return base64.b64encode(json.dumps(payload).encode()).decode()
