"""The console entry's no-op fast path: what it accepts, and that it stays in step with the
typer CLI it stands in front of."""
from __future__ import annotations

import pytest
import typer.main

from imgkit.cli import app
from imgkit.entry import BUILD_ENV_VARS, SELECTION_OPTIONS, parse_selection, try_noop_build
from imgkit.selection import DEFAULT_IMAGES, DEFAULT_NAMESPACE


def build_params() -> dict[str, object]:
    command = typer.main.get_command(app).commands["build"]  # type: ignore[attr-defined]
    return {p.name: p for p in command.params}


@pytest.mark.parametrize("args, expected", [
    ([], {}),
    (["--cuda", "11.8"], {"cuda": "11.8"}),
    (["--cuda=11.8", "--only", "paddle:*"], {"cuda": "11.8", "only": "paddle:*"}),
    (["--images", "m", "--templates", "t", "--namespace", "ns"],
     {"images": "m", "templates": "t", "namespace": "ns"}),
])
def test_selection_options_are_parsed(args: list[str], expected: dict[str, str]) -> None:
    assert parse_selection(args) == expected


@pytest.mark.parametrize("args", [
    ["--force"], ["--dry-run"], ["-v"], ["--jobs", "4"], ["--help"], ["--cuda"],
    ["--cuda", "--only", "x"], ["--cuda", "11.8", "--cuda", "12.4"], ["extra"],
    ["--ca-bundle", "x.pem"],
])
def test_anything_else_goes_to_the_cli(args: list[str]) -> None:
    assert parse_selection(args) is None


def test_only_build_is_answered_early() -> None:
    assert not try_noop_build(["render", "--cuda", "11.8"])
    assert not try_noop_build(["build", "--force"])
    assert not try_noop_build([])


def test_fast_path_options_match_the_cli() -> None:
    params = build_params()
    for flag, name in SELECTION_OPTIONS.items():
        assert name in params, name
        assert flag in params[name].opts  # type: ignore[attr-defined]
    assert params["images"].default == DEFAULT_IMAGES  # type: ignore[attr-defined]
    assert params["namespace"].default == DEFAULT_NAMESPACE  # type: ignore[attr-defined]
    for name, var in BUILD_ENV_VARS.items():
        assert params[name].envvar == var  # type: ignore[attr-defined]
