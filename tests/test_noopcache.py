"""The no-op build's one cache, engine-free: what names an entry, what its fingerprint
follows, the age rule, that anything it cannot read is a miss that prints nothing, and
that its replay loads none of what it exists to avoid. (tests/test_docker_build.py writes
and replays it against the real engine: an image gone, a template changed, a templates/
folder beside the matrix, a variable set, a base past its age.)"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from imgkit.builder import noopcache, report
from imgkit.builder.noop import plan_inputs, too_old
from imgkit.builder.outcome import Result
from imgkit.selection import Selection

ROOT = Path(__file__).resolve().parent.parent
ASKED = [["--cuda", "11.8"]]


@pytest.fixture()
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("IMGKIT_CACHE_DIR", str(tmp_path / "cache"))
    for name in [n for n in os.environ if n.startswith(("IMGKIT_", "DOCKER_"))]:
        if name != "IMGKIT_CACHE_DIR":
            monkeypatch.delenv(name)
    folder = tmp_path / "project" / "sub"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    return folder


@pytest.mark.parametrize("argv, asked", [
    (["build"], []),
    (["build", "--cuda", "11.8"], [["--cuda", "11.8"]]),
    (["build", "--only=paddle:*", "--cuda=11.8"], [["--cuda", "11.8"], ["--only", "paddle:*"]]),
    (["build", "--images", "m", "--templates", "t", "--namespace", "ns", "--compat", "c.yaml"],
     [["--compat", "c.yaml"], ["--images", "m"], ["--namespace", "ns"], ["--templates", "t"]]),
])
def test_a_plain_build_is_its_selection_options(argv: list[str], asked: list[list[str]]) -> None:
    assert noopcache.plain_build(argv) == asked


@pytest.mark.parametrize("argv", [
    [], ["render", "--cuda", "11.8"], ["build", "--force"], ["build", "--dry-run"],
    ["build", "-v"], ["build", "--jobs", "4"], ["build", "--help"], ["build", "--cuda"],
    ["build", "--cuda", "--only", "x"], ["build", "--cuda", "11.8", "--cuda", "12.4"],
    ["build", "extra"], ["build", "--ca-bundle", "x.pem"], ["build", "--platform", "linux/arm64"],
])
def test_anything_else_goes_to_the_cli(argv: list[str]) -> None:
    assert noopcache.plain_build(argv) is None


def test_the_name_follows_what_chooses_the_selection(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = noopcache.entry_name(ASKED)
    assert noopcache.entry_name(ASKED) == first
    assert noopcache.entry_name([["--cuda", "12.8"]]) != first
    monkeypatch.setenv("UNRELATED", "1")
    assert noopcache.entry_name(ASKED) == first
    for variable in ("IMGKIT_NAMESPACE", "DOCKER_HOST"):
        monkeypatch.setenv(variable, "x")
        assert noopcache.entry_name(ASKED) != first, variable
        monkeypatch.delenv(variable)
    assert noopcache.entry_name(ASKED) == first
    (here.parent / "unrelated.txt").write_text("x")       # what else a folder holds: not it
    (here / "notes").mkdir()
    assert noopcache.entry_name(ASKED) == first

    project = here.parent / "pyproject.toml"               # a project file above the folder
    project.write_text("[tool.imgkit]\nnamespace = 'a'\n")
    with_project = noopcache.entry_name(ASKED)
    assert with_project != first
    project.write_text("[tool.imgkit]\nnamespace = 'b'\n")   # its bytes, not only its name
    assert noopcache.entry_name(ASKED) not in (first, with_project)
    project.unlink()
    (here / "imgkit.toml").write_text("")                  # one here
    assert noopcache.entry_name(ASKED) != first
    (here / "imgkit.toml").unlink()
    assert noopcache.entry_name(ASKED) == first
    monkeypatch.chdir(here.parent)                         # another folder
    assert noopcache.entry_name(ASKED) != first


@pytest.fixture()
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("IMGKIT_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copytree(ROOT / "images", tmp_path / "m" / "images")
    shutil.copytree(ROOT / "templates", tmp_path / "t")
    return tmp_path


def key(tree: Path, templates: Path | None = None, **options: object) -> str:
    selection = Selection(tree / "m" / "images", templates=templates or tree / "t", **options)  # type: ignore[arg-type]
    return noopcache.fingerprint(plan_inputs(selection))


def test_the_fingerprint_follows_every_input(tree: Path) -> None:
    first = key(tree)
    assert key(tree) == first
    assert key(tree, cuda="12.4") != first
    assert key(tree, namespace="other") != first
    template = tree / "t" / "python.Dockerfile.j2"
    template.write_text(template.read_text() + "# changed\n")
    second = key(tree)
    assert second != first
    (tree / "m" / "images" / "extra.yaml").write_text("family: extra\n")
    assert key(tree) != second


def test_a_templates_folder_appearing_beside_the_matrix_changes_the_fingerprint(tree: Path) -> None:
    """With no --templates, a templates/ beside the matrix folder is what renders, else the
    templates imgkit ships: one appearing there is a changed input."""
    shipped = noopcache.fingerprint(plan_inputs(Selection(tree / "m" / "images")))
    (tree / "m" / "templates").mkdir()
    beside = noopcache.fingerprint(plan_inputs(Selection(tree / "m" / "images")))
    assert beside != shipped


def test_the_age_rule_is_whole_days_and_an_undated_base_is_past_it() -> None:
    now, day = 1_000_000_000, 86400
    assert noopcache.age_days(now - 10 * day - 5, now) == 10
    assert not noopcache.past_age(now - 10 * day, 10, now)
    assert noopcache.past_age(now - 11 * day, 10, now)
    assert noopcache.past_age(None, 30, now)
    made = {"ns/debian:bookworm": now - 10 * day, "ns/ubuntu:24.04": now - 31 * day}
    assert not too_old(made, {}, now)                                 # type: ignore[arg-type]
    assert not too_old(made, {"ns/debian:bookworm": 10}, now)         # type: ignore[arg-type]
    assert too_old(made, {"ns/debian:bookworm": 9}, now)              # type: ignore[arg-type]
    assert too_old(made, {"ns/gone:1": 30}, now)                      # type: ignore[arg-type]


def test_the_kept_summary_is_the_summary() -> None:
    results = [Result("ns/python:3.11", "up-to-date", size=10**9),
               Result("ns/cuda:11.8{x}", "up-to-date", size=2 * 10**9, added=10**9)]
    kept = "\n".join([report.summary_head(results).format(seconds=0.04),
                      *report.summary_rows(results)])
    assert kept == report.build_summary(results, 0.04)
    assert kept.startswith("imgkit build: 2 images in 0.0 s (2 up-to-date)")


def test_anything_unreadable_is_a_miss_that_prints_nothing(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = noopcache.entry_name(ASKED)
    assert not noopcache.replay(name, time.monotonic())                  # no entry
    inputs: noopcache.PlanInputs = {"roots": [("images", str(here))], "libraries": [], "selection": {},
              "compat": None, "beside": str(here / "templates")}
    noopcache.write(name, {"inputs": inputs, "plan_key": noopcache.fingerprint(inputs),
                           "ca_bundle": None, "socket": str(here / "no-engine.sock"),
                           "ids": {"ns/a:1": "sha256:" + "0" * 64}, "bases": {},
                           "head": "imgkit build: 1 images in {seconds:.1f} s (1 up-to-date)",
                           "rows": ["row"]})
    path = Path(os.environ["IMGKIT_CACHE_DIR"]) / "noop" / f"{name[:40]}.json"
    assert json.loads(path.read_text())["ids"] == {"ns/a:1": "sha256:" + "0" * 64}
    assert not noopcache.replay(name, time.monotonic())                  # no engine at that socket
    path.write_text("{not json")
    assert not noopcache.replay(name, time.monotonic())
    path.write_text(json.dumps({"format": noopcache.FORMAT}))
    assert not noopcache.replay(name, time.monotonic())
    assert capsys.readouterr().out == ""


def test_an_unwritable_cache_is_ignored(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = here / "file"
    blocker.write_text("")
    monkeypatch.setenv("IMGKIT_CACHE_DIR", str(blocker / "sub"))
    noopcache.write("a" * 64, {"ids": {}})                                 # no error
    assert not noopcache.replay("a" * 64, time.monotonic())


def test_a_reference_is_quoted_whole_for_the_engines_filter() -> None:
    assert noopcache._quoted('{"reference": ["ns/a:1", "b@sha256:00"]}') == (
        "%7B%22reference%22%3A%20%5B%22ns%2Fa%3A1%22%2C%20%22b%40sha256%3A00%22%5D%7D")


def test_the_replay_loads_no_module_it_exists_to_avoid() -> None:
    """The cache is worth having only while its replay stays off pathlib, dataclasses,
    typing and the engine package (their imports would cost as much as it saves)."""
    code = ("import sys; from imgkit import entry; entry.try_noop_build(['build', '--cuda', '11.8']); "
            "print(' '.join(sys.modules))")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True, env={**os.environ, "IMGKIT_CACHE_DIR": "/nonexistent"}
                                ).stdout.split())
    assert "imgkit.builder.noopcache" in loaded
    avoided = {"pathlib", "dataclasses", "typing", "imgkit.engine", "imgkit.builder.noop"}
    assert not avoided & loaded, avoided & loaded
