"""The command line as a user meets it: exit codes and messages, never a traceback."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from .helpers.cli import imgkit

ROOT = Path(__file__).resolve().parent.parent




@pytest.mark.parametrize("value", ["99.9", "11.8; rm -rf /", "", "$(id)"])
def test_bad_cuda_selection_exits_2_naming_the_value(value: str) -> None:
    result = imgkit("build", "--cuda", value, "--dry-run",
                    env={"DOCKER_HOST": "unix:///nonexistent.sock"})
    assert result.returncode == 2, result.stderr
    assert repr(value) in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_matrix_file_exits_2_naming_file_and_key(tmp_path: Path) -> None:
    (tmp_path / "images").mkdir()
    (tmp_path / "templates").mkdir()
    (tmp_path / "images" / "x.yaml").write_text("family: x\naxes:\n  cuda: ['11.8\\nRUN id']\n")
    result = imgkit("build", "--images", str(tmp_path / "images"))
    assert result.returncode == 2
    assert "x.yaml:3: axes.cuda[0]" in result.stderr and "Traceback" not in result.stderr


def test_unreachable_engine_exits_3() -> None:
    result = imgkit("build", "--cuda", "11.8", env={"DOCKER_HOST": "unix:///nonexistent.sock"})
    assert result.returncode == 3, result.stderr
    assert "cannot reach the Docker engine" in result.stderr
    result = imgkit("verify", "paddle:2.6.2-gpu-cuda11.8-cudnn8",
                    env={"DOCKER_HOST": "unix:///nonexistent.sock"})
    assert result.returncode == 3


@pytest.mark.parametrize("address, said, hint", [
    ("tcp://127.0.0.1:1", "cannot reach the Docker engine at tcp://127.0.0.1:1: Connection refused",
     "DOCKER_HOST is tcp://127.0.0.1:1: start the engine there, or unset DOCKER_HOST"),
    ("unix:///nonexistent/podman/podman.sock",
     "cannot reach the Podman service at /nonexistent/podman/podman.sock",
     "systemctl start podman.socket"),
    ("http//engine", "DOCKER_HOST 'http//engine' is not an engine's address",
     "tcp://HOST:2375"),
])
def test_an_engine_address_that_does_not_answer_is_said_in_words(
        address: str, said: str, hint: str) -> None:
    """What DOCKER_HOST names, in a line: the address, the system's words (not urllib3's
    nested repr), and what to do about that address."""
    result = imgkit("verify", "x:1", "--gpus", "none", env={"DOCKER_HOST": address})
    shown = " ".join(result.stderr.split())
    assert result.returncode == 3 and said in shown and hint in shown, result.stderr
    assert "HTTPConnectionPool" not in shown and "Traceback" not in shown


def test_bad_verify_options_exit_2() -> None:
    assert imgkit("verify", "x:y", "--gpus", "all;rm").returncode == 2
    result = imgkit("verify", "x:y", "--expect", "cuda", "--gpus", "none",
                    env={"DOCKER_HOST": "unix:///nonexistent.sock"})
    assert result.returncode in (2, 3)


@pytest.mark.parametrize("args, message", [
    (["build", "--cuda", "11.8", "--platform", "linux/s390x", "--dry-run"],
     "--platform 'linux/s390x': expected one of linux/amd64, linux/arm64"),
    (["build", "--cuda", "11.8", "--platform", "linux/arm64", "--dry-run"],
     "the selection makes no image for linux/arm64"),
    (["publish", "--cuda", "12.8", "--platform", "linux/arm64", "--to", "127.0.0.1:5000"],
     "--platform stages one platform's images for a later merge"),
    (["merge", "--cuda", "12.8", "--candidates", "/nonexistent"], "not a directory"),
])
def test_bad_platform_selections_exit_2_before_any_engine(args: list[str], message: str) -> None:
    result = imgkit(*args, env={"DOCKER_HOST": "unix:///nonexistent.sock"})
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in " ".join(result.stderr.split()) and "Traceback" not in result.stderr


def test_render_writes_one_context_per_image(tmp_path: Path) -> None:
    result = imgkit("render", "--cuda", "11.8", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    dirs = sorted(p.name for p in tmp_path.iterdir())
    assert "paddle_2.6.2-gpu-cuda11.8-cudnn8" in dirs
    assert (tmp_path / "imgkit_python_3.11-bookworm" / "imgkit" / "probe" / "__main__.py").exists()
    assert all((tmp_path / d / "Dockerfile").exists() for d in dirs)


def test_help_lists_the_commands() -> None:
    result = imgkit("--help")
    for command in ("build", "render", "verify", "probe", "list", "publish"):
        assert command in result.stdout


def test_every_option_help_is_shown_whole() -> None:
    """typer renders help with rich markup: a `[...]` in a help text vanishes from --help."""
    import typer.main

    from imgkit.cli import app
    group = typer.main.get_command(app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        for param in command.params:
            text = getattr(param, "help", None) or ""
            assert "[" not in text, f"imgkit {name} {param.name}: {text}"
    shown = " ".join(imgkit("build", "--help").stdout.replace("│", " ").split())
    assert "templates/ beside --images" in shown and "the host's apt sources" in shown


def test_an_output_files_folder_is_made_and_an_unwritable_one_is_said(tmp_path: Path) -> None:
    """`--json reports/plan.json` in a folder no step made yet is written; a file that
    cannot be written is exit 2 naming the option and the path before any work is done,
    never a traceback."""
    wanted = tmp_path / "reports" / "today" / "plan.json"
    done = imgkit("list", "--cuda", "11.8", "--json", str(wanted))
    assert done.returncode == 0, done.stderr
    assert "paddle:2.6.2-gpu-cuda11.8-cudnn8" in json.loads(wanted.read_text()).__repr__()
    refused = imgkit("list", "--cuda", "11.8", "--json", "/proc/imgkit/plan.json")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    said = " ".join(refused.stderr.replace("│", " ").split())
    assert "'--json': /proc/imgkit/plan.json: cannot make its folder" in said, said
    assert "Traceback" not in refused.stderr and "paddle" not in refused.stdout   # no work done


def test_dash_is_stdout_and_the_words_go_to_stderr(tmp_path: Path) -> None:
    """`--json -` as with curl or jq: `imgkit list --json - | jq` reads JSON alone, the listing
    goes to stderr, and no file named '-' is left; two outputs cannot both take stdout."""
    done = imgkit("list", "--images", str(ROOT / "images"), "--cuda", "11.8", "--json", "-",
                  cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    tags = [image["tag"] for image in json.loads(done.stdout)["images"]]
    assert "paddle:2.6.2-gpu-cuda11.8-cudnn8" in tags
    assert "paddle:2.6.2-gpu-cuda11.8-cudnn8" in done.stderr       # the listing, for a person
    assert not (tmp_path / "-").exists()
    both = imgkit("verify", "img:1", "--json", "-", "--junit", "-", cwd=tmp_path)
    assert both.returncode == 2, both.stdout + both.stderr
    assert "another output already writes to stdout" in " ".join(
        both.stderr.replace("│", " ").split())


@pytest.mark.parametrize("command, said", [
    (("render", "--cuda", "11.8", "--out", "/proc/imgkit"), "--out /proc/imgkit: cannot make"),
    (("export", "bake", "--cuda", "11.8", "--out", "/proc/imgkit"), "--out /proc/imgkit: cannot"),
    (("init", "/proc/imgkit"), "imgkit init /proc/imgkit: cannot make the folder"),
    (("site", "--out", "/proc/imgkit"), "--out /proc/imgkit: cannot make the folder"),
])
def test_an_output_folder_that_cannot_be_made_is_said_before_any_work(
        command: tuple[str, ...], said: str) -> None:
    refused = imgkit(*command)
    assert refused.returncode == 2 and said in refused.stderr, refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_path_no_command_words_itself_is_still_named_never_a_traceback() -> None:
    """The last net: an OSError with a path, from anywhere in a command, is the path and
    the system's words (exit 2 for a path's mistake), not Python's traceback."""
    import typer

    from imgkit.cli.framework import reports_errors

    def writes_where_it_cannot() -> None:
        Path("/proc/imgkit/x").write_text("x")
    with pytest.raises(typer.Exit) as stopped:
        reports_errors(writes_where_it_cannot)()
    assert stopped.value.exit_code == 2

    def a_bug() -> None:
        raise OSError("no path in it")
    with pytest.raises(OSError):
        reports_errors(a_bug)()
