"""A team's declared tests (`imgkit verify --checks FILE`) that run in the probe's own
container: gpuTests after its GPU work (so none shares the GPU with a measurement), each
snippet of Python in an interpreter of its own; commandTests (no GPU) while the frameworks
import, each command as container-structure-test runs it (no shell, the image's user and environment plus the
test's). What each printed, its exit code and its time go into the report; imgkit judges
them. They come as base64-encoded JSON in IMGKIT_GPU_TESTS and IMGKIT_COMMAND_TESTS, and
never see the report channel's token."""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time

from . import channel

ENV = "IMGKIT_GPU_TESTS"
COMMANDS_ENV = "IMGKIT_COMMAND_TESTS"
KEPT = 4096          # characters kept of each stream (the start of stdout, the end of stderr)
HIDDEN = (ENV, COMMANDS_ENV, "IMGKIT_PROBE", channel.MARK_ENV)


def wanted(variable=ENV):
    """The tests asked for in `variable`: gpuTests as {name, run, timeout}, commandTests
    as {name, argv, env, timeout}."""
    raw = os.environ.get(variable)
    if not raw:
        return []
    try:
        tests = json.loads(base64.b64decode(raw).decode())
    except ValueError:
        return []
    return tests if isinstance(tests, list) else []


def run_all(tests):
    env = {k: v for k, v in os.environ.items() if k not in HIDDEN}
    return [run_one(test, [sys.executable, "-c", str(test.get("run", ""))], env) for test in tests]


def run_commands(tests):
    env = {k: v for k, v in os.environ.items() if k not in HIDDEN}
    return [run_one(test, [str(a) for a in test.get("argv", [])],
                    dict(env, **{str(k): str(v) for k, v in (test.get("env") or {}).items()}))
            for test in tests]


def run_one(test, argv, env):
    out = {"name": str(test.get("name", ""))}
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True,
                              timeout=float(test.get("timeout", 300)))
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
