"""An engine at ssh://[user@]host[:port][/socket], reached as the docker CLI reaches it: every
connection runs `ssh HOST docker system dial-stdio` (the far side's engine, or the socket
the address names), with the user's own ssh (config, agent, known hosts). docker-py gets a
local unix socket that does this per connection.

Why not docker-py's own ssh support: it needs paramiko even when told to use the ssh client
(its ssh transport imports paramiko, and without it `ssh://` is refused), and with paramiko
installed every `import docker` imports it too: 0.11 s on each imgkit command, measured,
where a no-op build is 0.1 s in all."""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import urllib.parse
import weakref
from collections import deque
from dataclasses import dataclass
from typing import IO, cast

from ..errors import UsageError

CHUNK = 1 << 16


@dataclass(frozen=True)
class SshAddress:
    host: str                  # [user@]host, as ssh takes it
    port: int | None
    socket: str | None         # the far side's engine socket, when the address names one

    def command(self) -> list[str]:
        """What each connection runs: the docker CLI's own (its connhelper)."""
        port = ["-p", str(self.port)] if self.port else []
        where = ["--host", f"unix://{self.socket}"] if self.socket else []
        return ["ssh", *port, "-o", "ConnectTimeout=30", "-T", "--", self.host,
                "docker", *where, "system", "dial-stdio"]


# a host, address or ssh_config alias as ssh takes it (`a b`, `host;rm` are none: the
# user's mistake, exit 2, rather than an engine that cannot be reached)
HOST = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:%-]*$")


def parse(address: str) -> SshAddress:
    parts = urllib.parse.urlsplit(address)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme != "ssh" or not parts.hostname or port == -1 or parts.password \
            or not HOST.match(parts.hostname):
        raise UsageError(f"{address} is not an ssh address of a Docker engine",
                         hint="ssh://[user@]host[:port][/path/to/docker.sock]")
    user = f"{parts.username}@" if parts.username else ""
    return SshAddress(f"{user}{parts.hostname}", port, parts.path if parts.path not in ("", "/") else None)


class SshBridge:
    """A unix socket in a folder of its own (removed when the bridge goes, or at exit)
    whose every connection is one ssh process, its bytes pumped both ways."""

    def __init__(self, address: str) -> None:
        self.target = parse(address)
        folder = tempfile.mkdtemp(prefix="imgkit-ssh-")
        self.path = os.path.join(folder, "docker.sock")
        self._errors: deque[str] = deque(maxlen=5)
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.path)
        self._server.listen(16)
        weakref.finalize(self, _close, self._server, folder)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"unix://{self.path}"

    def last_error(self) -> str | None:
        """What ssh last said on stderr (a refused key, an unknown host), if anything."""
        return self._errors[-1] if self._errors else None

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return                                    # closed
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        # a session of its own: Ctrl-C stops imgkit, which then cleans up on the far
        # engine through ssh; the process ends when imgkit closes its side
        proc: subprocess.Popen[bytes] = subprocess.Popen(
            self.target.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True)
        stdin, stdout, stderr = cast(IO[bytes], proc.stdin), cast(IO[bytes], proc.stdout), \
            cast(IO[bytes], proc.stderr)      # all three are pipes, above
        errors = threading.Thread(target=self._keep_errors, args=(stderr,), daemon=True)
        errors.start()
        threading.Thread(target=_to_process, args=(conn, stdin), daemon=True).start()
        try:
            while chunk := os.read(stdout.fileno(), CHUNK):
                conn.sendall(chunk)
        except OSError:
            pass
        finally:
            try:       # ssh's last words kept before docker-py sees the end and asks
                proc.wait(timeout=2)
                errors.join(timeout=2)
            except subprocess.TimeoutExpired:
                pass
            try:       # wakes the other pump's recv too, and docker-py sees the end
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
            proc.wait()

    def _keep_errors(self, stream: IO[bytes]) -> None:
        for line in stream:
            text = line.decode(errors="replace").strip()
            if text:
                self._errors.append(text)


def _to_process(conn: socket.socket, stdin: IO[bytes]) -> None:
    try:
        while chunk := conn.recv(CHUNK):
            stdin.write(chunk)
            stdin.flush()
    except OSError:
        pass
    finally:
        try:
            stdin.close()                     # dial-stdio ends its side on EOF
        except OSError:
            pass


def _close(server: socket.socket, folder: str) -> None:
    server.close()
    shutil.rmtree(folder, ignore_errors=True)
