"""Helper interpreters of the probe's: a fresh `python3` with one probe module's names
imported runs a few lines that set `out`, at background priority, and hands `out` back
framed with a token of its own, so whatever the image prints at start-up (or a library
prints while loading) cannot spoil it. A crash or a library that kills its process stays
in that child."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from . import channel, priority


def run(module, body, timeout=120):
    """(out, None) when `body` ran with `module`'s names imported and set `out`;
    (None, why) when it timed out, crashed or printed no framed result."""
    root = os.path.abspath(sys.modules[module].__file__)
    for _ in module.split("."):
        root = os.path.dirname(root)
    token = channel.new_token()
    code = ("%simport json,sys\nsys.path.insert(0,%r)\nfrom %s import *\n%s%s\nEMIT(json.dumps(out))"
            % (priority.BACKGROUND, root, module, channel.emit_code(token), body))
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % timeout
    except OSError as exc:
        return None, str(exc)[:500]
    try:
        return json.loads(channel.unframe(proc.stdout, token) or ""), None
    except ValueError:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["exit %d" % proc.returncode]
        return None, "crashed: " + tail[0]
