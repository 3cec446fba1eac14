"""The declared tests that ride in the probe's own container (one container start for
them all): commandTests always (probe/declared.py runs them while the frameworks import),
gpuTests when the GPU is used (after the probe's GPU work). They go in as variables of that
container and come back in its report, where they are judged. A report made elsewhere (a
Kubernetes Job's) has no command results: their commands then run here, each in a container
of its own."""
from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from ..probe.declared import COMMANDS_ENV
from ..probe.declared import ENV as GPU_TESTS_ENV
from .cst import CheckFile, CommandTest, GpuTest
from .declared import COMMAND_TIMEOUT, command_check, shown, stream_problems
from .facts import DeclaredRun
from .verdict import FAIL, PASS, SKIP, Check, Verdict


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


def commands_from_report(tests: Sequence[CommandTest], ran: Sequence[DeclaredRun]) -> list[Check]:
    """Each command test judged from the probe's report; one it has no result for fails."""
    by_name = {r.name: r for r in ran}
    found = []
    for test in tests:
        run = by_name.get(test.name)
        if run is None:
            found.append(command_check(test, error="did not run: the probe's report has no "
                                                   "result for it"))
        elif run.error:
            found.append(command_check(test, error=f"could not start: {run.error}"))
        else:
            found.append(command_check(test, None if run.timed_out else run.exit_code,
                                       run.stdout, run.stderr, run.seconds))
    return found


def gpu_test_checks(tests: Sequence[GpuTest], verdict: Verdict) -> list[Check]:
    """Each gpuTest judged from the probe's report: skipped without a GPU (not verified,
    like imgkit's own GPU checks); a test the report has no result for fails."""
    ran = {r.name: r for r in verdict.facts.declared} if verdict.facts else {}
    found = []
    for test in tests:
        name = f"check: {test.name}"
        expected = "exit 0" + "".join(f", /{p}/" for p in test.expected_output)
        run = ran.get(test.name)
        if not verdict.gpu_checked:
            found.append(Check(name, SKIP, expected, "not run (--gpus none)",
                               "the declared GPU test needs the GPU", required=False))
        elif run is None:
            found.append(Check(name, FAIL, expected, "no result", f"the declared GPU test "
                               f"{test.name!r} did not run: the probe's report has no result "
                               "for it (a report made without --checks?)"))
        else:
            found.append(_gpu_test(test, run, expected))
    return found


def _gpu_test(test: GpuTest, run: DeclaredRun, expected: str) -> Check:
    name = f"check: {test.name}"
    seconds = f"{run.seconds:.1f} s" if run.seconds is not None else "?"
    if run.timed_out or run.error:
        said = f"still running after {test.timeout} s: stopped" if run.timed_out else str(run.error)
        return Check(name, FAIL, expected, said, f"the declared GPU test {test.name!r} failed: {said}")
    problems = [f"exit {run.exit_code}"] if run.exit_code != 0 else []
    problems += stream_problems(test.expected_output, test.excluded_output, run.stdout, "output")
    printed = shown(run.stdout) if not problems else (shown(run.stderr) or shown(run.stdout))
    measured = f"exit {run.exit_code} in {seconds}" + (f": {printed}" if printed else "")
    if problems:
        return Check(name, FAIL, expected, measured,
                     f"the declared GPU test {test.name!r} failed: {'; '.join(problems)}")
    return Check(name, PASS, expected, measured)
