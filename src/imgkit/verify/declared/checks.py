"""Every declared test of a team's check file against one image, and the verdict with
them: command tests from the probe's own run (or each in a container of its own), file and
metadata tests from what the image holds, service tests against the image's own server,
gpuTests from the probe's report."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ...engine import Engine
from ...matrix.checkfile import COMMAND_TIMEOUT, CheckFile
from ..facts import DeclaredRun
from ..verdict import Check, Verdict
from .commands import command_here, commands_from_report
from .files import content_check, existence_check, metadata_checks
from .gpu_tests import gpu_test_checks
from .service import service_check


def with_declared(engine: Engine, verdict: Verdict, declared: CheckFile, timeout: int) -> Verdict:
    """The verdict with the team's declared checks of the very image it judged."""
    ran = verdict.facts.commands if verdict.facts is not None else None
    checks = declared_checks(engine, verdict.image_id, declared, timeout, ran=ran)
    checks += gpu_test_checks(declared.gpu_tests, verdict)
    return replace(verdict, checks=verdict.checks + tuple(checks))


def declared_checks(engine: Engine, image_id: str, checks: CheckFile,
                    timeout: int = COMMAND_TIMEOUT,
                    ran: Sequence[DeclaredRun] | None = None) -> list[Check]:
    """Every declared test of `checks` but the gpuTests against the image, in the file's
    order by kind; a command still running after `timeout` seconds (at most
    COMMAND_TIMEOUT) is stopped. `ran`: the command tests as the probe ran them in its own
    container (in_probe.py); None: each runs here in a container of its own."""
    env = {v.key: v.value for v in checks.global_env_vars}
    limit = min(timeout, COMMAND_TIMEOUT)
    if ran is None:
        found = [command_here(engine, image_id, test, env, limit) for test in checks.command_tests]
    else:
        found = commands_from_report(checks.command_tests, ran)
    # a file's contents through its links, as a command reading it would see them; an
    # existence test the path itself (a link is there even when its target is not)
    entries = engine.read_paths(image_id, {t.path: False for t in checks.file_existence_tests}
                                ) if checks.file_existence_tests else {}
    contents = engine.read_paths(image_id, {t.path: True for t in checks.file_content_tests}
                                 ) if checks.file_content_tests else {}
    found += [existence_check(test, entries[test.path]) for test in checks.file_existence_tests]
    found += [content_check(test, contents[test.path]) for test in checks.file_content_tests]
    if checks.metadata_test is not None:
        found += metadata_checks(checks.metadata_test, engine.config(image_id))  # asked only here
    if checks.service_tests:
        found += [service_check(engine, image_id, test, env) for test in checks.service_tests]
    return found
