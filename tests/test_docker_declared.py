"""A team's container-structure-test file run by `imgkit verify --checks` against a real
image: each kind of test passing and failing, in the verdict by name (JSON and JUnit), a
failed one failing the verdict, a hanging command stopped at its timeout with nothing left
running, and a broken file refused before anything runs."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers.images import no_verify_containers

pytestmark = pytest.mark.docker

PASSING = """\
schemaVersion: 2.0.0
globalEnvVars:
  - key: GREETING
    value: hello
commandTests:
  - name: python greets
    command: python3
    args: ["-c", "import os; print(os.environ['GREETING'])"]
    expectedOutput: ["^hello$"]
  - name: writes where it may
    command: sh
    args: ["-c", "echo x > /tmp/x && cat /tmp/x"]
    expectedOutput: ["x"]
fileExistenceTests:
  - name: the venv's python
    path: /opt/venv/bin/python3
    shouldExist: true
    isExecutableBy: any
  - name: the workspace is the user's
    path: /workspace
    permissions: drwxr-xr-x
    uid: 1000
  - name: no ssh key
    path: /root/.ssh/id_rsa
    shouldExist: false
fileContentTests:
  - name: it is Debian 12
    path: /etc/os-release
    expectedContents: ['VERSION_CODENAME=bookworm']
    excludedContents: ['ubuntu']
metadataTest:
  labels:
    - key: org.imgkit.layer
      value: cuda
  user: imgkit
  workdir: /workspace
"""
FAILING = """\
schemaVersion: 2.0.0
commandTests:
  - name: exits badly
    command: sh
    args: ["-c", "echo oops >&2; exit 3"]
fileContentTests:
  - name: it is Ubuntu
    path: /etc/os-release
    expectedContents: ['ID=ubuntu']
metadataTest:
  exposedPorts: ["8888"]
"""
HANGING = """\
schemaVersion: 2.0.0
commandTests:
  - name: never ends
    command: sleep
    args: ["600"]
"""


def verify(image: str, checks: Path, tmp_path: Path, *extra: str) -> tuple[int, dict, str]:
    out = tmp_path / "verdict.json"
    out.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-m", "imgkit", "verify", image, "--gpus", "none",
                           "--checks", str(checks), "--json", str(out),
                           "--junit", str(tmp_path / "junit.xml"), *extra],
                          capture_output=True, text=True, timeout=600)
    verdict = json.loads(out.read_text()) if out.is_file() else {}
    return done.returncode, verdict, done.stdout + done.stderr


def declared(verdict: dict) -> dict[str, dict]:
    return {c["name"]: c for c in verdict["checks"] if c["name"].startswith("check: ")}


def test_a_teams_cst_file_is_judged_in_the_verdict(engine, mini, tmp_path):
    (tmp_path / "ok.yaml").write_text(PASSING)
    code, verdict, said = verify(mini, tmp_path / "ok.yaml", tmp_path)
    assert code == 0, said
    found = declared(verdict)
    assert set(found) == {"check: python greets", "check: writes where it may",
                          "check: the venv's python", "check: the workspace is the user's",
                          "check: no ssh key", "check: it is Debian 12", "check: metadata"}
    assert all(c["verdict"] == "pass" for c in found.values()), found
    assert "hello" in found["check: python greets"]["measured"]
    assert 'name="check: python greets"' in (tmp_path / "junit.xml").read_text()

    (tmp_path / "bad.yaml").write_text(FAILING)
    code, verdict, said = verify(mini, tmp_path / "bad.yaml", tmp_path)
    assert code == 1, said
    found = declared(verdict)
    assert [c["verdict"] for c in found.values()] == ["fail", "fail", "fail"]
    assert "exit 3, not 0" in found["check: exits badly"]["diagnosis"]
    assert "oops" in found["check: exits badly"]["measured"]
    assert "no /ID=ubuntu/" in found["check: it is Ubuntu"]["diagnosis"]
    assert "port 8888 not exposed" in found["check: metadata"]["diagnosis"]
    assert "<failure" in (tmp_path / "junit.xml").read_text()
    assert not no_verify_containers(engine)


def test_tests_too_long_to_ride_in_the_probes_container_are_refused_before_it_runs(
        engine, mini, tmp_path):
    """Three command tests of 60 KB each: 240 KB of base64, more than Linux lets one variable
    of the probe's container hold (it would not start: "argument list too long"). Refused
    with the file and key, nothing run (test_declared.py: where the limit is)."""
    long_arg = "x" * 60_000
    tests = "".join(f"  - name: long {n}\n    command: sh\n    args: [\"-c\", \"echo {n}\", \"{long_arg}\"]\n"
                    f"    expectedOutput: [\"^{n}$\"]\n" for n in range(3))
    (tmp_path / "long.yaml").write_text("schemaVersion: 2.0.0\ncommandTests:\n" + tests)
    before = no_verify_containers(engine)
    code, verdict, said = verify(mini, tmp_path / "long.yaml", tmp_path)
    assert code == 2 and verdict == {}, said
    assert f"{tmp_path / 'long.yaml'}:2: commandTests: 234 KiB once encoded" in said, said
    assert "Traceback" not in said and no_verify_containers(engine) == before


def test_a_hanging_check_is_stopped_and_a_broken_file_refused(engine, mini, tmp_path):
    (tmp_path / "hang.yaml").write_text(HANGING)
    code, verdict, said = verify(mini, tmp_path / "hang.yaml", tmp_path, "--timeout", "20")
    assert code == 1, said
    [hung] = declared(verdict).values()
    assert hung["verdict"] == "fail" and "hung and was stopped" in hung["diagnosis"]
    assert not no_verify_containers(engine)                 # nothing left running
    (tmp_path / "broken.yaml").write_text(HANGING.replace("    args:", "    setup: [[x]]\n    args:"))
    code, verdict, said = verify(mini, tmp_path / "broken.yaml", tmp_path)
    assert code == 2 and "broken.yaml:5: commandTests[0].setup" in said, said
    assert "Traceback" not in said and verdict == {}


SERVICES = """\
schemaVersion: 2.0.0
serviceTests:
  - name: the listing is served
    port: 8000
    path: /
    expectedOutput: ["Directory listing"]
    timeout: 30
  - name: a bare port is enough
    port: 8000
  - name: a page that is not there
    port: 8000
    path: /missing
    timeout: 30
  - name: asked as another command, on another port
    port: 8001
    path: /
    command: ["python3", "-m", "http.server", "8001"]
    expectedStatus: 200
"""
QUIET = """\
schemaVersion: 2.0.0
serviceTests:
  - name: never answers
    port: 8000
    timeout: 4
"""


@pytest.fixture(scope="module")
def servers(engine, mini_stack, namespace):
    """Three images of the mini python stack: one serving HTTP on 8000 as a non-root user,
    one whose server exits at once, one that never listens."""
    from .helpers.images import build_from_files
    made = {}
    for name, cmd in (("serves", '["python3", "-m", "http.server", "8000"]'),
                      ("exits", '["python3", "-c", "import sys; print(\\"port taken\\"); sys.exit(4)"]'),
                      ("quiet", '["sleep", "600"]')):
        dockerfile = (f"FROM {mini_stack.python}\nWORKDIR /tmp\nUSER 1000\nCMD {cmd}\n").encode()
        made[name] = build_from_files(engine, f"{namespace}/service:{name}", {"Dockerfile": dockerfile})
    yield made
    for ref in made.values():
        engine.client.images.remove(ref, force=True)


def test_a_service_must_answer_as_declared(engine, servers, tmp_path):
    (tmp_path / "services.yaml").write_text(SERVICES)
    code, verdict, said = verify(servers["serves"], tmp_path / "services.yaml", tmp_path)
    assert code == 1, said
    found = declared(verdict)
    assert [c["verdict"] for c in found.values()] == ["pass", "pass", "fail", "pass"], found
    assert "HTTP 200" in found["check: the listing is served"]["measured"]
    assert "a connection" in found["check: a bare port is enough"]["measured"]
    assert "HTTP 404" in found["check: a page that is not there"]["diagnosis"]
    assert 'name="check: the listing is served"' in (tmp_path / "junit.xml").read_text()
    assert not no_verify_containers(engine)


def test_a_server_that_exits_or_never_answers_fails_and_is_cleaned_up(engine, servers, tmp_path):
    (tmp_path / "services.yaml").write_text(SERVICES)
    code, verdict, said = verify(servers["exits"], tmp_path / "services.yaml", tmp_path)
    assert code == 1, said
    first = declared(verdict)["check: the listing is served"]
    assert "the server exited with code 4" in first["measured"], first
    assert "port taken" in first["diagnosis"]
    (tmp_path / "quiet.yaml").write_text(QUIET)
    code, verdict, said = verify(servers["quiet"], tmp_path / "quiet.yaml", tmp_path)
    assert code == 1, said
    [quiet] = declared(verdict).values()
    assert quiet["measured"] == "no answer on port 8000 within 4 s", quiet
    assert not no_verify_containers(engine)                 # both containers gone


def test_gpu_tests_without_a_gpu_are_skipped_not_passed(engine, mini, tmp_path):
    (tmp_path / "gpu.yaml").write_text("schemaVersion: 2.0.0\ngpuTests:\n"
                                       "  - name: cuda is there\n    run: import ctypes\n")
    code, verdict, said = verify(mini, tmp_path / "gpu.yaml", tmp_path)
    assert code == 0, said                                   # GPU-unverified, like imgkit's own
    [skipped] = declared(verdict).values()
    assert (skipped["verdict"], skipped["required"]) == ("skip", False), skipped
    assert not verdict["gpu_verified"]


def test_verify_inside_the_project_judges_its_familys_checks_as_ci_does(engine, mini, namespace,
                                                                        tmp_path):
    """`imgkit verify TAG` of an image its project declares, run in that project, judges the
    checks its family names (`checks:`), as the pipeline's verify job does; outside the
    project nothing tells which checks, and none are judged; --checks judges another file."""
    from .helpers.images import MINI_FAMILY
    images = tmp_path / "project" / "images"
    (images / "checks").mkdir(parents=True)
    (images / "mini.yaml").write_text(MINI_FAMILY)
    (images / "app.yaml").write_text(
        f"family: app\nextends: {{family: mini}}\nrepository: {namespace}/app\n"
        'tag: "{parent_tag}"\napt: [jq]\nchecks: checks/app.yaml\n')
    (images / "checks" / "app.yaml").write_text(
        "schemaVersion: 2.0.0\nfileExistenceTests:\n  - name: jq is there\n    path: /usr/bin/jq\n"
        "    shouldExist: true\n")
    project = tmp_path / "project"
    (project / "imgkit.toml").write_text(f'namespace = "{namespace}"\n')
    built = subprocess.run([sys.executable, "-m", "imgkit", "build"], cwd=project,
                           capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stdout + built.stderr
    app = f"{namespace}/app:11.8-cudart-py3.11-bookworm"

    def verified(cwd: Path, *extra: str) -> tuple[int, dict[str, str], str]:
        out = tmp_path / "v.json"
        done = subprocess.run([sys.executable, "-m", "imgkit", "verify", app, "--gpus", "none",
                               "--json", str(out), *extra], cwd=cwd, capture_output=True,
                              text=True, timeout=600)
        checks = {c["name"]: c["verdict"] for c in json.loads(out.read_text())["checks"]}
        return done.returncode, checks, done.stderr
    code, checks, said = verified(project / "images")          # any folder of the project
    assert code == 0 and checks["check: jq is there"] == "pass", (checks, said)
    assert "judging images/checks/app.yaml too" in said or "checks/app.yaml" in said, said
    (images / "checks" / "app.yaml").write_text(
        "schemaVersion: 2.0.0\nfileExistenceTests:\n  - name: jq is gone\n    path: /usr/bin/jq\n"
        "    shouldExist: false\n")
    code, checks, _ = verified(project)
    assert code == 1 and checks["check: jq is gone"] == "fail"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, checks, _ = verified(elsewhere)
    assert code == 0 and not [n for n in checks if n.startswith("check: ")]
    other = tmp_path / "other.yaml"
    other.write_text("schemaVersion: 2.0.0\nfileExistenceTests:\n  - name: the venv\n"
                     "    path: /opt/venv\n    shouldExist: true\n")
    code, checks, _ = verified(project, "--checks", str(other))
    assert code == 0 and "check: the venv" in checks and "check: jq is gone" not in checks
    assert no_verify_containers(engine) == []
