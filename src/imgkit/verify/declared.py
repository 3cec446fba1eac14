"""The checks a team declares for its image (cst.py reads the file), run against the image
and judged as checks of the verdict, each by its name ("check: NAME"): so they reach the
JSON, JUnit, Markdown and table outputs and the signed predicate like imgkit's own, and a
failed one fails the verdict.

As container-structure-test runs them: a command test in a container of its own (the
image's user and environment, plus the file's variables; no network, no capabilities,
stopped at its timeout); file tests read the filesystem without starting the image;
metadata from the image's config; a service test runs the image's own server and asks it
(service.py)."""
from __future__ import annotations

import re
import time
from typing import Sequence

from .. import labels
from ..engine import Engine, FileEntry, ImageConfig, RunSpec
from ..errors import ContainerFailed
from .cst import CheckFile, CommandTest, EnvVar, FileContentTest, FileExistenceTest, MetadataTest
from .facts import DeclaredRun
from .verdict import FAIL, PASS, Check

COMMAND_TIMEOUT = 120     # seconds a declared command may run (at most verify's --timeout)
SHOWN = 3                 # lines of what a command printed, kept as evidence


def declared_checks(engine: Engine, image_id: str, checks: CheckFile,
                    timeout: int = COMMAND_TIMEOUT,
                    ran: Sequence[DeclaredRun] | None = None) -> list[Check]:
    """Every declared test of `checks` against the image, in the file's order by kind; a
    command still running after `timeout` seconds (at most COMMAND_TIMEOUT) is stopped.
    `ran`: the command tests as the probe ran them in its own container (in_probe.py);
    None: each runs here in a container of its own."""
    env = {v.key: v.value for v in checks.global_env_vars}
    limit = min(timeout, COMMAND_TIMEOUT)
    if ran is None:
        found = [_command(engine, image_id, test, env, limit) for test in checks.command_tests]
    else:
        from .in_probe import commands_from_report
        found = commands_from_report(checks.command_tests, ran)
    # a file's contents through its links, as a command reading it would see them; an
    # existence test the path itself (a link is there even when its target is not)
    entries = engine.read_paths(image_id, {t.path: False for t in checks.file_existence_tests}
                                ) if checks.file_existence_tests else {}
    contents = engine.read_paths(image_id, {t.path: True for t in checks.file_content_tests}
                                 ) if checks.file_content_tests else {}
    found += [_existence(test, entries[test.path]) for test in checks.file_existence_tests]
    found += [_content(test, contents[test.path]) for test in checks.file_content_tests]
    if checks.metadata_test is not None:
        found += metadata_checks(checks.metadata_test, engine.config(image_id))  # asked only here
    if checks.service_tests:
        from .service import service_check
        found += [service_check(engine, image_id, test, env) for test in checks.service_tests]
    return found


def shown(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[:SHOWN]) + (f" (+{len(lines) - SHOWN} lines)" if len(lines) > SHOWN else "")


def matching(patterns: list[str], text: str, wanted: bool) -> list[str]:
    """The patterns that do not hold: each a regular expression searched in `text` (as
    container-structure-test does), wanted there or not."""
    return [p for p in patterns if bool(re.search(p, text, re.M)) != wanted]


def stream_problems(expected: list[str], excluded: list[str], text: str, stream: str) -> list[str]:
    """What a command's stream (`stream`: "output", "errors"...) lacks of `expected` and
    holds of `excluded`, in words."""
    return ([f"no /{p}/ in its {stream}" for p in matching(expected, text, True)]
            + [f"/{p}/ in its {stream}" for p in matching(excluded, text, False)])


def _command(engine: Engine, image_id: str, test: CommandTest, env: dict[str, str],
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


def _executable_by(mode: str, who: str) -> bool:
    bits = {"owner": [3], "group": [6], "other": [9], "any": [3, 6, 9]}[who]
    return any(mode[i] in "xst" for i in bits)


def _existence(test: FileExistenceTest, entry: FileEntry | None) -> Check:
    name = f"check: {test.name}"
    if entry is None or not test.should_exist:
        ok = (entry is None) != test.should_exist
        said = "absent" if entry is None else f"present ({entry.mode})"
        return Check(name, PASS if ok else FAIL, "present" if test.should_exist else "absent",
                     said, "" if ok else f"the declared check {test.name!r} failed: "
                     f"{test.path} is {said}")
    problems = []
    if test.permissions is not None and entry.mode != test.permissions:
        problems.append(f"mode {entry.mode}, not {test.permissions}")
    if test.uid is not None and entry.uid != test.uid:
        problems.append(f"uid {entry.uid}, not {test.uid}")
    if test.gid is not None and entry.gid != test.gid:
        problems.append(f"gid {entry.gid}, not {test.gid}")
    if test.is_executable_by is not None and not _executable_by(entry.mode, test.is_executable_by):
        problems.append(f"not executable by {test.is_executable_by} ({entry.mode})")
    measured = f"{entry.mode} {entry.uid}:{entry.gid}"
    return Check(name, FAIL if problems else PASS, f"{test.path} present", measured,
                 f"the declared check {test.name!r} failed: {test.path}: {'; '.join(problems)}"
                 if problems else "")


def _content(test: FileContentTest, entry: FileEntry | None) -> Check:
    name = f"check: {test.name}"
    if entry is None or entry.content is None:
        return Check(name, FAIL, f"{test.path}, a file", "absent" if entry is None else entry.mode,
                     f"the declared check {test.name!r} failed: {test.path} is not a file")
    text = entry.content.decode(errors="replace")
    problems = [f"no /{p}/" for p in matching(test.expected_contents, text, True)]
    problems += [f"/{p}/ found" for p in matching(test.excluded_contents, text, False)]
    return Check(name, FAIL if problems else PASS, "".join(f"/{p}/ " for p in test.expected_contents)
                 .strip() or "its contents", shown(text) or "(empty)",
                 f"the declared check {test.name!r} failed: {test.path}: {'; '.join(problems)}"
                 if problems else "")


def _pairs(wanted: list[EnvVar], have: dict[str, str], what: str) -> list[str]:
    out = []
    for var in wanted:
        value = have.get(var.key)
        ok = value is not None and (bool(re.fullmatch(var.value, value)) if var.is_regex
                                    else value == var.value)
        if not ok:
            out.append(f"{what} {var.key}={value!r}, not {var.value!r}" if value is not None
                       else f"no {what} {var.key}")
    return out


def metadata_checks(test: MetadataTest, config: ImageConfig) -> list[Check]:
    """The metadata test against the image's config, one check naming every difference."""
    ports = {p.split("/")[0] for p in config.exposed_ports}
    volumes = set(config.volumes)
    problems = _pairs(test.env_vars, dict(config.env), "env") + _pairs(test.labels,
                                                                        dict(config.labels), "label")
    problems += [f"port {p} not exposed" for p in test.exposed_ports if p not in ports]
    problems += [f"port {p} exposed" for p in test.unexposed_ports if p in ports]
    problems += [f"no volume {v}" for v in test.volumes if v not in volumes]
    problems += [f"volume {v}" for v in test.unmounted_volumes if v in volumes]
    for key, want, have in (("entrypoint", test.entrypoint, list(config.entrypoint)),
                            ("cmd", test.cmd, list(config.cmd)), ("workdir", test.workdir, config.workdir),
                            ("user", test.user, config.user)):
        if want is not None and want != have:
            problems.append(f"{key} {have!r}, not {want!r}")
    return [Check("check: metadata", FAIL if problems else PASS, "as declared",
                  "; ".join(problems) or "as declared",
                  f"the declared metadata test failed: {'; '.join(problems)}" if problems else "")]
