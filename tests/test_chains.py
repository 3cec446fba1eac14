"""The order a BuildKit build takes through the bundled CUDA 11.8 slice (builder/chains.py):
each image once its parent is built, at most --jobs at a time, the longest chain first.
Pure scheduling: the bakes here only record when they ran (the real ones run in
test_docker_buildkit.py)."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from imgkit.builder.chains import by_parent, first_to_go
from imgkit.builder.outcome import BUILT, FAILED, SKIPPED, Result
from imgkit.render.command import render_contexts
from imgkit.render.contexts import Context
from imgkit.selection import Selection

ROOT = Path(__file__).resolve().parent.parent
PADDLE = "paddle:2.6.2-gpu-cuda11.8-cudnn8"


@pytest.fixture(scope="module")
def contexts() -> list[Context]:
    return render_contexts(Selection(ROOT / "images", cuda="11.8"))


def chain_of(contexts: list[Context], tag: str) -> list[str]:
    """`tag` and its parents in the slice, root first."""
    parents = {c.target.tag: c.target.parent for c in contexts}
    chain: list[str] = []
    at: str | None = tag
    while at in parents:
        chain.insert(0, at)
        at = parents[at]
    return chain


class Recorder:
    """A bake that takes a moment, and remembers when each started and how many ran at once."""

    def __init__(self, failing: str = "") -> None:
        self.started: list[str] = []
        self.running = 0
        self.most = 0
        self.failing = failing
        self.lock = threading.Lock()

    def __call__(self, context: Context, parent: Result | None) -> Result:
        tag = context.target.tag
        with self.lock:
            self.started.append(tag)
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(0.02)
        with self.lock:
            self.running -= 1
        return Result(tag, FAILED if tag == self.failing else BUILT, reason="")


def test_the_longest_chain_goes_first(contexts: list[Context]) -> None:
    order = first_to_go(contexts)
    paddles = chain_of(contexts, PADDLE)
    cudnn = paddles[2]                                  # python, CUDA, cuDNN, NCCL, Paddle
    siblings = [c.target.tag for c in contexts if c.target.parent == paddles[1]]
    assert len(siblings) == 3 and cudnn in siblings
    assert all(order[cudnn] > order[other] for other in siblings if other != cudnn)
    assert max(order, key=lambda tag: order[tag]) == paddles[0]


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_parents_first_and_at_most_jobs_at_once(contexts: list[Context], jobs: int) -> None:
    bake = Recorder()
    results = by_parent(contexts, bake, jobs, threading.Event(), lambda *_: None)
    assert {r.status for r in results.values()} == {BUILT}
    assert sorted(bake.started) == sorted(c.target.tag for c in contexts)
    for context in contexts:
        if context.target.parent:
            assert bake.started.index(context.target.parent) < bake.started.index(context.target.tag)
    assert bake.most <= jobs
    if jobs == 1:     # Paddle's chain is taken before the cuDNN variants nobody builds on
        paddles = chain_of(contexts, PADDLE)
        assert bake.started[:len(paddles)] == paddles


def test_a_failed_parent_skips_its_children_only(contexts: list[Context]) -> None:
    paddles = chain_of(contexts, PADDLE)
    bake = Recorder(failing=paddles[3])                        # Paddle's NCCL layer
    events: list[tuple[str, str]] = []
    results = by_parent(contexts, bake, 2, threading.Event(),
                        lambda tag, event, _: events.append((tag, event)))
    assert results[paddles[3]].status == FAILED
    below = [c.target.tag for c in contexts if paddles[3] in chain_of(contexts, c.target.tag)[:-1]]
    assert PADDLE in below and len(below) == 2                   # and its JupyterLab image
    assert {results[tag].status for tag in below} == {SKIPPED}
    assert (PADDLE, SKIPPED) in events and not set(below) & set(bake.started)
    others = [c.target.tag for c in contexts if c.target.tag not in below + paddles[3:4]]
    assert {results[tag].status for tag in others} == {BUILT}


def test_an_error_stops_the_other_bakes(contexts: list[Context]) -> None:
    cancel = threading.Event()

    def bake(context: Context, parent: Result | None) -> Result:
        if context.target.parent is not None:
            raise RuntimeError("the engine went away")
        return Result(context.target.tag, BUILT)
    with pytest.raises(RuntimeError, match="went away"):
        by_parent(contexts, bake, 2, cancel, lambda *_: None)
    assert cancel.is_set()
