"""Build a rendered plan: parents first, independent branches in parallel, skip what is
up to date, keep going past failures (their dependents are skipped)."""
from __future__ import annotations

import concurrent.futures as cf
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Collection

from ..engine import Engine
from ..errors import BuildFailed, Cancelled
from ..interrupts import interrupt_sets
from ..options import BuildOptions
from .epoch import ARG, build_epochs
from .freshness import Freshness, builds_something, check_freshness
from .outcome import BUILT, CANCELLED, FAILED, SKIPPED, UP_TO_DATE, WOULD_BUILD, Result, up_to_date

if TYPE_CHECKING:
    from ..render.contexts import Context

Listener = Callable[[str, str, str], None]  # (tag, event, text)


class Builder:
    def __init__(self, engine: Engine, options: BuildOptions, extra_hosts: dict[str, str],
                 listener: Listener, forced: Collection[str] | None = None,
                 secrets: dict[str, bytes] | None = None) -> None:
        """`forced`: with options.force, the tags rebuilt without cache (None: every one).
        `secrets`: the build's secret mounts, for Podman's builder (None: the legacy
        builder, which reads the settings from `extra_hosts`' server)."""
        self.engine = engine
        self.options = options
        self.extra_hosts = extra_hosts
        self.secrets = secrets
        self.listener = listener
        self.forced = forced
        self.cancel = threading.Event()
        self.epochs: dict[str, int] = {}      # tag -> SOURCE_DATE_EPOCH (builder/epoch.py)

    def _forced(self, tag: str) -> bool:
        return self.options.force and (self.forced is None or tag in self.forced)

    def _one(self, context: Context, freshness: Freshness, parent_built: bool) -> Result:
        tag = context.target.tag
        start = time.monotonic()
        nocache = self._forced(tag)
        if nocache:
            why = "--force: no layer cache"
        elif freshness.fresh and not parent_built:
            return up_to_date(tag, freshness)
        else:
            why = freshness.why or f"parent {context.target.parent} was rebuilt"
        if self.options.dry_run:
            return Result(tag, WOULD_BUILD, reason=why)
        self.listener(tag, "start", why)
        from ..render.contexts import write_context  # not at import: a no-op build renders nothing
        workdir = Path(tempfile.mkdtemp(prefix="imgkit-ctx-"))
        try:
            path = write_context(context, workdir)
            image_id = self.engine.build(
                path, tag, extra_hosts=self.extra_hosts, cancel=self.cancel, nocache=nocache,
                buildargs={ARG: str(self.epochs[tag])} if tag in self.epochs else {},
                on_line=lambda line: self.listener(tag, "log", line), secrets=self.secrets)
            if self.cancel.is_set():  # finished while stopping: do not tag it
                self.engine.remove_if_unused(image_id)
                return Result(tag, CANCELLED, time.monotonic() - start)
            self.engine.tag(image_id, tag)
        except BuildFailed as exc:
            self.engine.remove_made(exc.images)
            return Result(tag, FAILED, time.monotonic() - start, reason=exc.reason, error=exc)
        except Cancelled as exc:
            self.engine.remove_made(exc.images)
            return Result(tag, CANCELLED, time.monotonic() - start)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        info = self.engine.image(tag)
        return Result(tag, BUILT, time.monotonic() - start, info.size if info else 0, image_id)

    def run(self, contexts: list[Context],
            freshness: dict[str, Freshness] | None = None) -> list[Result]:
        """Schedule every context as soon as its parent is done. Ctrl-C stops cleanly:
        nothing new starts, running steps are killed, then KeyboardInterrupt is raised."""
        if freshness is None:
            freshness = check_freshness(self.engine, [c.stamp for c in contexts])
        by_tag = {c.target.tag: c for c in contexts}
        if builds_something(self.options, freshness):
            self.epochs = build_epochs(self.engine, contexts)
        results: dict[str, Result] = {}
        pending = dict(by_tag)
        running: dict[cf.Future[Result], str] = {}
        ok = (BUILT, UP_TO_DATE, WOULD_BUILD)
        with cf.ThreadPoolExecutor(max_workers=max(1, self.options.jobs)) as pool, \
                interrupt_sets(self.cancel):
            while (pending or running) and not self.cancel.is_set():
                for tag, ctx in list(pending.items()):
                    parent = ctx.target.parent
                    if parent is None or parent not in by_tag or parent in results:
                        del pending[tag]
                        if parent in results and results[parent].status not in ok:
                            results[tag] = Result(tag, SKIPPED,
                                                  reason=f"parent {parent} {results[parent].status}")
                            self.listener(tag, SKIPPED, results[tag].reason)
                            continue
                        parent_built = parent in results and results[parent].status == BUILT
                        running[pool.submit(self._one, ctx, freshness[tag], parent_built)] = tag
                if running:
                    self._collect(running, results, timeout=0.5)
            if self.cancel.is_set():
                self._stop(running)
                raise KeyboardInterrupt
        return [results[c.target.tag] for c in contexts if c.target.tag in results]

    def _collect(self, running: dict[cf.Future[Result], str], results: dict[str, Result],
                 timeout: float) -> None:
        done, _ = cf.wait(running, timeout=timeout, return_when=cf.FIRST_COMPLETED)
        for future in done:
            tag = running.pop(future)
            results[tag] = future.result()
            self.listener(tag, results[tag].status, results[tag].reason)

    def _stop(self, running: dict[cf.Future[Result], str]) -> None:
        """Wait for the running builds to notice the cancel flag. A silent step would not
        (a worker only reads it between log lines), and a step may start after a kill, so
        keep killing this build's step containers until every worker has returned."""
        for future in running:
            future.cancel()
        while running:
            for future, tag in list(running.items()):
                if future.done():
                    del running[future]
                else:
                    self.engine.stop_build_steps(tag)
            if running:
                cf.wait(running, timeout=0.5)
