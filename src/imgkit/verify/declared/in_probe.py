"""The declared tests that ride in the probe's own container (one container start for
them all): commandTests always (probe/declared.py runs them while the frameworks import),
gpuTests when the GPU is used (after the probe's GPU work). They go in as variables of that
container and come back in its report, where commands.py and gpu_tests.py judge them. A
report made elsewhere (a Kubernetes Job's) has no command results: their commands then run
here, each in a container of its own."""
from __future__ import annotations

import base64
import json
from typing import Any

from ...matrix.checkfile import CheckFile
from ...probe.declared import COMMANDS_ENV
from ...probe.declared import ENV as GPU_TESTS_ENV
from .judged import COMMAND_TIMEOUT


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


def extra_seconds(checks: CheckFile, *, gpu: bool, timeout: int) -> int:
    """How much longer the probe's container may run for the tests riding in it (each may
    take its own timeout), so a hung test is stopped alone, not the whole probe."""
    commands = len(checks.command_tests) * min(timeout, COMMAND_TIMEOUT)
    return commands + (sum(t.timeout for t in checks.gpu_tests) if gpu else 0)


def _encoded(payload: list[dict[str, Any]]) -> str:
    return base64.b64encode(json.dumps(payload).encode()).decode()
