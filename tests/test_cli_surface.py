"""The command line as a person meets it: help in words, `-h` and `--version`, one meaning
per flag name, an option that takes one value refused when given twice, shell completion.
No old spelling is kept: 0.1 was never released, so nobody wrote one."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
import typer.main
from typer.testing import CliRunner

from imgkit.cli import app

ROOT = Path(__file__).resolve().parent.parent
PYTHON_TYPES = re.compile(r"<(?:bool|str|int|float|path|list\[[a-z]+\])>|\b(?:TEXT|INTEGER|FLOAT|"
                          r"PATH|BOOLEAN)\b")


def commands() -> Iterator[tuple[str, Any]]:
    """('verify', its click command), ('export bake', ...), every command there is."""
    def walk(command: Any, path: list[str]) -> Iterator[tuple[str, Any]]:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                yield from walk(sub, [*path, name])
        else:
            yield " ".join(path), command
    yield from walk(typer.main.get_command(app), [])


def visible_options(command: Any) -> list[Any]:
    return [p for p in command.params if p.param_type_name == "option" and not p.hidden]


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


@pytest.mark.parametrize("name", sorted(dict(commands())) + ["", "export"])
def test_every_command_answers_dash_h_in_words(name: str) -> None:
    result = invoke(*name.split(), "-h")
    assert result.exit_code == 0, result.output
    assert "Usage: " in result.output
    assert not PYTHON_TYPES.search(result.output), PYTHON_TYPES.search(result.output)


def test_every_option_that_takes_a_value_shows_it_as_a_word() -> None:
    for name, command in commands():
        for option in visible_options(command):
            if not option.is_flag:
                assert option.metavar and not PYTHON_TYPES.search(f"<{option.metavar}>"), \
                    (name, option.opts)


def test_version() -> None:
    from imgkit.shipped import version
    result = invoke("--version")
    assert result.exit_code == 0 and result.output.startswith(f"imgkit {version()} ")


def test_verify_proves_and_nothing_else_with_twelve_options_at_most() -> None:
    """verify runs the probe: judging a report made elsewhere is `imgkit judge`, attaching
    is `imgkit attest`, checking a signed verdict is `imgkit check-signed`."""
    verify = dict(commands())["verify"]
    names = {o for p in visible_options(verify) for o in p.opts}
    assert len(visible_options(verify)) <= 12, sorted(names)
    assert "--checks" in names and "--candidates" not in names and "--from-report" not in names
    assert not names & {"--attest", "--require-signed", "--signing-key", "--trusted-key", "--key"}


def test_a_signing_key_and_a_trusted_key_never_share_a_name() -> None:
    helps: dict[str, set[str]] = {}
    for _, command in commands():
        for option in visible_options(command):
            for flag in option.opts:
                helps.setdefault(flag, set()).add(option.help or "")
    assert "--key" not in helps
    assert helps["--signing-key"] and all("public" not in h for h in helps["--signing-key"])
    assert helps["--trusted-key"] and all("public" in h for h in helps["--trusted-key"])


# What the surface may grow to: each command's visible options, and the top-level help's
# lines in a 100-column terminal. Raising one is a decision, not a side effect.
MOST_OPTIONS = 24           # build (the selection's seven, and --needed-by for CI jobs of shared layers)
TOP_HELP_LINES = 45


def test_no_command_grows_past_the_ceiling_of_options() -> None:
    counts = {name: len(visible_options(command)) for name, command in commands()}
    assert max(counts.values()) <= MOST_OPTIONS, sorted(counts.items(), key=lambda c: -c[1])[:3]
    assert counts["export k8s"] <= 11, counts["export k8s"]     # the cluster is a settings table


def test_the_top_level_help_fits_a_screen_one_line_a_command_in_groups() -> None:
    shown = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "100"}).output
    lines = shown.rstrip().splitlines()
    assert len(lines) <= TOP_HELP_LINES, len(lines)
    groups = re.findall(r"╭─ ([^─]+?) ─", shown)
    assert groups[1:5] == ["Make images", "Prove them", "Ship them", "Look inside"], groups
    listed = re.findall(r"^│ ([a-z][a-z-]+) {2,}(\S.*?)\s*│$", shown, re.M)
    top = typer.main.get_command(app).commands          # type: ignore[attr-defined]
    assert sorted(name for name, _ in listed) == sorted(top), listed
    assert len(set(dict(listed).values())) == len(listed)    # one line each, none cut


def test_one_meaning_per_flag_name() -> None:
    """Where verified images are promoted is --registry everywhere (bake's push target is
    --push-to); --gpus is the probe container's GPUs everywhere (a Job's count is the
    cluster table's gpus_per_job)."""
    helps: dict[str, set[str]] = {}
    for _, command in commands():
        for option in visible_options(command):
            for flag in option.opts:
                helps.setdefault(flag, set()).add(option.help or "")
    assert all(h.startswith("Where verified images are promoted") for h in helps["--registry"]), \
        helps["--registry"]
    assert helps["--gpus"] == {"The container's GPUs: none, all, a count, device ids (docker's "
                               "count=N and device=IDS too), or CDI names (nvidia.com/gpu=all). "
                               "all and ids go through NVIDIA's CDI spec when the engine has it, "
                               "else its hook."}, helps["--gpus"]


def test_selection_options_are_declared_once() -> None:
    """Every command that selects takes the same --cuda/--only/--images/--namespace/--compat
    (the very same declaration, so the same help)."""
    seen: dict[str, set[str]] = {}
    for _, command in commands():
        for option in visible_options(command):
            if option.opts[0] in ("--cuda", "--only", "--images", "--namespace", "--compat"):
                seen.setdefault(option.opts[0], set()).add(option.help)
    assert len(seen) == 5 and all(len(helps) == 1 for helps in seen.values()), seen


@pytest.mark.parametrize("args, flag", [
    (["build", "--cuda", "11.8", "--cuda", "12.4", "--dry-run"], "--cuda"),
    (["verify", "img:1", "--gpus", "all", "--gpus", "none"], "--gpus"),
    (["outdated", "--pip", "--no-pip"], "--pip"),
    (["list", "--json", "a.json", "--json=b.json"], "--json"),
])
def test_an_option_that_takes_one_value_is_refused_when_given_twice(args: list[str],
                                                                   flag: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert flag in result.output and "given 2 times" in result.output


def test_two_cuda_releases_or_two_images_say_one_per_run() -> None:
    """What a person meant by a second value: --cuda twice, or `verify A B`."""
    said = " ".join(invoke("build", "--cuda", "11.8", "--cuda", "12.4").output
                    .replace("│", " ").split())
    assert "one CUDA release per run" in said, said
    said = " ".join(invoke("verify", "a:1", "b:1").output.replace("│", " ").split())
    assert "(b:1): `imgkit verify` takes one IMAGE; for several, run it once for each" in said


def test_an_option_of_another_command_says_which_takes_it_and_what_this_one_calls_it() -> None:
    """`publish --registry` (ci's name for a registry) got click's nearest spelling,
    `--retry-for`; it says who takes --registry and that publish names one with --to."""
    result = invoke("publish", "--registry", "localhost:5000/team")
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.replace("│", " ").split())
    assert "No such option: --registry. `imgkit ci`," in said, said
    assert "`imgkit publish` takes --to or --reuse-from" in said and "--retry-for" not in said
    result = invoke("build", "--gpus", "all")
    assert "No such option: --gpus. `imgkit attest`, `imgkit verify` take it." in \
        " ".join(result.output.replace("│", " ").split()), result.output
    result = invoke("build", "--cudaa", "12.8")                # nowhere: click's near name
    assert "No such option: --cudaa (Possible options: --cuda)" in result.output, result.output


def test_another_tools_word_for_a_command_names_imgkits() -> None:
    """`imgkit export kubernetes` had no suggestion (no spelling is near `k8s`), and `imgkit
    test` was offered `attest`."""
    from imgkit.cli.framework import CALLED_ELSEWHERE
    names = {name for path, _ in commands() for name in [path.split()[-1]]}
    assert not {meant for meant in CALLED_ELSEWHERE.values()} - names, names
    said = {words: " ".join(invoke(*words.split()).output.replace("│", " ").split())
            for words in ("export kubernetes", "test x", "export ci", "verfy x")}
    assert "No such command 'kubernetes'. Did you mean 'k8s'?" in said["export kubernetes"]
    assert "No such command 'test'. Did you mean 'verify'?" in said["test x"]
    assert "No such command 'ci': it is `imgkit ci`." in said["export ci"]
    assert "No such command 'verfy'. Did you mean 'verify'?" in said["verfy x"]     # click's own


def test_repeatable_options_take_every_value(tmp_path: Path) -> None:
    result = invoke("list", "--only", "paddle:*", "--only", "imgkit/python:*",
                    "--json", str(tmp_path / "plan.json"))
    assert result.exit_code == 0, result.output
    assert "paddle:2.6.2-gpu-cuda11.8-cudnn8" in result.output


def test_shell_completion_is_installable_and_completes_commands() -> None:
    # from a bash, as a user's shell: the shell is found in the process tree (`; exit $?`
    # keeps bash from exec'ing python in its own place)
    line = f"{shlex.quote(sys.executable)} -m imgkit --show-completion; exit $?"
    shown = subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=ROOT)
    assert shown.returncode == 0 and "complete" in shown.stdout, shown.stderr
    completed = subprocess.run(     # what the installed script answers a shell's <TAB>
        [str(Path(sys.executable).parent / "imgkit")], capture_output=True,
        text=True, cwd=ROOT, env={**os.environ, "_IMGKIT_COMPLETE": "complete_bash",
                                  "COMP_WORDS": "imgkit check-si", "COMP_CWORD": "1"})
    assert completed.stdout.split() == ["check-signed"], completed.stdout + completed.stderr


@pytest.mark.parametrize("args", [
    ["verify", "img:1", "--attest"], ["verify", "img:1", "--require-signed"],
    ["verify", "img:1", "--min-gemm", "0.6"], ["verify", "img:1", "--updates"],
    ["verify", "img:1", "--candidates", "c"], ["verify", "img:1", "--from-report", "r.json"],
    ["publish", "--key", "k"], ["list", "--builders", "4"],
])
def test_spellings_of_before_the_first_release_are_unknown_options(args: list[str]) -> None:
    result = invoke(*args)
    assert result.exit_code == 2 and "No such option" in result.output, result.output


@pytest.mark.parametrize("args, said", [
    (["verify", "img:1", "--min", "gemm"], "--min 'gemm': expected KEY=NUMBER"),
    (["verify", "img:1", "--min", "tflops=3"], "KEY one of gemm, conv, amp-speedup"),
    (["verify", "img:1", "--min", "gemm=100"], "gemm is a share of the GPU's peak, at most 1"),
    # an unset variable: never the current folder
    (["site", "--out", ""], "Invalid value for '--out': an empty path"),
    (["verify", "img:1", "--json", ""], "Invalid value for '--json': an empty path"),
    (["list", "--images", " "], "(env var: 'IMGKIT_IMAGES'): an empty path"),
    (["build", "--namespace", ""], "(env var: 'IMGKIT_NAMESPACE'): an empty prefix"),
    # a file it could not write: said before the work (a GPU verify), not after it
    (["verify", "img:1", "--json", "/proc/nope/v.json"], "/proc/nope/v.json: cannot make its folder"),
    (["verify", "img:1", "--gpus", "none", "--junit", "/tmp"], "/tmp is a folder: name a file in it"),
    (["verify", "img:1", "--expect", "cuda_version=12.4"], "did you mean --expect cuda=12.4?"),
    (["verify", "img:1", "--shm-size", "lots"], "--shm-size 'lots'"),
    (["check-signed", "reg.example/ml/x:1"], "check-signed needs a public key"),
    (["publish", "--signing-key", "k", "--keyless", "--to", "r.example"], "sign one way"),
    (["build", "--keep-parents"], "--keep-parents only says what --force rebuilds"),
])
def test_bad_combinations_exit_2_naming_the_option(args: list[str], said: str) -> None:
    result = subprocess.run([sys.executable, "-m", "imgkit", *args], capture_output=True,
                            text=True, cwd=ROOT, env={**os.environ, "COLUMNS": "200",
                                                      "DOCKER_HOST": "unix:///nonexistent.sock"})
    assert result.returncode == 2, result.stdout + result.stderr
    assert said in " ".join(result.stderr.split()) and "Traceback" not in result.stderr


def test_every_default_passes_its_own_parser() -> None:
    """click hands a parameter's default through the parser as it would a value given: a
    parser that took only text broke `imgkit init` with no folder (a traceback)."""
    for name, command in commands():
        context = command.context_class(command, info_name=name)
        for param in command.params:
            if param.default is None or callable(param.default):
                continue
            param.process_value(context, param.default)   # raises where the parser cannot


def test_init_with_no_folder_starts_the_project_here(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "imgkit", "init"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "imgkit.toml").is_file() and (tmp_path / "images").is_dir()
