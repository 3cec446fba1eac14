"""The console entry's no-op fast path: what it accepts, and that it stays in step with the
typer CLI it stands in front of."""
from __future__ import annotations

import pytest
import typer.main

from imgkit.builder.noopcache import SELECTION_OPTIONS
from imgkit.cli import app
from imgkit.entry import parse_plain_verify, try_noop_build, try_plain_verify
from imgkit.project import ENV as PROJECT_ENV


def build_params() -> dict[str, object]:
    command = typer.main.get_command(app).commands["build"]  # type: ignore[attr-defined]
    return {p.name: p for p in command.params}


def test_only_build_is_answered_early() -> None:
    assert not try_noop_build(["render", "--cuda", "11.8"])
    assert not try_noop_build(["build", "--force"])
    assert not try_noop_build([])


def test_fast_path_options_match_the_cli() -> None:
    params = build_params()
    by_flag = {o: p for p in params.values() for o in p.opts}  # type: ignore[attr-defined]
    for flag in SELECTION_OPTIONS:
        assert flag in by_flag, flag
        assert not by_flag[flag].multiple or flag == "--only"  # type: ignore[attr-defined]
    # no default of their own: both paths take it from project.selection_from
    assert params["images"].default is None  # type: ignore[attr-defined]
    assert params["namespace"].default is None  # type: ignore[attr-defined]
    # imgkit ci's, the extra index the build reads from the project only, and imgkit scan's
    assert set(PROJECT_ENV) - set(params) == {"registry", "extra_index_url", "vulnerability_db",
                                               "fail_on", "scanner"}
    for name, var in PROJECT_ENV.items():    # the variables the fast path reads through it
        if name in params:
            assert params[name].envvar == var  # type: ignore[attr-defined]
    for name in ("ca_bundle", "index_url", "engine", "mirror"):   # in the entry's name
        assert params[name].envvar.startswith("IMGKIT_")  # type: ignore[attr-defined]


@pytest.mark.parametrize("args, expected", [
    (["img:1"], ("img:1", "all", None, None)),
    (["img:1", "--gpus", "none"], ("img:1", "none", None, None)),
    (["--gpus=0,1", "reg.example/ml/x@sha256:" + "a" * 64],
     ("reg.example/ml/x@sha256:" + "a" * 64, "0,1", None, None)),
    (["img:1", "--checks", "cst.yaml", "--gpus", "none"], ("img:1", "none", "cst.yaml", None)),
    (["--checks=cst.yaml", "img:1"], ("img:1", "all", "cst.yaml", None)),
    (["img:1", "--json", "v.json", "--gpus", "none"], ("img:1", "none", None, "v.json")),
    (["--json=out/v.json", "img:1", "--checks", "c.yaml"], ("img:1", "all", "c.yaml", "out/v.json")),
    (["img:1", "--gpus", "device=0,1"], ("img:1", "0,1", None, None)),     # docker's spelling
    (["img:1", "--gpus=count=2"], ("img:1", "2", None, None)),
])
def test_plain_verify_is_parsed(args: list[str], expected: tuple[str, str, str | None, str | None]
                                ) -> None:
    assert parse_plain_verify(args) == expected


@pytest.mark.parametrize("args", [
    [], ["--help"], ["img", "--junit", "v.xml"], ["img", "other"], ["img", "--gpus"],
    ["img", "--gpus", "none", "--gpus", "all"], ["--gpus", "none"], ["img", "--attest"],
    ["img", "--expect", "cuda=12.4"], [""], ["img", "--checks"], ["img", "--checks="],
    ["img", "--checks", "a.yaml", "--checks", "b.yaml"], ["img", "--json", "a", "--json", "b"],
    ["img", "--json"], ["img", "--json="], ["img", "--json", "v.json", "--metrics", "m.prom"],
    ["img", "--json=-"], ["img", "--json", "-"],
])
def test_any_other_verify_goes_to_the_cli(args: list[str]) -> None:
    assert parse_plain_verify(args) is None
    assert try_plain_verify(["verify", *args]) is None


@pytest.mark.parametrize("args", [["img:1"], ["img:1", "--gpus", "none"],
                                  ["img:1", "--checks", "cst.yaml", "--gpus", "none"],
                                  ["img:1", "--json", "v.json", "--gpus", "none"]])
def test_plain_verify_calls_verify_as_the_cli_does(monkeypatch: pytest.MonkeyPatch,
                                                   args: list[str]) -> None:
    """Whatever the CLI passes to the verify command (its defaults, its signer), the fast
    path passes too: both ways are recorded and compared."""
    import inspect

    from typer.testing import CliRunner

    import imgkit.verify.command as command
    defaults = {name: p.default for name, p in inspect.signature(command.verify).parameters.items()}
    calls: list[dict[str, object]] = []

    def record(**kwargs: object) -> int:
        calls.append(kwargs)
        return 1
    monkeypatch.setattr(command, "verify", record)
    result = CliRunner().invoke(app, ["verify", *args])
    assert result.exit_code == 1, result.output
    assert try_plain_verify(["verify", *args]) == 1
    assert len(calls) == 2
    by_cli, by_entry = calls
    assert by_entry == {k: v for k, v in by_cli.items() if k in by_entry}
    # what the fast path leaves out, the CLI passes as the function's own default
    assert {k: v for k, v in by_cli.items() if k not in by_entry} == \
        {k: defaults[k] for k in by_cli if k not in by_entry}


def test_plain_verify_reports_an_error_as_the_cli_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert try_plain_verify(["verify", "img:1", "--gpus", "bogus"]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "--gpus" in err and "Traceback" not in err
    assert try_plain_verify(["verify", "img:1", "--checks", "/no/such/cst.yaml"]) == 2
    err = capsys.readouterr().err
    assert "/no/such/cst.yaml" in err and "Traceback" not in err
