"""The order a build takes through the matrix, for every builder (the engine's own BuildKit,
the legacy builder, Podman's): each image's build starts as soon as its parent is built, not
once its parent's whole level is, at most `jobs` at a time (`--jobs`), and the image with
the longest chain of images below it goes first.

Why: a level's bake lasts as long as its slowest image. On the bundled CUDA 11.8 slice the
three cuDNN variants shared two cores for 30 s before Paddle's chain could go on, though
Paddle needs one of them; its NCCL, Paddle and the JupyterLab image then ran with the other
core mostly idle. Taken by chain length, the variants nobody waits for fill that core.
Pure scheduling: what one image's build does is the caller's `bake_one`."""
from __future__ import annotations

import concurrent.futures as cf
import threading
from typing import TYPE_CHECKING, Callable

from ..interrupts import interrupt_sets
from .outcome import BUILT, CANCELLED, SKIPPED, UP_TO_DATE, WOULD_BUILD, Result

if TYPE_CHECKING:
    from ..render.contexts import Context

BakeOne = Callable[["Context", "Result | None"], Result]   # (context, its parent's result here)
Listener = Callable[[str, str, str], None]                 # (tag, event, text)
Stop = Callable[[str], object]                             # hastens the stop of a tag's build
GOOD = (BUILT, UP_TO_DATE, WOULD_BUILD)


def first_to_go(contexts: list[Context]) -> dict[str, tuple[int, int, int]]:
    """Each tag's priority, highest first: the longest chain of images below it, how many
    images are below it, and how deep it is (a chain begun goes on)."""
    children: dict[str, list[str]] = {}
    depth: dict[str, int] = {}
    for context in contexts:                                   # parents first
        tag, parent = context.target.tag, context.target.parent or ""
        children.setdefault(parent, []).append(tag)
        depth[tag] = depth.get(parent, -1) + 1
    height: dict[str, int] = {}
    below: dict[str, int] = {}
    for context in reversed(contexts):                         # children first
        tag = context.target.tag
        kids = children.get(tag, [])
        height[tag] = max((height[k] + 1 for k in kids), default=0)
        below[tag] = sum(below[k] + 1 for k in kids)
    return {tag: (height[tag], below[tag], depth[tag]) for tag in depth}


def by_parent(contexts: list[Context], bake_one: BakeOne, jobs: int, cancel: threading.Event,
              listener: Listener, stop: Stop | None = None) -> dict[str, Result]:
    """Every context's result (CANCELLED for those a Ctrl-C kept from starting); an image
    whose parent failed or was skipped is skipped. Ctrl-C sets `cancel`: nothing new starts,
    the running builds stop (their own watch of `cancel`, hastened by `stop`), then
    KeyboardInterrupt."""
    ours = {c.target.tag for c in contexts}
    workers = max(1, jobs)
    priority = first_to_go(contexts)
    waiting = sorted(contexts, key=lambda c: priority[c.target.tag], reverse=True)
    results: dict[str, Result] = {}
    running: dict[cf.Future[Result], str] = {}
    with cf.ThreadPoolExecutor(max_workers=workers) as pool, interrupt_sets(cancel):
        while (waiting or running) and not cancel.is_set():
            for context in list(waiting):
                tag, parent = context.target.tag, context.target.parent or ""
                if len(running) >= workers or (parent in ours and parent not in results):
                    continue
                waiting.remove(context)
                done = results.get(parent)
                if done is not None and done.status not in GOOD:
                    results[tag] = Result(tag, SKIPPED, reason=f"parent {parent} {done.status}")
                    listener(tag, SKIPPED, results[tag].reason)
                    continue
                running[pool.submit(bake_one, context, done)] = tag
            finished, _ = cf.wait(running, timeout=0.5, return_when=cf.FIRST_COMPLETED)
            for future in finished:
                _collect(running.pop(future), future, results, cancel)
        _drain(running, results, cancel, stop)
    if cancel.is_set():
        raise KeyboardInterrupt
    return {c.target.tag: results.get(c.target.tag, Result(c.target.tag, CANCELLED))
            for c in contexts}


def _drain(running: dict[cf.Future[Result], str], results: dict[str, Result],
           cancel: threading.Event, stop: Stop | None) -> None:
    """After a Ctrl-C, each running build's end. `stop` is asked again every half second: a
    worker reads `cancel` only between log lines, so a silent step would not notice it, and
    a step may start after a kill."""
    while running:
        if stop is not None:
            for future, tag in list(running.items()):
                if not future.done():
                    stop(tag)
        finished, _ = cf.wait(running, timeout=0.5, return_when=cf.FIRST_COMPLETED)
        for future in finished:
            _collect(running.pop(future), future, results, cancel)


def _collect(tag: str, future: cf.Future[Result], results: dict[str, Result],
             cancel: threading.Event) -> None:
    try:
        results[tag] = future.result()
    except KeyboardInterrupt:                # a bake stopped by Ctrl-C says so
        results[tag] = Result(tag, CANCELLED)
    except BaseException:                    # an error of imgkit's: the other bakes stop too
        cancel.set()
        raise
