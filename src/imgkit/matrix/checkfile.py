"""A team's declared checks, read in container-structure-test's own format (schemaVersion
2.0.0), so the file a team already keeps for CST works unmodified: commandTests,
fileExistenceTests, fileContentTests and metadataTest, with globalEnvVars; and, where CST
has no word, imgkit's serviceTests (the image's own server must answer on a port) and
gpuTests (Python run by the probe's interpreter with the GPU visible). What imgkit does
not run yet (setup and teardown commands, licenseTests, containerRunOptions) is refused
naming the key, never skipped in silence. Every problem of the file is said at once, with
its line (the family files' way). Read with the matrix, so a broken file is a mistake of
the matrix; verify/declared/ runs the checks."""
from __future__ import annotations

import base64
import json
import re
import shlex
import stat
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import yamlload
from ..errors import SpecError, every_problem
from .cst_regex import NotReadable, python_pattern
from .problems import key_of, line_of, plainly

SCHEMA_VERSION = "2.0.0"
NOT_YET = {"setup": "setup commands", "teardown": "teardown commands",
           "licenseTests": "license tests", "containerRunOptions": "container run options"}
UNKNOWN = "not a key of container-structure-test's schema 2.0.0"
WORD_LISTS = frozenset({"args", "entrypoint", "cmd", "command"})   # a text for them: split
COMMAND_TIMEOUT = 120     # seconds a declared command may run (at most verify's --timeout)
# The command tests and the GPU tests each ride in one variable of the probe's container,
# and Linux starts no program with one variable of 128 KiB or more (MAX_ARG_STRLEN): the
# container would not start ("argument list too long"). Longer ones are refused when read.
RIDING_LIMIT = 120 << 10


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class EnvVar(Strict):
    key: str
    value: str = ""
    is_regex: bool = Field(False, alias="isRegex")


class CommandTest(Strict):
    name: str
    command: str
    args: list[str] = []
    env_vars: list[EnvVar] = Field([], alias="envVars")
    expected_output: list[str] = Field([], alias="expectedOutput")
    excluded_output: list[str] = Field([], alias="excludedOutput")
    expected_error: list[str] = Field([], alias="expectedError")
    excluded_error: list[str] = Field([], alias="excludedError")
    exit_code: int = Field(0, alias="exitCode")


class FileExistenceTest(Strict):
    name: str
    path: str
    should_exist: bool = Field(True, alias="shouldExist")
    permissions: str | None = None
    uid: int | None = None
    gid: int | None = None
    is_executable_by: str | None = Field(None, alias="isExecutableBy",
                                         pattern="^(owner|group|other|any)$")


class FileContentTest(Strict):
    name: str
    path: str
    expected_contents: list[str] = Field([], alias="expectedContents")
    excluded_contents: list[str] = Field([], alias="excludedContents")


class MetadataTest(Strict):
    env_vars: list[EnvVar] = Field([], alias="envVars")
    labels: list[EnvVar] = []
    exposed_ports: list[str] = Field([], alias="exposedPorts")
    unexposed_ports: list[str] = Field([], alias="unexposedPorts")
    volumes: list[str] = []
    unmounted_volumes: list[str] = Field([], alias="unmountedVolumes")
    entrypoint: list[str] | None = None
    cmd: list[str] | None = None
    workdir: str | None = None
    user: str | None = None


class ServiceTest(Strict):
    """imgkit's, not CST's: the image's own command (or `command`) must answer on `port`
    within `timeout` seconds: a connection, or with `path` an HTTP GET of that path."""
    name: str
    port: int = Field(ge=1, le=65535)
    path: str | None = Field(None, pattern="^/")
    command: list[str] = []           # instead of the image's ENTRYPOINT and CMD
    env_vars: list[EnvVar] = Field([], alias="envVars")
    expected_status: int | None = Field(None, alias="expectedStatus", ge=100, le=599)
    expected_output: list[str] = Field([], alias="expectedOutput")   # searched in the body
    timeout: int = Field(60, ge=1, le=600)


class GpuTest(Strict):
    """imgkit's, not CST's: Python run by the image's python3 with the GPU visible, after
    the probe's GPU work; it passes when it exits 0 (and prints what is expected)."""
    name: str
    run: str = Field(min_length=1)
    expected_output: list[str] = Field([], alias="expectedOutput")
    excluded_output: list[str] = Field([], alias="excludedOutput")
    timeout: int = Field(300, ge=1, le=1800)


class CheckFile(Strict):
    schema_version: str = Field(alias="schemaVersion")
    global_env_vars: list[EnvVar] = Field([], alias="globalEnvVars")
    command_tests: list[CommandTest] = Field([], alias="commandTests")
    file_existence_tests: list[FileExistenceTest] = Field([], alias="fileExistenceTests")
    file_content_tests: list[FileContentTest] = Field([], alias="fileContentTests")
    metadata_test: MetadataTest | None = Field(None, alias="metadataTest")
    service_tests: list[ServiceTest] = Field([], alias="serviceTests")
    gpu_tests: list[GpuTest] = Field([], alias="gpuTests")

    @property
    def count(self) -> int:
        return (len(self.command_tests) + len(self.file_existence_tests)
                + len(self.file_content_tests) + (self.metadata_test is not None)
                + len(self.service_tests) + len(self.gpu_tests))


def _not_yet(raw: Any, lines: dict[tuple[Any, ...], int], file: str) -> list[SpecError]:
    """The CST keys imgkit does not run, each said where it is."""
    found = []
    top = raw if isinstance(raw, dict) else {}
    places: list[tuple[Any, ...]] = [(k,) for k in top if k in NOT_YET]
    for i, test in enumerate(top.get("commandTests") or []):
        if isinstance(test, dict):
            places += [("commandTests", i, k) for k in test if k in NOT_YET]
    for loc in places:
        found.append(SpecError(file, key_of(loc), f"imgkit does not run {NOT_YET[loc[-1]]} yet",
                               hint="remove it, or run that part with container-structure-test",
                               line=line_of(loc, lines)))
    return found


def _stripped(raw: Any) -> Any:
    """The file without the keys _not_yet names (said once, not twice as unknown)."""
    if not isinstance(raw, dict):
        return raw
    out = {k: v for k, v in raw.items() if k not in NOT_YET}
    if isinstance(out.get("commandTests"), list):
        out["commandTests"] = [{k: v for k, v in t.items() if k not in NOT_YET}
                               if isinstance(t, dict) else t for t in out["commandTests"]]
    return out


def _hint(error: Any) -> str:
    """The check file's own hint for a problem, where it has one (else plainly's)."""
    if error["type"] == "string_type" and error["loc"][-1:] == ("permissions",):
        given = error.get("input")
        return _mode_hint(str(given) if isinstance(given, int) and not isinstance(given, bool)
                          else "")
    return ""


def _command_lines(raw: Any, lines: dict[tuple[Any, ...], int], file: str) -> list[SpecError]:
    """A command test's `command` is one program, run without a shell (as container-structure-
    test runs it): a whole command line there would be looked for as a program's name. Read
    from the file as written, so that it is said with the file's other problems."""
    found = []
    tests = raw.get("commandTests") if isinstance(raw, dict) else None
    for i, test in enumerate(tests if isinstance(tests, list) else []):
        command = test.get("command") if isinstance(test, dict) else None
        if isinstance(command, str) and " " in command.strip():
            try:
                program, *args = shlex.split(command)
            except ValueError:
                program, *args = command.split()
            given = test.get("args") if isinstance(test.get("args"), list) else []
            found.append(SpecError(
                file, f"commandTests[{i}].command", f"{command!r} is a command line, and the "
                "command is run as one program's name, without a shell",
                hint=f"command: {program}, args: {json.dumps(args + [str(a) for a in given])}",
                line=line_of(("commandTests", i, "command"), lines)))
    return found


# a mode as `ls -l` prints it (what container-structure-test compares)
LS_MODE = re.compile(r"^[-dlcbps][-r][-w][-xsS][-r][-w][-xsS][-r][-w][-xtT]$")
# the keys whose values are regular expressions, by the kind of test that has them
PATTERNS = {"commandTests": ("expectedOutput", "excludedOutput", "expectedError", "excludedError"),
            "fileContentTests": ("expectedContents", "excludedContents"),
            "serviceTests": ("expectedOutput",), "gpuTests": ("expectedOutput", "excludedOutput")}


def _pattern_problems(raw: Any, lines: dict[tuple[Any, ...], int], file: str) -> list[SpecError]:
    """Each pattern Python cannot judge (Go's syntax is translated: cst_regex.py), at its
    line; read from the file as written, so that they are said with its other problems."""
    places: list[tuple[tuple[Any, ...], Any]] = []
    top = raw if isinstance(raw, dict) else {}
    for kind, keys in PATTERNS.items():
        for i, test in _entries(top.get(kind)):
            if not isinstance(test, dict):
                continue
            for key in keys:
                places += [((kind, i, key, j), p) for j, p in _entries(test.get(key))]
    given = top.get("metadataTest")
    metadata: dict[str, Any] = given if isinstance(given, dict) else {}
    for kind in ("envVars", "labels"):
        places += [(("metadataTest", kind, i, "value"), pair.get("value"))
                   for i, pair in _entries(metadata.get(kind))
                   if isinstance(pair, dict) and pair.get("isRegex") is True]
    found = []
    for loc, pattern in places:
        if not isinstance(pattern, str):
            continue                            # its shape is said by the model
        try:
            python_pattern(pattern)
        except NotReadable as exc:
            found.append(SpecError(file, key_of(loc), f"{pattern!r}: {exc}", hint=exc.hint,
                                   line=line_of(loc, lines)))
    return found


def _path_problems(raw: Any, lines: dict[tuple[Any, ...], int], file: str) -> list[SpecError]:
    """A file test's path that is not absolute (it is looked up from the image's root), and
    a mode that is not as `ls -l` prints it ('644' is how chmod takes it)."""
    top = raw if isinstance(raw, dict) else {}
    found = []
    for kind in ("fileExistenceTests", "fileContentTests"):
        for i, test in _entries(top.get(kind)):
            if not isinstance(test, dict):
                continue
            path, mode = test.get("path"), test.get("permissions")
            if isinstance(path, str) and path and not path.startswith("/"):
                found.append(SpecError(file, f"{kind}[{i}].path", f"{path!r} is not an absolute "
                                       "path", hint=f"the path in the image: '/{path.removeprefix('./')}'",
                                       line=line_of((kind, i, "path"), lines)))
            if isinstance(mode, str) and not LS_MODE.match(mode):
                found.append(SpecError(file, f"{kind}[{i}].permissions", f"{mode!r} is not a mode "
                                       "as `ls -l` prints it", hint=_mode_hint(mode),
                                       line=line_of((kind, i, "permissions"), lines)))
    return found


def _mode_hint(given: str) -> str:
    if re.fullmatch("[0-7]{3,4}", given):
        mode = stat.filemode(int(given, 8))[1:]
        return f"a mode as `ls -l` prints it: 'd{mode}' for a folder, '-{mode}' for a file"
    return "a mode as `ls -l` prints it, e.g. '-rwxr-xr-x'"


def _entries(value: Any) -> list[tuple[int, Any]]:
    """(index, item) of a list the file wrote; none for anything else."""
    return [(i, v) for i, v in enumerate(value)] if isinstance(value, list) else []


def load_checks(path: Path) -> CheckFile:
    """The check file at `path`, or every problem of it as one error (exit 2)."""
    file = str(path)
    if path.is_dir():
        raise SpecError(file, "(file)", "is a folder, not a check file",
                        hint="name the container-structure-test YAML file in it")
    if not path.is_file():
        raise SpecError(file, "(file)", "no such check file",
                        hint="a container-structure-test YAML file (schemaVersion: 2.0.0)")
    raw, lines = yamlload.read_with_lines(path)
    found = (_not_yet(raw, lines, file) + _command_lines(raw, lines, file)
             + _pattern_problems(raw, lines, file) + _path_problems(raw, lines, file))
    try:
        checks = CheckFile.model_validate(_stripped(raw))
    except ValidationError as error:
        found += [SpecError(file, key_of(e["loc"]), reason, hint=_hint(e) or hint,
                            line=line_of(e["loc"], lines))
                  for e in error.errors()
                  for reason, hint in [plainly(e, UNKNOWN, CheckFile, WORD_LISTS)]]
        raise every_problem(sorted(found, key=lambda p: p.line or 0)) from None
    if checks.schema_version != SCHEMA_VERSION:
        found.append(SpecError(file, "schemaVersion", f"{checks.schema_version!r} is not a "
                               "schema imgkit reads", hint=f"schemaVersion: {SCHEMA_VERSION}",
                               line=line_of(("schemaVersion",), lines)))
    if found:
        raise every_problem(found)
    if not checks.count:
        raise SpecError(file, "(top)", "declares no test",
                        hint="commandTests, fileExistenceTests, fileContentTests, metadataTest, "
                             "serviceTests or gpuTests")
    too_long = [SpecError(file, key, f"{len(text) >> 10} KiB once encoded for the probe's "
                          f"container, more than one of its variables may hold "
                          f"({RIDING_LIMIT >> 10} KiB: Linux starts no program with a longer one)",
                          hint="shorten them, or put long scripts in the image and run them "
                               "from there", line=line_of((key,), lines))
                for key, text in zip(("commandTests", "gpuTests"), riders(checks, COMMAND_TIMEOUT))
                if len(text) > RIDING_LIMIT]
    if too_long:                                  # both said at once, as every problem is
        raise every_problem(too_long)
    return checks


def riders(checks: CheckFile, timeout: int) -> tuple[str, str]:
    """The command tests and the GPU tests as they ride in the probe's container, each
    base64 JSON as probe/declared.py reads it ("" for none); `timeout`: each command's."""
    env = {v.key: v.value for v in checks.global_env_vars}
    commands = [{"name": t.name, "argv": [t.command, *t.args], "timeout": timeout,
                 "env": {**env, **{v.key: v.value for v in t.env_vars}}} for t in checks.command_tests]
    gpu = [{"name": t.name, "run": t.run, "timeout": t.timeout} for t in checks.gpu_tests]
    return _encoded(commands), _encoded(gpu)


def _encoded(payload: list[dict[str, Any]]) -> str:
    return base64.b64encode(json.dumps(payload).encode()).decode() if payload else ""
