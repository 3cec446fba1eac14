"""Build a rendered plan: parents first, independent branches in parallel, skip what is
up to date, keep going past failures (their dependents are skipped)."""
from __future__ import annotations

import concurrent.futures as cf
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .engine import Cancelled, Engine
from .errors import BuildFailed
from .render import INPUT_HASH_LABEL, Context, write_context

BUILT, UP_TO_DATE, FAILED, SKIPPED, WOULD_BUILD, CANCELLED = (
    "built", "up-to-date", "failed", "skipped", "would-build", "cancelled")


@dataclass(frozen=True)
class Result:
    tag: str
    status: str
    seconds: float = 0.0
    size: int = 0
    image_id: str = ""
    reason: str = ""
    error: BuildFailed | None = None


@dataclass(frozen=True)
class BuildOptions:
    jobs: int = 2
    force: bool = False
    dry_run: bool = False


Listener = Callable[[str, str, str], None]  # (tag, event, text)


def is_up_to_date(engine: Engine, context: Context) -> tuple[bool, str]:
    """Tag exists, carries the expected input hash, and sits on its parent's current layers."""
    target = context.target
    info = engine.image(target.tag)
    if info is None:
        return False, "not built yet"
    if info.labels.get(INPUT_HASH_LABEL) != context.input_hash:
        return False, "inputs changed"
    parent_ref = target.parent or target.base
    parent = engine.image(parent_ref) if parent_ref else None
    if parent is None or info.layers[: len(parent.layers)] != parent.layers:
        return False, f"{parent_ref} changed"
    return True, ""


class Builder:
    def __init__(self, engine: Engine, options: BuildOptions, extra_hosts: dict[str, str],
                 listener: Listener) -> None:
        self.engine = engine
        self.options = options
        self.extra_hosts = extra_hosts
        self.listener = listener
        self.cancel = threading.Event()

    def _one(self, context: Context) -> Result:
        tag = context.target.tag
        start = time.monotonic()
        if not self.options.force:
            fresh, why = is_up_to_date(self.engine, context)
            if fresh:
                info = self.engine.image(tag)
                return Result(tag, UP_TO_DATE, 0.0, info.size if info else 0,
                              info.id if info else "")
        else:
            why = "--force"
        if self.options.dry_run:
            return Result(tag, WOULD_BUILD, reason=why)
        self.listener(tag, "start", why)
        workdir = Path(tempfile.mkdtemp(prefix="imgkit-ctx-"))
        try:
            path = write_context(context, workdir)
            image_id = self.engine.build(
                path, tag, extra_hosts=self.extra_hosts, cancel=self.cancel,
                on_line=lambda line: self.listener(tag, "log", line))
            if self.cancel.is_set():  # finished while stopping: do not tag it
                self.engine.remove_if_unused(image_id)
                return Result(tag, CANCELLED, time.monotonic() - start)
            self.engine.tag(image_id, tag)
        except BuildFailed as exc:
            return Result(tag, FAILED, time.monotonic() - start, reason=exc.reason, error=exc)
        except Cancelled:
            return Result(tag, CANCELLED, time.monotonic() - start)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        info = self.engine.image(tag)
        return Result(tag, BUILT, time.monotonic() - start, info.size if info else 0, image_id)

    def run(self, contexts: list[Context]) -> list[Result]:
        """Schedule every context as soon as its parent is done; Ctrl-C cancels cleanly."""
        by_tag = {c.target.tag: c for c in contexts}
        results: dict[str, Result] = {}
        pending = dict(by_tag)
        running: dict[cf.Future[Result], str] = {}
        ok = (BUILT, UP_TO_DATE, WOULD_BUILD)
        with cf.ThreadPoolExecutor(max_workers=max(1, self.options.jobs)) as pool:
            try:
                while pending or running:
                    for tag, ctx in list(pending.items()):
                        parent = ctx.target.parent
                        if parent is None or parent not in by_tag or parent in results:
                            del pending[tag]
                            if parent in results and results[parent].status not in ok:
                                results[tag] = Result(tag, SKIPPED,
                                                      reason=f"parent {parent} {results[parent].status}")
                                self.listener(tag, SKIPPED, results[tag].reason)
                                continue
                            running[pool.submit(self._one, ctx)] = tag
                    if not running:
                        continue
                    done, _ = cf.wait(running, timeout=0.5, return_when=cf.FIRST_COMPLETED)
                    for future in done:
                        tag = running.pop(future)
                        results[tag] = future.result()
                        self.listener(tag, results[tag].status, results[tag].reason)
            except KeyboardInterrupt:
                self.cancel.set()
                for future in running:
                    future.cancel()
                cf.wait(running)  # the workers close their streams; the daemon stops
                raise
        return [results[c.target.tag] for c in contexts if c.target.tag in results]
