"""The no-op build's memo, engine-free: what names it, the age rule, and that anything it
cannot read is a miss that prints nothing. (tests/test_docker_build.py replays it against
the real engine: an image gone, a template changed, a base past its age.)"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from imgkit.builder import memo, report
from imgkit.builder.outcome import Result
from imgkit.builder.plankey import fingerprint

ARGV = ["build", "--cuda", "11.8"]


@pytest.fixture()
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("IMGKIT_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()        # here first: a folder appearing above would rename it
    for name in [n for n in os.environ if n.startswith(("IMGKIT_", "DOCKER_"))]:
        if name != "IMGKIT_CACHE_DIR":
            monkeypatch.delenv(name)
    folder = tmp_path / "project" / "sub"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    return folder


def test_the_name_follows_what_chooses_the_selection(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = memo.memo_name(ARGV)
    assert memo.memo_name(ARGV) == first
    assert memo.memo_name(["build", "--cuda", "12.8"]) != first
    monkeypatch.setenv("UNRELATED", "1")
    assert memo.memo_name(ARGV) == first
    for variable in ("IMGKIT_NAMESPACE", "DOCKER_HOST"):
        monkeypatch.setenv(variable, "x")
        assert memo.memo_name(ARGV) != first, variable
        monkeypatch.delenv(variable)
    assert memo.memo_name(ARGV) == first

    project = here.parent / "pyproject.toml"           # a project file above the folder
    project.write_text("[tool.imgkit]\nnamespace = 'a'\n")
    with_project = memo.memo_name(ARGV)
    assert with_project != first
    project.write_text("[tool.imgkit]\nnamespace = 'b'\n")   # its bytes, not only its name
    assert memo.memo_name(ARGV) not in (first, with_project)
    project.unlink()
    assert memo.memo_name(ARGV) == first
    (here / "images").mkdir()                            # a folder appearing here
    assert memo.memo_name(ARGV) != first
    monkeypatch.chdir(here.parent)                       # another folder
    assert memo.memo_name(ARGV) != first


def test_the_age_rule_is_whole_days_and_an_undated_base_is_past_it() -> None:
    now, day = 1_000_000_000, 86400
    assert memo.age_days(now - 10 * day - 5, now) == 10
    assert not memo.past_age(now - 10 * day, 10, now)
    assert memo.past_age(now - 11 * day, 10, now)
    assert memo.past_age(None, 30, now)


def test_the_kept_summary_is_the_summary() -> None:
    results = [Result("ns/python:3.11", "up-to-date", size=10**9),
               Result("ns/cuda:11.8{x}", "up-to-date", size=2 * 10**9, added=10**9)]
    kept = "\n".join([report.summary_head(results).format(seconds=0.04),
                      *report.summary_rows(results)])
    assert kept == report.build_summary(results, 0.04)
    assert kept.startswith("imgkit build: 2 images in 0.0 s (2 up-to-date)")


def test_anything_unreadable_is_a_miss_that_prints_nothing(
        here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert not memo.replay(memo.memo_name(ARGV), time.monotonic())               # no memo
    inputs = {"roots": [("images", str(here))], "libraries": [], "selection": {}, "compat": None}
    recorder = memo.Recorder(memo.memo_name(ARGV), inputs, fingerprint(inputs), None)  # type: ignore[arg-type]
    recorder.write(str(here / "no-engine.sock"), {"ns/a:1": "sha256:" + "0" * 64}, {},
                   "imgkit build: 1 images in {seconds:.1f} s (1 up-to-date)", ["row"])
    path = Path(memo.memo_file(ARGV))
    assert json.loads(path.read_text())["ids"] == {"ns/a:1": "sha256:" + "0" * 64}
    assert not memo.replay(memo.memo_name(ARGV), time.monotonic())               # no engine at that socket
    path.write_text("{not json")
    assert not memo.replay(memo.memo_name(ARGV), time.monotonic())
    path.write_text(json.dumps({"format": memo.FORMAT}))
    assert not memo.replay(memo.memo_name(ARGV), time.monotonic())
    assert capsys.readouterr().out == ""


def test_a_reference_is_quoted_whole_for_the_engines_filter() -> None:
    assert memo._quoted('{"reference": ["ns/a:1", "b@sha256:00"]}') == (
        "%7B%22reference%22%3A%20%5B%22ns%2Fa%3A1%22%2C%20%22b%40sha256%3A00%22%5D%7D")


def test_the_replay_loads_no_module_it_exists_to_avoid() -> None:
    """The memo is worth having only while its path stays off pathlib, dataclasses, typing
    and the engine package (their imports are most of what the fast path before it costs)."""
    code = ("import sys, time; from imgkit import entry; from imgkit.builder import memo; "
            "memo.replay(memo.memo_name(['build', '--cuda', '11.8']), time.monotonic()); "
            "print(' '.join(sys.modules))")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True, env={**os.environ, "IMGKIT_CACHE_DIR": "/nonexistent"}
                                ).stdout.split())
    assert "imgkit.builder.memo" in loaded
    avoided = {"pathlib", "dataclasses", "typing", "imgkit.engine", "imgkit.builder.noop"}
    assert not avoided & loaded, avoided & loaded
