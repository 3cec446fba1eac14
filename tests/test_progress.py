"""What a long build says while it works: the step each image is on, read from either
builder's log lines, and a live row per image with its time in a terminal; in a CI log only
the plain lines, as before."""
from __future__ import annotations

import io
import time

import pytest
from rich.console import Console

from imgkit.builder.progress import BuildProgress, step_of
from imgkit.console import Activity, elapsed


@pytest.mark.parametrize("line, step", [
    ("Step 3/7 : RUN pip install --no-deps paddlepaddle-gpu==2.6.2",
     "step 3/7: RUN pip install --no-deps paddlepaddle-gpu==2.6.2"),
    ("[paddle-2-6-2-gpu-cuda11-8-cudnn8 4/9] RUN   --mount=type=secret,id=ca  pip install x",
     "step 4/9: RUN --mount=type=secret,id=ca pip install x"),
    ("1.234 Collecting paddlepaddle-gpu==2.6.2", None),
    ("[internal] load build definition from Dockerfile", None),
    (" ---> Running in 0123abcd", None),
])
def test_the_step_is_read_from_either_builders_lines(line: str, step: str | None) -> None:
    assert step_of(line) == step


def test_elapsed_reads_as_a_clock() -> None:
    assert [elapsed(s) for s in (0.4, 59.9, 72, 3725)] == ["0 s", "59 s", "1:12", "1:02:05"]


def terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=120, color_system=None), out


def test_a_terminal_shows_each_running_image_its_step_and_time() -> None:
    shown, out = terminal()
    with Activity(shown) as activity:
        assert activity.drawn
        activity.start("ns/cuda:11.8", "starting (not built yet)")
        activity.start("ns/paddle:2.6.2", "starting")
        activity.doing("ns/paddle:2.6.2", "step 4/9: RUN pip install paddlepaddle-gpu==2.6.2")
        shown.print(activity)                   # as the live display draws it
        activity.finish("ns/cuda:11.8")
        rows = out.getvalue()
    assert "ns/paddle:2.6.2" in rows and "step 4/9: RUN pip install" in rows and "0 s" in rows
    out.truncate(0)
    shown.print(activity)
    assert "ns/cuda:11.8" not in out.getvalue() and "ns/paddle:2.6.2" in out.getvalue()


@pytest.mark.parametrize("width, step_shown", [(100, "step 4/9: RUN pip install --no-deps …"),
                                                (66, "")])
def test_in_a_narrow_terminal_the_step_gives_way_never_the_tag_nor_the_time(
        width: int, step_shown: str) -> None:
    out = io.StringIO()
    shown = Console(file=out, force_terminal=True, width=width, color_system=None)
    activity = Activity(shown)
    tag = "registry.example.com/ml/paddle:2.6.2-gpu-cuda11.8-cudnn8"
    activity.start(tag, "starting")
    activity.doing(tag, "step 4/9: RUN pip install --no-deps paddlepaddle-gpu==2.6.2")
    shown.print(activity)
    [line] = out.getvalue().splitlines()
    assert line.startswith(tag) and line.rstrip().endswith("0 s") and len(line) <= width, line
    assert (step_shown in line) if step_shown else "step" not in line, line


def test_a_rows_time_runs_from_its_start_through_its_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    shown, out = terminal()
    activity = Activity(shown)
    activity.start("t:1", "starting")
    clock[0] += 70
    activity.doing("t:1", "step 2/5: COPY . /opt")
    clock[0] += 2
    shown.print(activity)
    assert "1:12" in out.getvalue()


def test_a_ci_log_gets_the_plain_lines_and_nothing_drawn(capsys: pytest.CaptureFixture[str]) -> None:
    plain = Console(file=io.StringIO(), force_terminal=False)
    with BuildProgress(activity=Activity(plain)) as listen:
        assert not listen.activity.drawn
        listen("ns/a:1", "start", "inputs changed")
        listen("ns/a:1", "log", "Step 1/3 : FROM ns/debian:bookworm")
        listen("ns/a:1", "built", "")
    err = capsys.readouterr().err
    assert err.splitlines() == ["building ns/a:1 (inputs changed)", "built ns/a:1"]


def test_verbose_adds_every_log_line(capsys: pytest.CaptureFixture[str]) -> None:
    plain = Console(file=io.StringIO(), force_terminal=False)
    with BuildProgress(verbose=True, activity=Activity(plain)) as listen:
        listen("ns/a:1", "log", "Step 1/3 : FROM ns/debian:bookworm")
    assert "ns/a:1 Step 1/3 : FROM ns/debian:bookworm" in capsys.readouterr().err
