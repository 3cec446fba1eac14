"""The pipelines a security reviewer signs off: every action pinned by commit with its
release beside it, from one reviewed data file; no checkout keeps its token; and zizmor,
the linter reviewers run, finds nothing at medium or above, offline, in the workflow written
for the bundled matrix or in this repository's own release workflow."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from imgkit.export.actions import pins

ROOT = Path(__file__).resolve().parent.parent
WRITTEN = ROOT / "tests" / "golden" / "ci" / "github.yml"      # kept equal to what ci writes
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
PINNED = re.compile(r"uses: ([\w.-]+/[\w.-]+)@([0-9a-f]{40}) # (v[\w.-]+)$")


def uses_lines(path: Path) -> list[str]:
    return [line.strip().removeprefix("- ") for line in path.read_text().splitlines()
            if line.strip().removeprefix("- ").startswith("uses:")]


@pytest.mark.parametrize("path", [WRITTEN, RELEASE], ids=["written", "release"])
def test_every_action_is_pinned_by_commit_as_the_data_file_says(path: Path) -> None:
    lines = uses_lines(path)
    assert lines
    for line in lines:
        found = PINNED.match(line)
        assert found, f"{path.name}: {line}"
        action, commit, release = found.groups()
        assert pins()[action] == {"commit": commit, "release": release}, line


@pytest.mark.parametrize("path", [WRITTEN, RELEASE], ids=["written", "release"])
def test_no_checkout_keeps_its_token(path: Path) -> None:
    document = yaml.safe_load(path.read_text())
    for name, job in document["jobs"].items():
        for step in job["steps"]:
            if str(step.get("uses", "")).startswith("actions/checkout@"):
                assert step.get("with", {}).get("persist-credentials") is False, name


@pytest.mark.parametrize("path", [WRITTEN, RELEASE], ids=["written", "release"])
def test_zizmor_finds_nothing_at_medium_or_above(path: Path) -> None:
    zizmor = shutil.which("zizmor") or shutil.which("zizmor", path=str(Path(sys.executable).parent))
    assert zizmor, "zizmor is a test dependency (pip install -e '.[test]')"
    done = subprocess.run([zizmor, "--offline", "--min-severity", "medium", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout + done.stderr


def test_zizmor_does_flag_what_the_pins_prevent(tmp_path: Path) -> None:
    zizmor = shutil.which("zizmor") or shutil.which("zizmor", path=str(Path(sys.executable).parent))
    assert zizmor
    loose = tmp_path / "loose.yml"
    loose.write_text("on: push\npermissions: {}\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
                     "    steps:\n      - uses: actions/checkout@v4\n")
    done = subprocess.run([zizmor, "--offline", "--min-severity", "medium", str(loose)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "unpinned-uses" in done.stdout + done.stderr
