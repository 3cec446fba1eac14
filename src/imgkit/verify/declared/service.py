"""A declared service test: the image's own server must answer. The image runs its own
command in a container with no network but its loopback; a second container of the same
image joins that loopback and asks, with the image's python3, in rounds of a few seconds,
until the port answers, the server exits, or the test's timeout passes. Nothing is
published on the host, so it works as well when the engine is on another machine; both
containers are stopped and removed on every path."""
from __future__ import annotations

import time

from ... import labels
from ...engine import Engine, RunSpec
from ...errors import ContainerFailed
from ...matrix.checkfile import ServiceTest
from ..verdict import FAIL, PASS, Check
from .judged import stream_problems

ROUND = 5.0       # seconds one asking container keeps trying before imgkit looks at the server
SHOWN = 3         # lines kept of what the server printed when it failed

# Run by the image's python3 in the server's network namespace: exit 0 with the answer
# (HTTP status, or 0 for a bare connection) and the start of the body; exit 3 when nothing
# answered within the round. No proxy: the server is on this loopback.
ASK = r"""
import socket, sys, time, urllib.error, urllib.request
port, path, until = int(sys.argv[1]), sys.argv[2], time.monotonic() + float(sys.argv[3])
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
while True:
    try:
        if not path:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            print(0)
            sys.exit(0)
        try:
            with opener.open(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
                status, body = answer.status, answer.read(4096)
        except urllib.error.HTTPError as refused:
            status, body = refused.code, refused.read(4096)
        print(status)
        print(body.decode(errors="replace"))
        sys.exit(0)
    except OSError:
        if time.monotonic() > until:
            sys.exit(3)
        time.sleep(0.2)
"""


class CannotAsk(Exception):
    """The image's python3 could not run the question (no python3, a broken one)."""


def service_check(engine: Engine, image_id: str, test: ServiceTest, env: dict[str, str]) -> Check:
    name = f"check: {test.name}"
    where = f"port {test.port}" + (f" {test.path}" if test.path else "")
    expected = f"{where} answers" + (f" {test.expected_status}" if test.expected_status else
                                     (" below 400" if test.path else "")) + f" within {test.timeout} s"
    environment = {**env, **{v.key: v.value for v in test.env_vars}}
    started = time.monotonic()
    try:
        with engine.service(image_id, command=tuple(test.command), environment=environment) as cid:
            answer, server = _ask(engine, image_id, cid, test, started)
            seconds = time.monotonic() - started      # not counting the stop
    except ContainerFailed as exc:
        return Check(name, FAIL, expected, "did not start",
                     f"the declared service {test.name!r} could not start: {exc.explanation[:200]}")
    except CannotAsk as exc:
        return Check(name, FAIL, expected, "not asked",
                     f"the declared service {test.name!r} could not be asked: the image's "
                     f"python3 failed ({exc})")
    if answer is None:
        said = (f"the server exited with code {server[0]} after {seconds:.1f} s" if server[0] is not None
                else f"no answer on {where} within {test.timeout} s")
        printed = _shown(server[1])
        return Check(name, FAIL, expected, said, f"the declared service {test.name!r} failed: "
                     f"{said}" + (f"; it printed: {printed}" if printed else ""))
    return _judged(name, test, expected, answer, seconds)


def _ask(engine: Engine, image_id: str, server: str, test: ServiceTest,
         started: float) -> tuple[str | None, tuple[int | None, str]]:
    """The answer (what ASK printed), or None and how the server ended (its exit code, or
    None when it still ran at the timeout) with its last lines."""
    while True:
        left = test.timeout - (time.monotonic() - started)
        window = max(0.5, min(ROUND, left))
        try:
            run = engine.run_container(RunSpec(
                image=image_id, entrypoint=("python3", "-c", ASK),
                command=(str(test.port), test.path or "", f"{window:.1f}"), join=server,
                timeout=window + 30, memory="512m", stdout_limit=16 << 10,
                labels={labels.ROLE: labels.ROLE_VERIFY}))
        except ContainerFailed:
            state = engine.service_state(server)
            if state.running:
                raise
            return None, (state.exit_code, state.log)     # it ended before it could be asked
        if run.exit_code == 0:
            return run.stdout, (None, "")
        if run.exit_code != 3:       # not "no answer": the asking itself failed
            raise CannotAsk(f"exit {run.exit_code}: {_shown(run.stderr)}")
        state = engine.service_state(server)
        if not state.running:
            return None, (state.exit_code, state.log)
        if time.monotonic() - started >= test.timeout:
            return None, (None, state.log)


def _judged(name: str, test: ServiceTest, expected: str, answer: str, seconds: float) -> Check:
    status_line, _, body = answer.partition("\n")
    status = int(status_line.strip() or 0)
    problems = []
    if test.path:
        wanted = test.expected_status
        if (wanted is not None and status != wanted) or (wanted is None and status >= 400):
            problems.append(f"HTTP {status}" + (f", not {wanted}" if wanted else ""))
    problems += stream_problems(test.expected_output, [], body, "answer")
    measured = (f"HTTP {status}" if test.path else "a connection") + f" after {seconds:.1f} s"
    shown = _shown(body, first=True)
    if shown:
        measured += f": {shown}"
    if problems:
        return Check(name, FAIL, expected, measured,
                     f"the declared service {test.name!r} failed: {'; '.join(problems)}")
    return Check(name, PASS, expected, measured)


def _shown(text: str, first: bool = False) -> str:
    """A few lines of `text` on one line: its last (a log's end says why), or its first."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[:SHOWN] if first else lines[-SHOWN:])
