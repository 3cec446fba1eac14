"""The declared tests that ride in the probe's own container (one container start for
them all): commandTests always (probe/declared.py runs them while the frameworks import),
gpuTests when the GPU is used (after the probe's GPU work). They go in as variables of that
container and come back in its report, where commands.py and gpu_tests.py judge them. A
report made elsewhere (a Kubernetes Job's) has no command results: their commands then run
here, each in a container of its own."""
from __future__ import annotations

from ...matrix.checkfile import COMMAND_TIMEOUT, CheckFile, riders
from ...probe.declared import COMMANDS_ENV
from ...probe.declared import ENV as GPU_TESTS_ENV


def probe_environment(checks: CheckFile, *, gpu: bool, timeout: int) -> dict[str, str]:
    """The probe container's variables carrying the tests it runs ({} for none; each fits
    in one variable: checkfile.py refuses a file whose tests would not)."""
    commands, gpu_tests = riders(checks, min(timeout, COMMAND_TIMEOUT))
    out = {}
    if commands:
        out[COMMANDS_ENV] = commands
    if gpu and gpu_tests:
        out[GPU_TESTS_ENV] = gpu_tests
    return out


def extra_seconds(checks: CheckFile, *, gpu: bool, timeout: int) -> int:
    """How much longer the probe's container may run for the tests riding in it (each may
    take its own timeout), so a hung test is stopped alone, not the whole probe."""
    commands = len(checks.command_tests) * min(timeout, COMMAND_TIMEOUT)
    return commands + (sum(t.timeout for t in checks.gpu_tests) if gpu else 0)
