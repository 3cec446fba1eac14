"""A team's gpuTests (`imgkit verify --checks FILE`): each snippet of Python run by the
image's own python3, in an interpreter of its own, after the probe's GPU work (so none
shares the GPU with a measurement). What each printed, its exit code and its time go into
the report; imgkit judges them. The snippets come base64-encoded JSON in IMGKIT_GPU_TESTS;
they never see the report channel's token."""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time

from . import channel

ENV = "IMGKIT_GPU_TESTS"
KEPT = 4096          # characters kept of each stream (the start of stdout, the end of stderr)
HIDDEN = (ENV, "IMGKIT_PROBE", channel.MARK_ENV)


def wanted():
    """The snippets asked for: a list of {name, run, timeout}."""
    raw = os.environ.get(ENV)
    if not raw:
        return []
    try:
        tests = json.loads(base64.b64decode(raw).decode())
    except ValueError:
        return []
    return tests if isinstance(tests, list) else []


def run_all(tests):
    env = {k: v for k, v in os.environ.items() if k not in HIDDEN}
    return [run_one(test, env) for test in tests]


def run_one(test, env):
    out = {"name": str(test.get("name", ""))}
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-c", str(test.get("run", ""))], env=env,
                              capture_output=True, text=True, timeout=float(test.get("timeout", 300)))
    except subprocess.TimeoutExpired as exc:
        out.update(timed_out=True, stdout=_text(exc.stdout)[:KEPT], stderr=_text(exc.stderr)[-KEPT:])
    except OSError as exc:
        out["error"] = str(exc)[:500]
    else:
        out.update(exit_code=proc.returncode, stdout=proc.stdout[:KEPT], stderr=proc.stderr[-KEPT:])
    out["seconds"] = round(time.monotonic() - started, 3)
    return out


def _text(data):
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data
