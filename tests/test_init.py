"""`imgkit init`: the starter project lists and renders as written, passes the published
schema, is found from its subfolders, and never overwrites a file. Its first image is built
and verified against the real engine in tests/test_docker_init.py."""
from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from imgkit.cli import app
from imgkit.matrix.schema import SCHEMA_LINE, family_schema

runner = CliRunner()


def init(folder: Path, *args: str) -> str:
    result = runner.invoke(app, ["init", str(folder), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_starter_project_lists_and_renders_as_written(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    out = init(tmp_path / "team", "--namespace", "team")
    assert "imgkit build --only 'team/cuda:12.8-cudart-*'" in out
    monkeypatch.chdir(tmp_path / "team" / "images")            # found from a subfolder
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0, result.output
    for image in ("team/cuda:12.8-cudart-py3.11-bookworm", "team/pytorch:2.10.0-cuda12.8",
                  "team/pytorch-extras:2.10.0-cuda12.8"):
        assert image in result.output
    result = runner.invoke(app, ["render", "--out", str(tmp_path / "contexts")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "contexts" / "team_pytorch-extras_2.10.0-cuda12.8" / "Dockerfile").is_file()


def test_every_starter_family_names_and_passes_the_schema(tmp_path: Path) -> None:
    init(tmp_path)
    families = sorted((tmp_path / "images").glob("*.yaml"))
    assert len(families) == 3
    validator = jsonschema.Draft202012Validator(family_schema())
    kinds = set()
    for path in families:
        text = path.read_text()
        assert text.splitlines()[0] == SCHEMA_LINE          # editors find ../matrix.schema.json
        raw = yaml.safe_load(text)
        assert not list(validator.iter_errors(raw)), path
        kinds.add("extension" if "extends" in raw else "framework" if "framework" in raw else "stack")
    assert kinds == {"stack", "framework", "extension"}
    assert (tmp_path / "matrix.schema.json").is_file()


def test_init_never_overwrites(tmp_path: Path) -> None:
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "cuda.yaml").write_text("family: mine\n")
    result = runner.invoke(app, ["init", str(tmp_path)])
    assert result.exit_code == 2 and "already has images/cuda.yaml" in result.output
    assert (tmp_path / "images" / "cuda.yaml").read_text() == "family: mine\n"
    assert not (tmp_path / "imgkit.toml").exists()          # nothing half-written


def test_family_files_already_in_the_folder_are_named_as_read_with_the_starters(
        tmp_path: Path) -> None:
    """A team's own files in images/ stay, and `imgkit list` (the first step it is told to
    run) reads them too: said, so that their mistakes are not taken for the starter's."""
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "team.yaml").write_text("family: mine\n")
    result = runner.invoke(app, ["init", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert ("(images/ held team.yaml already: `imgkit list` reads it with the starter's "
            "families)") in " ".join(result.output.split())


def test_a_bad_namespace_is_refused(tmp_path: Path) -> None:
    result = runner.invoke(app, ["init", str(tmp_path), "--namespace", "Team ML"])
    assert result.exit_code == 2 and "--namespace 'Team ML'" in result.output
    assert not any(tmp_path.iterdir())
    # a capital alone: the spelling that would do
    result = runner.invoke(app, ["init", str(tmp_path), "--namespace", "ML/Team"])
    assert result.exit_code == 2 and "'ml/team' would do" in result.output, result.output


def test_on_request_the_ci_pipeline_as_imgkit_ci_writes_it(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    init(tmp_path / "team", "--namespace", "team", "--ci", "gitlab", "--registry",
         "registry.example.com")
    written = (tmp_path / "team" / ".gitlab-ci.yml").read_text()
    monkeypatch.chdir(tmp_path / "team")
    again = runner.invoke(app, ["ci", "gitlab", "--registry", "registry.example.com",
                                "--out", str(tmp_path / "again.yml")])
    assert again.exit_code == 0, again.output
    assert written.splitlines()[2:] == (tmp_path / "again.yml").read_text().splitlines()[2:]
    assert "imgkit ci gitlab --registry registry.example.com --out .gitlab-ci.yml" in written


def test_in_a_folder_of_a_repository_the_pipeline_goes_where_the_platform_reads_it(
        tmp_path: Path) -> None:
    """A monorepo's project: GitHub reads workflows at the repository's root only, so the
    workflow goes there, its jobs running in the project's folder."""
    import subprocess
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    result = runner.invoke(app, ["init", str(tmp_path / "platform" / "gpu"), "--ci", "github",
                                 "--registry", "registry.example.com/ml"])
    assert result.exit_code == 0, result.output
    workflow = tmp_path / ".github" / "workflows" / "images.yml"
    assert workflow.is_file() and not (tmp_path / "platform" / "gpu" / ".github").exists()
    assert "working-directory: platform/gpu" in workflow.read_text()
    assert str(workflow.relative_to(tmp_path)) in result.output
    again = runner.invoke(app, ["init", str(tmp_path / "platform" / "cpu"), "--ci", "github",
                                "--registry", "registry.example.com/ml"])
    assert again.exit_code == 2 and "is there already: nothing was written" in again.output
    assert not (tmp_path / "platform" / "cpu").exists()


@pytest.mark.parametrize("args, said", [
    (["--ci", "github"], "go together: add --registry"),
    (["--registry", "registry.example.com"], "go together: add --ci github|gitlab"),
    (["--ci", "jenkins", "--registry", "registry.example.com"],
     "--ci 'jenkins': imgkit writes pipelines for github and gitlab"),
    (["--namespace", "team", "--ci", "github", "--registry", "registry.example.com/team"],
     "'team' is both the end of --registry"),             # refused after the plan: undone
])
def test_a_pipeline_that_cannot_be_written_leaves_nothing(tmp_path: Path, args: list[str],
                                                          said: str) -> None:
    (tmp_path / "here").mkdir()
    result = runner.invoke(app, ["init", str(tmp_path / "here" / "team"), *args])
    assert result.exit_code == 2 and said in " ".join(result.output.split()), result.output
    assert list((tmp_path / "here").iterdir()) == []


def test_init_with_ci_in_a_project_says_imgkit_ci_writes_its_pipeline(tmp_path: Path) -> None:
    """A team that started without a pipeline and reaches for `init --ci` again."""
    init(tmp_path)
    again = CliRunner().invoke(app, ["init", str(tmp_path), "--ci", "gitlab",
                                     "--registry", "registry.gitlab.com/acme/ml"])
    said = " ".join(again.output.split())
    assert again.exit_code == 2 and "nothing was written" in said, said
    assert "`imgkit ci gitlab --registry registry.gitlab.com/acme/ml` in it writes its pipeline" in said
    assert not (tmp_path / ".gitlab-ci.yml").exists()
