"""Build a rendered plan one image at a time on the engine's legacy builder (or Podman's):
skip what is up to date, keep going past failures (their dependents are skipped). The order
is chains.py's, as for BuildKit."""
from __future__ import annotations

import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Collection

from ..engine import Engine
from ..errors import BuildFailed, Cancelled
from ..options import BuildOptions
from .chains import Listener, by_parent
from .epoch import ARG, build_epochs
from .failure_hints import failure_hint, tool_error
from .freshness import Freshness, builds_something, check_freshness
from .outcome import BUILT, CANCELLED, FAILED, WOULD_BUILD, Result, up_to_date

if TYPE_CHECKING:
    from ..render.contexts import Context


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
            exc.hint = exc.hint or failure_hint([exc.reason, *exc.log_tail])
            exc.reason = tool_error(exc.log_tail) or exc.reason     # as BuildKit's builds say it
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
        """Every context built once its parent is, the longest chain first (chains.py).
        Ctrl-C stops cleanly: nothing new starts, running steps are killed, then
        KeyboardInterrupt is raised."""
        known = freshness if freshness is not None else check_freshness(
            self.engine, [c.stamp for c in contexts])
        if builds_something(self.options, known):
            self.epochs = build_epochs(self.engine, contexts)

        def build_one(context: Context, parent: Result | None) -> Result:
            tag = context.target.tag
            result = self._one(context, known[tag], parent is not None and parent.status == BUILT)
            self.listener(tag, result.status, result.reason)
            return result
        found = by_parent(contexts, build_one, self.options.jobs, self.cancel, self.listener,
                          stop=self.engine.stop_build_steps)
        return [found[c.target.tag] for c in contexts]
