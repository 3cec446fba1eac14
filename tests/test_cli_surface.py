"""The command line as a person meets it: help in words, `-h` and `--version`, one meaning
per flag name, an option that takes one value refused when given twice, shell completion,
and the old spellings still taken for a release, each with a deprecation line."""
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
from imgkit.cli.deprecated import rewrite

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


@pytest.mark.parametrize("old, new", [
    (["verify", "r.example/m/x@sha256:" + "a" * 64, "--attest", "--key", "k"],
     ["attest", "r.example/m/x@sha256:" + "a" * 64, "--signing-key", "k"]),
    (["verify", "R", "--require-signed", "--key=pub", "--max-age", "7d"],
     ["check-signed", "R", "--trusted-key=pub", "--max-age", "7d"]),
    (["verify", "img", "--min-gemm", "0.6", "--min-conv=0.3"],
     ["verify", "img", "--min", "gemm=0.6", "--min", "conv=0.3"]),
    (["publish", "--key", "k", "--to", "r"], ["publish", "--signing-key", "k", "--to", "r"]),
    (["promote", "S", "--key", "p"], ["promote", "S", "--trusted-key", "p"]),
    (["export", "policy", "--key", "p.pub"], ["export", "policy", "--trusted-key", "p.pub"]),
    (["list", "--stats", "--builders", "4", "--gpus", "8"],
     ["list", "--stats", "--farm", "4", "--gpu-pool", "8"]),
    (["verify", "R", "--attest", "--require-signed"], ["attest", "R", "--require-signed"]),
    (["verify", "img", "--expect", "--key"], ["verify", "img", "--expect", "--key"]),
    (["promote", "S", "--", "--key"], ["promote", "S", "--", "--key"]),
])
def test_old_spellings_are_rewritten(old: list[str], new: list[str]) -> None:
    done = rewrite(old)
    assert done.args == new
    assert bool(done.notes) == (old != new)
    assert all(n.startswith("deprecated: ") and "0.3" in n for n in done.notes)


def test_an_old_spelling_runs_the_new_command_and_says_so(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    import imgkit.verify.command as stage
    key = tmp_path / "cosign.key"
    key.write_text("not read here")
    called: dict[str, Any] = {}

    def attest(**kwargs: Any) -> int:
        called.update(kwargs)
        return 0
    monkeypatch.setattr(stage, "attest", attest)
    result = CliRunner().invoke(app, ["verify", "reg.example/ml/x@sha256:" + "b" * 64,
                                      "--attest", "--key", str(key), "--min-gemm", "0.7"])
    assert result.exit_code == 0, result.output
    assert called["signer"].key == str(key) and called["options"].thresholds.gemm == 0.7
    assert "deprecated: `verify --attest` is now `imgkit attest`" in result.output


@pytest.mark.parametrize("args, said", [
    (["verify", "img:1", "--min", "gemm"], "--min 'gemm': expected KEY=NUMBER"),
    (["verify", "img:1", "--min", "tflops=3"], "KEY one of gemm, conv, amp-speedup"),
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


def test_verify_candidates_still_works_one_release_and_says_where_it_went() -> None:
    done = rewrite(["verify", "paddle:1", "--candidates", "candidates"])
    assert done.args == ["verify", "paddle:1", "--candidates", "candidates"]   # taken as it is
    [note] = done.notes
    assert "imgkit attest TAG --candidates DIR" in note and "0.3" in note
