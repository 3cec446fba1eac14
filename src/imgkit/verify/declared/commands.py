"""Command tests, as container-structure-test runs them: each in a container of its own
(the image's user and environment, plus the file's variables; no network, no capabilities,
stopped at its timeout), or judged from the probe's report where they rode in the probe's
container (in_probe.py)."""
from __future__ import annotations

import time
from collections.abc import Sequence

from ... import labels
from ...engine import Engine, RunSpec
from ...errors import ContainerFailed
from ...matrix.checkfile import CommandTest
from ..facts import DeclaredRun
from ..verdict import Check
from .judged import command_check


def command_here(engine: Engine, image_id: str, test: CommandTest, env: dict[str, str],
                 limit: int) -> Check:
    """A command test in a container of its own (a report made elsewhere has no results)."""
    started = time.monotonic()
    try:
        run = engine.run_container(RunSpec(
            image=image_id, entrypoint=(test.command,), command=tuple(test.args),
            environment={**env, **{v.key: v.value for v in test.env_vars}},
            timeout=limit, memory="4g", writable=True, stdout_limit=1 << 20,
            labels={labels.ROLE: labels.ROLE_VERIFY}))
    except ContainerFailed as exc:
        return command_check(test, error=f"could not start: {exc.explanation[:200]}")
    return command_check(test, run.exit_code, run.stdout, run.stderr, time.monotonic() - started)


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
