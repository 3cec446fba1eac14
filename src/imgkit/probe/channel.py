"""The probe's report channel. An image's python3 may print at start-up (a `.pth` file, a
`sitecustomize`, a library's banner) before the probe runs, and C libraries it loads may
write to standard output while it runs. So the probe (1) points file descriptor 1 at
standard error for its whole run, keeping a private copy of the real standard output for
the report alone, and (2) frames the report between two marker lines carrying a token the
caller chose (IMGKIT_REPORT_MARK), so whatever came before or after it is ignored."""
from __future__ import annotations

import os
import re
import secrets

MARK_ENV = "IMGKIT_REPORT_MARK"
BEGIN, END = "IMGKIT-REPORT-BEGIN", "IMGKIT-REPORT-END"
TOKEN = re.compile(r"^[A-Za-z0-9]{8,64}$")


def new_token():
    return secrets.token_hex(16)


def private_stdout():
    """A text stream on a copy of the real standard output; from now on anything written
    to descriptor 1 (by C code, by child processes) lands on standard error instead."""
    report_fd = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(report_fd, "w")


def token_from_env():
    token = os.environ.pop(MARK_ENV, "")
    return token if TOKEN.match(token) else new_token()


def frame(body, token):
    return "\n%s %s\n%s\n%s %s\n" % (BEGIN, token, body, END, token)


def emit_code(token):
    """Python source defining EMIT(text) for a child interpreter of the probe's: its result
    framed with `token`, so the child's own start-up and exit output cannot spoil it. EMIT
    ends the child at once: a framework's teardown (Paddle's takes 0.1 s, a broken one may
    hang or crash) is no part of what the child had to say."""
    return ("import os as _os, sys as _sys\n"
            "def EMIT(text):\n"
            "    _sys.stdout.write(%r + text + %r)\n"
            "    _sys.stdout.flush()\n"
            "    _sys.stderr.flush()\n"
            "    _os._exit(0)\n" % ("\n%s %s\n" % (BEGIN, token), "\n%s %s\n" % (END, token)))


def unframe(output, token=None):
    """The framed report in `output` (the last one, with `token` when given), or None."""
    lines = output.splitlines()
    for start in range(len(lines) - 1, -1, -1):
        head = lines[start].split(" ")
        if len(head) != 2 or head[0] != BEGIN or (token is not None and head[1] != token):
            continue
        closing = "%s %s" % (END, head[1])
        for stop in range(start + 1, len(lines)):
            if lines[stop] == closing:
                return "\n".join(lines[start + 1:stop])
    return None
