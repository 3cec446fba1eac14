"""Project discovery: run from any folder inside a project, a command finds its matrix by
walking up to imgkit.toml or [tool.imgkit] in pyproject.toml; the command line, then the
IMGKIT_* variables, then the project file, then imgkit's defaults decide each setting."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from imgkit.cli import app
from imgkit.project import find_project, selection_from

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()
CUDA_ONLY = 'family: base\naxes:\n  cuda: ["12.8"]\n'


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose matrix is not in images/: only the project file can say where."""
    root = tmp_path / "team"
    (root / "matrix").mkdir(parents=True)
    (root / "matrix" / "base.yaml").write_text(CUDA_ONLY)
    (root / "imgkit.toml").write_text('images = "matrix"\nnamespace = "team"\n')
    (root / "deep" / "er").mkdir(parents=True)
    for name in ("IMGKIT_IMAGES", "IMGKIT_NAMESPACE", "IMGKIT_TEMPLATES", "IMGKIT_COMPAT"):
        monkeypatch.delenv(name, raising=False)
    return root


def listing(*args: str) -> str:
    result = runner.invoke(app, ["list", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_any_folder_inside_the_project_finds_its_matrix(project: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project / "deep" / "er")
    assert "team/cuda:12.8-runtime-py3.11-bookworm" in listing()
    assert find_project().file == project / "imgkit.toml"


def test_pyproject_counts_only_with_a_tool_imgkit_table(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "images", root / "images")
    (root / "pyproject.toml").write_text('[tool.imgkit]\nnamespace = "ml"\n')
    (root / "pkg").mkdir()
    (root / "pkg" / "pyproject.toml").write_text('[project]\nname = "pkg"\n')   # not a project
    monkeypatch.chdir(root / "pkg")
    assert find_project().file == root / "pyproject.toml"
    selection = selection_from()
    assert selection.namespace == "ml"
    assert selection.images.resolve() == (root / "images").resolve()  # the default, from the root


def test_the_command_line_then_the_variables_then_the_project_decide(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    assert "team/cuda:" in listing()
    monkeypatch.setenv("IMGKIT_NAMESPACE", "fromenv")
    assert "fromenv/cuda:" in listing()
    assert "flag/cuda:" in listing("--namespace", "flag")


def test_the_projects_selection_is_the_default_one(project: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "matrix" / "base.yaml").write_text(CUDA_ONLY.replace('"12.8"', '"12.8", "12.4"'))
    (project / "imgkit.toml").write_text('images = "matrix"\n[select]\ncuda = "12.4"\n')
    monkeypatch.chdir(project)
    out = listing()
    assert "cuda:12.4-runtime" in out and "cuda:12.8-runtime" not in out
    out = listing("--cuda", "12.8")                    # any selection flag replaces it
    assert "cuda:12.8-runtime" in out and "cuda:12.4-runtime" not in out


@pytest.mark.parametrize("text, said", [
    ('images = 5\n', "imgkit.toml:1: images: expected a path in quotes, got a number"),
    ('images = ""\n', "imgkit.toml:1: images: expected a path in quotes, got an empty text"),
    ('matrix = "images"\n', "imgkit.toml:1: matrix: not a setting"),
    ('[select]\ncuda = 12.8\n', "imgkit.toml:2: select.cuda: expected text, got a number"),
    ('[select]\nplatforms = ["linux/s390x"]\n', "'linux/s390x' is not one of"),
    ('images = "matrix\n', "imgkit.toml: not valid TOML"),
])
def test_a_bad_project_file_is_exit_2_naming_file_and_key(
        project: Path, monkeypatch: pytest.MonkeyPatch, text: str, said: str) -> None:
    (project / "imgkit.toml").write_text(text)
    monkeypatch.chdir(project / "deep")
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 2 and said in " ".join(result.output.split()), result.output


def test_every_problem_of_a_project_file_is_said_at_once_on_its_line(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # as a team writes it in pyproject.toml, a mistake on most lines (the nearest file wins)
    (project / "deep" / "pyproject.toml").write_text(
        '[project]\nname = "team"\n\n[tool.imgkit]\nimagez = "matrix"\nregistry = 7\n'
        'cluster = "gpu"\n\n[tool.imgkit.select]\ncuda = 12.10\nonly = "ml/*"\n'
        'platforms = ["linux/s390x"]\n')
    monkeypatch.chdir(project / "deep")
    result = runner.invoke(app, ["list"], terminal_width=250)
    assert result.exit_code == 2, result.output
    lines = [" ".join(line.split()) for line in result.output.splitlines()]
    said = {line.split(": ", 2)[1]: line for line in lines if "pyproject.toml:" in line}
    assert said["imagez"].endswith("pyproject.toml:5: imagez: not a setting")
    assert "hint: did you mean images?" in " ".join(lines)
    assert "pyproject.toml:6: registry: expected text in quotes, got a number" in said["registry"]
    assert "pyproject.toml:7: cluster: expected a table, got text" in said["cluster"]
    assert "pyproject.toml:10: select.cuda: expected text, got a number" in said["select.cuda"]
    assert 'hint: write cuda = "12.10"' in lines          # as typed: TOML reads it as 12.1
    assert 'hint: write only = ["ml/*"]' in lines
    assert "pyproject.toml:12: select.platforms: 'linux/s390x'" in said["select.platforms"]


def test_no_project_says_what_was_searched_and_what_to_do(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("IMGKIT_IMAGES", raising=False)
    result = runner.invoke(app, ["list"])
    out = " ".join(result.output.split())
    assert result.exit_code == 2
    assert f"in {tmp_path.resolve()} or above it" in out
    assert "imgkit init" in out and "--images DIR" in out and "IMGKIT_IMAGES" in out


def test_a_project_naming_a_missing_folder_is_named(project: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "imgkit.toml").write_text('images = "nowhere"\n')
    monkeypatch.chdir(project)
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 2
    assert "imgkit.toml says images = nowhere" in " ".join(result.output.split())


def test_what_the_project_says_is_not_repeated_to_ci_jobs(project: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project / "deep")
    assert selection_from().matrix_args() == ()        # the jobs find the same project file
    assert selection_from(namespace="other").matrix_args() == ("--namespace", "other")


def test_the_registry_and_the_package_index_are_project_settings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`registry` is where `imgkit ci` promotes when --registry is not given; `index_url` the
    index builds, locks and outdated use when --index-url is not given. The option, then the
    IMGKIT_* variable, then the project file."""
    from imgkit.project import setting_or
    for name in ("IMGKIT_REGISTRY", "IMGKIT_INDEX_URL", "IMGKIT_IMAGES"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "imgkit.toml").write_text(
        f'images = "{ROOT / "images"}"\nregistry = "r.example.com/team"\n'
        'index_url = "https://pypi.example.com/simple"\n')
    monkeypatch.chdir(tmp_path)
    assert setting_or(None, "index_url") == "https://pypi.example.com/simple"
    assert setting_or("https://other/simple", "index_url") == "https://other/simple"
    monkeypatch.setenv("IMGKIT_INDEX_URL", "https://env/simple")
    assert setting_or(None, "index_url") == "https://env/simple"
    result = runner.invoke(app, ["ci", "github", "--only", "paddle:*", "--out", "ci.yml"])
    assert result.exit_code == 0, result.output
    assert "--to r.example.com/team/paddle" in (tmp_path / "ci.yml").read_text()
    (tmp_path / "imgkit.toml").write_text(f'images = "{ROOT / "images"}"\n')
    result = runner.invoke(app, ["ci", "github", "--only", "paddle:*", "--out", "ci2.yml"])
    assert result.exit_code == 2 and "--registry is needed" in result.output
    assert "registry =" in " ".join(result.output.split()) and not (tmp_path / "ci2.yml").exists()
    (tmp_path / "imgkit.toml").write_text("registry = 7\n")
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 2 and "registry: expected text in quotes, got a number" in result.output


def test_a_second_package_index_is_a_project_setting(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """extra_index_url (or IMGKIT_EXTRA_INDEX_URL): served to every build's pip steps beside
    the index, and asked by `imgkit lock`'s resolver too."""
    from imgkit.builder.buildenv import build_env
    from imgkit.lock.resolve import pip_command
    from imgkit.project import setting_or
    monkeypatch.delenv("IMGKIT_EXTRA_INDEX_URL", raising=False)
    (tmp_path / "imgkit.toml").write_text('extra_index_url = "http://10.0.0.5:8080/simple"\n')
    monkeypatch.chdir(tmp_path)
    extra = setting_or(None, "extra_index_url")
    assert extra == "http://10.0.0.5:8080/simple"
    assert build_env("none", None, extra).files() == {"extra-index-url": extra.encode()}
    command = pip_command(["six==1.16.0"], tmp_path / "c.txt", tmp_path / "r.json", "3.11",
                          "linux/amd64", "2.36", tmp_path / "t", None, extra)
    at = command.index("--extra-index-url")
    assert command[at + 1] == extra and "--trusted-host" in command       # plain http
    monkeypatch.setenv("IMGKIT_EXTRA_INDEX_URL", "https://env.example/simple")
    assert setting_or(None, "extra_index_url") == "https://env.example/simple"


def test_a_bad_namespace_is_said_where_it_was_written(tmp_path: Path) -> None:
    """The project file's, a variable's or the option's: each named as the user wrote it."""
    import os
    import subprocess
    import sys
    (tmp_path / "images").mkdir()
    (tmp_path / "imgkit.toml").write_text('namespace = "ML Team"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMGKIT_")}

    def listed(*args: str, **extra: str) -> str:
        done = subprocess.run([sys.executable, "-m", "imgkit", "list", *args], cwd=tmp_path,
                              capture_output=True, text=True, env={**env, **extra})
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        return done.stderr
    assert f"{tmp_path / 'imgkit.toml'}: namespace = 'ML Team'" in listed()
    assert "IMGKIT_NAMESPACE='Bad NS'" in listed(IMGKIT_NAMESPACE="Bad NS")
    assert "--namespace 'X Y'" in listed("--namespace", "X Y")
    assert "'team/ml' would do" in " ".join(listed("--namespace", "Team/ML").split())
