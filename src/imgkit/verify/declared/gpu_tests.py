"""gpuTests: Python the probe's interpreter ran with the GPU visible, after its own GPU
work, judged from the probe's report: skipped without a GPU (not verified, like imgkit's
own GPU checks); a test the report has no result for fails."""
from __future__ import annotations

from collections.abc import Sequence

from ...matrix.checkfile import GpuTest
from ..facts import DeclaredRun
from ..verdict import FAIL, PASS, SKIP, Check, Verdict
from .judged import shown, stream_problems


def gpu_test_checks(tests: Sequence[GpuTest], verdict: Verdict) -> list[Check]:
    """Each gpuTest judged from the probe's report of `verdict`."""
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
