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

from .conftest import no_verify_containers

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


def verify(image: str, checks: Path, tmp_path: Path, *extra: str) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    out = tmp_path / "verdict.json"
    out.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-m", "imgkit", "verify", image, "--gpus", "none",
                           "--checks", str(checks), "--json", str(out),
                           "--junit", str(tmp_path / "junit.xml"), *extra],
                          capture_output=True, text=True, timeout=600)
    verdict = json.loads(out.read_text()) if out.is_file() else {}
    return done.returncode, verdict, done.stdout + done.stderr


def declared(verdict: dict) -> dict[str, dict]:  # type: ignore[type-arg]
    return {c["name"]: c for c in verdict["checks"] if c["name"].startswith("check: ")}


def test_a_teams_cst_file_is_judged_in_the_verdict(engine, mini, tmp_path):  # type: ignore[no-untyped-def]
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


def test_a_hanging_check_is_stopped_and_a_broken_file_refused(engine, mini, tmp_path):  # type: ignore[no-untyped-def]
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
