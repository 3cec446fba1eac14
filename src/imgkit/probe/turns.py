"""The framework adapters' interpreters (frameworks.py holds their code): each started at
once so that it imports beside everything else, its GPU steps held until its turn, turns
given one at a time to the first adapter ready, and its report read when it exits."""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time

from . import channel
from .frameworks import ADAPTERS, CHILD_ENV, MISSING_LIB


class Adapter:
    """One framework's adapter in its own interpreter, started at once so that it imports
    beside everything else. With a GPU wanted it holds its GPU steps until `go()`: the
    adapters import side by side, but no two (and not the probe's own measurements) use the
    GPU at the same time."""

    def __init__(self, name, want_gpu, timeout=300):
        _, code = ADAPTERS[name]
        env = dict(os.environ)
        for key, value in CHILD_ENV.items():
            env.setdefault(key, value)
        self.name = name
        self.timeout = timeout
        self.token = channel.new_token()
        self.started = time.monotonic()
        # ready_fd: readable once the adapter waits for its turn, or has exited
        self.ready_fd, ready_w = os.pipe() if want_gpu else (None, None)
        if ready_w is not None:
            env["IMGKIT_READY_FD"] = str(ready_w)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "WANT_GPU = %r\n" % want_gpu
                 + channel.emit_code(self.token) + code],
                stdin=subprocess.PIPE if want_gpu else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                pass_fds=() if ready_w is None else (ready_w,))
        finally:
            if ready_w is not None:
                os.close(ready_w)     # the child's copy alone: its exit is an end of file

    def close_ready(self):
        if self.ready_fd is not None:
            os.close(self.ready_fd)
            self.ready_fd = None

    def go(self):
        """Its turn on the GPU. An adapter that found no GPU (or failed to import) never
        asks, and may have exited already."""
        stdin, self.proc.stdin = self.proc.stdin, None   # communicate() must not touch it again
        if stdin is None:
            return
        try:
            stdin.write("go\n")
            stdin.close()
        except OSError:   # BrokenPipeError among them
            pass

    def result(self, timeout=None):
        """Its report, once it exits (`timeout`, by default its own, seconds after `go()`
        at most)."""
        self.go()
        self.close_ready()
        try:
            stdout, stderr = self.proc.communicate(
                timeout=self.timeout if timeout is None else timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            return {"imported": False, "error": "timed out after %d s" % self.timeout}
        try:
            result = json.loads(channel.unframe(stdout, self.token) or "")
        except ValueError:
            tail = (stderr or stdout).strip().splitlines()[-3:]
            result = {"imported": False, "error": "crashed (exit %d): %s" % (
                self.proc.returncode, " | ".join(tail))}
        missing = MISSING_LIB.search(result.get("error", "") + stderr)
        if missing:
            result["missing_library"] = missing.group(1)
        if isinstance(result.get("seconds"), dict):   # the interpreter's start and exit included
            result["seconds"]["wall"] = round(time.monotonic() - self.started, 3)
        return result


def by_readiness(adapters):
    """The adapters in the order they become ready for the GPU: each has imported and done
    its CPU-side preparation, or has exited. The GPU then never waits for one adapter's CPU
    work while another is ready. Yields (adapter, timeout for its result): none came ready
    within the adapters' time, and the first still pending is given no more."""
    pending = list(adapters)
    while pending:
        waiting = [a for a in pending if a.ready_fd is not None]
        ready = [a for a in pending if a.ready_fd is None]
        timeout = None
        if waiting and not ready:
            readable, _, _ = select.select([a.ready_fd for a in waiting], [], [],
                                           min(a.timeout for a in waiting))
            ready = [a for a in waiting if a.ready_fd in readable]
            timeout = None if ready else 0
        chosen = (ready or pending)[0]
        pending.remove(chosen)
        yield chosen, timeout


def run(name, want_gpu, timeout=300):
    """One adapter on its own, start to end."""
    return Adapter(name, want_gpu, timeout).result()
