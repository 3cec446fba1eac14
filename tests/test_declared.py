"""Declared checks in container-structure-test's format: the file is read as CST writes it
(every problem at once, with its line; what imgkit does not run refused by name), and file
and metadata tests are judged from what the image holds. Command tests, and the whole path
through verify, against the real engine: test_docker_declared.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from imgkit.engine import FileEntry, ImageConfig
from imgkit.errors import SpecError, SpecErrors
from imgkit.matrix.checkfile import load_checks
from imgkit.verify.declared.files import content_check, existence_check, metadata_checks

# the kind of file a team keeps for container-structure-test, unmodified
TEAM_CST = """\
schemaVersion: 2.0.0
globalEnvVars:
  - key: PYTHONUNBUFFERED
    value: "1"
commandTests:
  - name: "python answers"
    command: "python3"
    args: ["-c", "print('ok')"]
    expectedOutput: ["^ok$"]
fileExistenceTests:
  - name: "the CA bundle"
    path: "/etc/ssl/certs/ca-certificates.crt"
    shouldExist: true
    permissions: "-rw-r--r--"
    uid: 0
  - name: "no ssh keys"
    path: "/root/.ssh/id_rsa"
    shouldExist: false
fileContentTests:
  - name: "debian sources"
    path: "/etc/apt/sources.list"
    expectedContents: ["deb .* bookworm"]
    excludedContents: ["testing"]
metadataTest:
  envVars:
    - key: PATH
      value: ".*/opt/venv/bin.*"
      isRegex: true
  labels:
    - key: org.imgkit.layer
      value: cuda
  exposedPorts: ["8888"]
  user: imgkit
  workdir: /workspace
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "checks.yaml"
    path.write_text(text)
    return path


def refused(tmp_path: Path, text: str) -> list[SpecError]:
    """Every problem the check file `text` is refused with, in the order they are said."""
    with pytest.raises(SpecErrors) as caught:
        load_checks(write(tmp_path, text))
    return list(caught.value.problems)


def test_a_teams_cst_file_is_read_as_it_is(tmp_path: Path) -> None:
    checks = load_checks(write(tmp_path, TEAM_CST))
    assert checks.count == 5
    assert checks.command_tests[0].args == ["-c", "print('ok')"]
    assert checks.file_existence_tests[1].should_exist is False
    assert checks.metadata_test is not None and checks.metadata_test.env_vars[0].is_regex


def test_every_problem_of_a_check_file_is_said_with_its_line(tmp_path: Path) -> None:
    broken = TEAM_CST.replace('    command: "python3"\n', '    command: "python3"\n    setup: [["true"]]\n')
    broken = broken.replace("    shouldExist: false\n", "    shouldExist: false\n    colour: red\n")
    broken = broken.replace('  - name: "debian sources"\n', '  - nam: "debian sources"\n')
    problems = refused(tmp_path, broken)
    said = {(p.key, p.line) for p in problems}
    assert ("commandTests[0].setup", 8) in said                        # not run yet, by name
    assert ("fileExistenceTests[1].colour", 20) in said
    assert ("fileContentTests[0].name", 22) in said                     # required, where it goes
    assert any("imgkit does not run setup commands yet" in p.reason for p in problems)
    # a value of another kind, as YAML read it, with how to write it
    wrong = ('schemaVersion: 2.0.0\ncommandTests:\n  - name: jq\n    command: jq\n'
             '    args: --version\nfileExistenceTests:\n  - name: conf\n    path: /etc/x\n'
             '    permissions: 755\n')
    problems = refused(tmp_path, wrong)
    worded = {p.key: (p.reason, p.hint) for p in problems}
    assert worded["commandTests[0].args"] == ("must be a list, got the text '--version'",
                                            'write it as a list: ["--version"]')
    assert worded["fileExistenceTests[0].permissions"] == (
        "expected text, got the number 755",
        "a mode as `ls -l` prints it: 'drwxr-xr-x' for a folder, '-rwxr-xr-x' for a file")
    with pytest.raises(SpecError, match="is not a schema imgkit reads"):
        load_checks(write(tmp_path, TEAM_CST.replace("2.0.0", "1.0.0")))
    with pytest.raises(SpecError, match="declares no test"):
        load_checks(write(tmp_path, "schemaVersion: 2.0.0\n"))
    with pytest.raises(SpecError, match="no such check file"):
        load_checks(tmp_path / "nope.yaml")


def test_a_cst_file_written_as_people_write_them_gets_each_fix_in_one_run(tmp_path: Path) -> None:
    """The ordinary mistakes of a first check file, each with the fix in words: a regex given
    as text is one item (not split into words), a command line in `command` is split into the
    program and its args (CST runs it without a shell), a near miss of a key is named."""
    text = ('schemaVersion: 2.0.0\ncommandTests:\n  - name: py\n    command: python3\n'
            '    args: -c "import sys; print(sys.version)"\n    expectedOutput: "3.11 final"\n'
            '  - name: torch\n    command: python3 -c "import torch"\n    args: [-v]\n'
            '    exitCode: zero\nmetadataTest:\n  env:\n    - key: PATH\n  workdir: /w\n'
            'commandTest: []\n')
    problems = refused(tmp_path, text)
    said = {p.key: (p.reason, p.hint, p.line) for p in problems}
    assert said["commandTests[0].args"][1] == \
        'write a list of words: ["-c", "import sys; print(sys.version)"]'
    assert said["commandTests[0].expectedOutput"][1] == 'write it as a list: ["3.11 final"]'
    assert said["commandTests[1].command"] == (
        "'python3 -c \"import torch\"' is a command line, and the command is run as one "
        "program's name, without a shell", 'command: python3, args: ["-c", "import torch", "-v"]', 8)
    assert said["commandTests[1].exitCode"][0] == "expected a whole number, got the text 'zero'"
    assert said["metadataTest.env"][1] == "did you mean 'envVars'?"
    assert said["commandTest"][1] == "did you mean 'commandTests'?"
    assert [p.line for p in problems] == sorted(p.line or 0 for p in problems)


def test_a_bad_pattern_a_relative_path_and_a_chmod_mode_are_said_beside_the_files_other_mistakes(
        tmp_path: Path) -> None:
    """They were judged only once the file had the right shape: a team met them on its
    second run. A mode written as chmod takes it ('644') passed as text and never matched."""
    text = ('schemaVersion: 2.0.0\ncommandTests:\n  - name: v\n    command: uvicorn --version\n'
            '    expectedOutput: ["Running uvicorn (.*"]\nfileExistenceTests:\n  - name: app\n'
            '    path: srv/app/main.py\n    permissions: "644"\nfileContentTests:\n'
            '  - name: conf\n    path: ./etc/app.conf\n    expectedContents: [ok]\n')
    problems = refused(tmp_path, text)
    said = {p.key: (p.reason, p.hint) for p in problems}
    assert "commandTests[0].command" in said                      # the shape's own mistake
    assert said["commandTests[0].expectedOutput[0]"][0].startswith("'Running uvicorn (.*': not a "
                                                                 "regular expression")
    assert said["fileExistenceTests[0].path"] == (
        "'srv/app/main.py' is not an absolute path", "the path in the image: '/srv/app/main.py'")
    assert said["fileContentTests[0].path"][1] == "the path in the image: '/etc/app.conf'"
    assert said["fileExistenceTests[0].permissions"] == (
        "'644' is not a mode as `ls -l` prints it",
        "a mode as `ls -l` prints it: 'drw-r--r--' for a folder, '-rw-r--r--' for a file")


def test_patterns_are_read_as_go_writes_them_and_what_python_cannot_do_is_refused(
        tmp_path: Path) -> None:
    """container-structure-test's patterns are Go's (RE2): POSIX classes, \\z, \\Q..\\E,
    (?<name>), \\pL are translated and judged as Go would; a pattern neither can read, or
    one Python cannot (\\p{Greek}, (?U)), is refused when the file is read, at its line."""
    from imgkit.matrix.cst_regex import python_pattern
    from imgkit.verify.declared.judged import matching
    text = "Python 3.11.2\nnvcc: release 12.4, V12.4.131\n"
    go = [r"Python 3\.11\.[[:digit:]]+$", r"release (?<major>\d+)\.(?<minor>\d+)",
          r"\Qrelease 12.4\E", r"^\pL+ ", r"[[:^space:]]+\z"]
    assert matching(go[:4], text, True) == []
    assert matching(go[4:], text, True) == [go[4]]           # text ends in a newline, as in Go
    assert python_pattern(r"[[:upper:]][[:lower:]]+").fullmatch("Python")
    broken = ("schemaVersion: 2.0.0\ncommandTests:\n  - name: v\n    command: python3\n"
              "    expectedOutput: [\"Python (3\", \"\\\\p{Greek}\"]\n"
              "fileContentTests:\n  - name: os\n    path: /etc/os-release\n"
              "    excludedContents: [\"(?U)a.*b\"]\n"
              "metadataTest:\n  envVars:\n    - {key: LANG, value: \"[[:bogus:]]\", isRegex: true}\n")
    problems = refused(tmp_path, broken)
    said = {p.key: (p.reason, p.line) for p in problems}
    assert said["commandTests[0].expectedOutput[0]"][0].startswith(
        "'Python (3': not a regular expression: missing ), unterminated subpattern")
    assert "\\p{Greek} is not one Python's regular expressions know" in \
        said["commandTests[0].expectedOutput[1]"][0]
    assert said["fileContentTests[0].excludedContents[0]"][0].startswith(
        "'(?U)a.*b': the ungreedy flag (?U) is Go's only")
    assert said["metadataTest.envVars[0].value"] == (
        "'[[:bogus:]]': [:bogus:] is not a POSIX class", 12)


def test_file_tests_judge_what_the_filesystem_holds(tmp_path: Path) -> None:
    checks = load_checks(write(tmp_path, TEAM_CST))
    ca, ssh = checks.file_existence_tests
    assert existence_check(ca, FileEntry("-rw-r--r--", 0, 0, b"")).verdict == "pass"
    wrong = existence_check(ca, FileEntry("-rw-rw-rw-", 1000, 0, b""))
    assert wrong.verdict == "fail" and "mode -rw-rw-rw-, not -rw-r--r--" in wrong.diagnosis
    assert "uid 1000, not 0" in wrong.diagnosis and wrong.name == "check: the CA bundle"
    assert existence_check(ssh, None).verdict == "pass"
    assert existence_check(ssh, FileEntry("-rw-------", 0, 0, b"k")).verdict == "fail"
    sources = checks.file_content_tests[0]
    kept = FileEntry("-rw-r--r--", 0, 0, b"deb http://x bookworm main\n")
    assert content_check(sources, kept).verdict == "pass"
    failed = content_check(sources, FileEntry("-rw-r--r--", 0, 0, b"deb http://x testing main\n"))
    assert failed.verdict == "fail" and "/testing/ found" in failed.diagnosis
    assert content_check(sources, None).verdict == "fail"


def test_the_metadata_test_names_every_difference(tmp_path: Path) -> None:
    test = load_checks(write(tmp_path, TEAM_CST)).metadata_test
    assert test is not None
    config = {"Env": ["PATH=/opt/venv/bin:/usr/bin"], "Labels": {"org.imgkit.layer": "cuda"},
              "ExposedPorts": {"8888/tcp": {}}, "User": "imgkit", "WorkingDir": "/workspace"}
    [ok] = metadata_checks(test, ImageConfig.of(config))
    assert ok.verdict == "pass"
    [bad] = metadata_checks(test, ImageConfig.of({**config, "User": "root", "ExposedPorts": {}}))
    assert bad.verdict == "fail"
    assert "port 8888 not exposed" in bad.diagnosis and "user 'root', not 'imgkit'" in bad.diagnosis


def test_service_tests_are_imgkits_own_kind_beside_csts(tmp_path: Path) -> None:
    text = TEAM_CST + ("serviceTests:\n"
                       "  - name: jupyter answers\n"
                       "    port: 8888\n"
                       "    path: /api\n"
                       "    expectedStatus: 200\n")
    checks = load_checks(write(tmp_path, text))
    assert checks.count == 6
    [service] = checks.service_tests
    assert (service.port, service.path, service.expected_status, service.timeout) == (8888, "/api", 200, 60)
    bad = text.replace("port: 8888", "port: 88888").replace("path: /api", "path: api")
    problems = refused(tmp_path, bad)
    keys = {p.key for p in problems}
    assert keys == {"serviceTests[0].port", "serviceTests[0].path"}, keys
    assert load_checks(write(tmp_path, "schemaVersion: 2.0.0\nserviceTests:\n"
                                       "  - {name: up, port: 80}\n")).count == 1


GPU_TESTS = """\
schemaVersion: 2.0.0
gpuTests:
  - name: prints its answer
    run: |
      import os, sys
      print("answer", 6 * 7)
      hidden = ("IMGKIT_REPORT_MARK", "IMGKIT_PROBE", "IMGKIT_GPU_TESTS")
      print("token seen" if any(k in os.environ for k in hidden) else "no token")
    expectedOutput: ["^answer 42$"]
    excludedOutput: ["token seen"]
  - name: raises
    run: raise SystemExit("no GPU here")
  - name: hangs
    run: import time; time.sleep(60)
    timeout: 2
"""


def test_gpu_tests_run_in_the_probe_after_its_gpu_work_and_are_judged(tmp_path: Path) -> None:
    """The zipped probe, started as verify starts it, runs each snippet in an interpreter of
    its own (here on this host's CPU: the mechanics; docs/gpu.md says where they ran on a
    GPU) without the report channel's token; the judge reads the results from the report."""
    import os
    from dataclasses import replace

    from imgkit.verify.declared.gpu_tests import gpu_test_checks
    from imgkit.verify.declared.in_probe import probe_environment
    from imgkit.verify.facts import parse_report

    from .helpers.gpu_host import probe_host
    from .helpers.reports import GOOD, run

    checks = load_checks(write(tmp_path, GPU_TESTS))
    assert checks.count == 3 and checks.gpu_tests[2].timeout == 2
    report = probe_host(gemm_size=256, env={**os.environ, **probe_environment(checks, gpu=True, timeout=600)})
    ran = {r["name"]: r for r in report["declared"]}
    assert ran["prints its answer"]["exit_code"] == 0
    assert "no token" in ran["prints its answer"]["stdout"]
    assert ran["raises"]["exit_code"] == 1 and "no GPU here" in ran["raises"]["stderr"]
    assert ran["hangs"]["timed_out"] and ran["hangs"]["seconds"] < 10

    facts = parse_report({**GOOD, "declared": report["declared"]})
    judged = {c.name: c for c in gpu_test_checks(checks.gpu_tests, replace(run(GOOD), facts=facts))}
    assert judged["check: prints its answer"].verdict == "pass"
    assert "answer 42" in judged["check: prints its answer"].measured
    assert judged["check: raises"].verdict == "fail" and "no GPU here" in judged["check: raises"].measured
    assert "still running after 2 s" in judged["check: hangs"].diagnosis
    # without a GPU they are not run: skipped, never passed; a report without them fails
    skipped = gpu_test_checks(checks.gpu_tests, run(GOOD, gpu=False))
    assert {(c.verdict, c.required) for c in skipped} == {("skip", False)}
    missing = gpu_test_checks(checks.gpu_tests, run(GOOD))
    assert {c.verdict for c in missing} == {"fail"} and "no result" in missing[0].measured


def test_command_tests_run_in_the_probes_own_container_and_are_judged_from_its_report(
        tmp_path: Path) -> None:
    """One container start for them all: the zipped probe (started as verify starts it)
    runs each command as CST would (no shell, the test's variables added), a hung one
    stopped at its timeout alone; the judge reads them from the report as it judges a
    command run in a container of its own."""
    import os

    from imgkit.verify.declared.commands import commands_from_report
    from imgkit.verify.declared.in_probe import extra_seconds, probe_environment
    from imgkit.verify.facts import parse_report

    from .helpers.gpu_host import probe_host
    from .helpers.reports import GOOD
    checks = load_checks(write(tmp_path, """\
schemaVersion: 2.0.0
globalEnvVars: [{key: GREETING, value: hello}]
commandTests:
  - name: greets
    command: sh
    args: ["-c", "echo $GREETING $WHO"]
    envVars: [{key: WHO, value: team}]
    expectedOutput: ["^hello team$"]
  - name: exits badly
    command: sh
    args: ["-c", "echo oops >&2; exit 3"]
  - name: no such program
    command: /nonexistent
  - name: hangs
    command: sleep
    args: ["60"]
"""))
    riders = probe_environment(checks, gpu=False, timeout=3)
    assert extra_seconds(checks, gpu=False, timeout=3) == 4 * 3
    report = probe_host(gemm_size=256, env={**os.environ, **riders}, args=("--inventory",))
    ran = parse_report({**GOOD, "commands": report["commands"]}).commands
    assert ran is not None
    judged = {c.name: c for c in commands_from_report(checks.command_tests, ran)}
    assert judged["check: greets"].verdict == "pass" and "hello team" in judged["check: greets"].measured
    assert "exit 3, not 0" in judged["check: exits badly"].diagnosis
    assert "oops" in judged["check: exits badly"].measured
    assert judged["check: no such program"].verdict == "fail"
    assert "hung and was stopped" in judged["check: hangs"].diagnosis
    # what is installed, listed beside them (what `verify --json` writes for the site's diffs)
    assert any(d["name"].lower() == "pytest" for d in report["inventory"]["python"]), report["inventory"]
    missing = commands_from_report(checks.command_tests, ())
    assert {c.verdict for c in missing} == {"fail"} and "no result" in missing[0].diagnosis


def test_tests_that_would_not_fit_in_the_probes_container_are_refused(tmp_path: Path) -> None:
    """Linux starts no program with one variable of 128 KiB or more; the tests that ride in
    the probe's container (one variable for command tests, one for GPU tests) stay under
    120 KiB once encoded, or the file is refused by its key and line when read (by verify,
    and with the matrix: `imgkit list`, build, ci)."""
    from imgkit.matrix.checkfile import RIDING_LIMIT
    from imgkit.verify.declared.in_probe import probe_environment

    def gpu_file(script_bytes: int) -> Path:
        body = "x = 1  # " + "y" * script_bytes
        return write(tmp_path, "schemaVersion: 2.0.0\ncommandTests:\n  - name: short\n    command: 'true'\n"
                               f"gpuTests:\n  - name: long\n    run: \"{body}\"\n")
    fits = load_checks(gpu_file(80_000))
    assert len(probe_environment(fits, gpu=True, timeout=600)["IMGKIT_GPU_TESTS"]) <= RIDING_LIMIT
    with pytest.raises(SpecError) as refused:
        load_checks(gpu_file(100_000))
    assert refused.value.key == "gpuTests" and refused.value.line == 5
    assert refused.value.message.startswith(f"{tmp_path / 'checks.yaml'}:5: gpuTests: 130 KiB once encoded")
    both = write(tmp_path, "schemaVersion: 2.0.0\ncommandTests:\n  - name: long\n    command: 'true'\n"
                           f"    args: [\"{'z' * 100_000}\"]\ngpuTests:\n  - name: long\n"
                           f"    run: \"x = 1  # {'y' * 100_000}\"\n")
    with pytest.raises(SpecErrors) as refused_both:          # said at once, as every problem is
        load_checks(both)
    assert [p.key for p in refused_both.value.problems] == ["commandTests", "gpuTests"]
