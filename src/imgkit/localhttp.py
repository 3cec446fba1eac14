"""GET, HEAD, POST and DELETE over the Docker engine's local socket, with the standard
library only.

HTTP/1.0, so the engine sends a plain body and closes the connection: a dozen lines instead
of http.client, whose import alone costs a no-op build ~15 ms. engine/client.py wraps it in
imgkit's errors; the no-op build's cache (builder/noopcache.py) calls it directly, as
importing the engine package would cost the no-op most of what the cache saves. verify's
probe container is created, started, waited for, read and removed with these alone: a plain
verify on the local socket never imports docker-py (a tenth of a second of CPU beside the
probe), and its requests cost each call a few ms more."""
from __future__ import annotations

import socket


def get(socket_path: str, path: str, timeout: float) -> tuple[int, bytes]:
    """(status, body) of `GET path`. OSError when the socket does not answer, ValueError when
    what answers does not speak HTTP."""
    status, _, body = _bodiless(socket_path, "GET", path, timeout)
    return status, body


def head(socket_path: str, path: str, timeout: float) -> tuple[int, dict[str, str]]:
    """(status, headers, their names in lower case) of `HEAD path`; errors as get's."""
    status, head_lines, _ = _bodiless(socket_path, "HEAD", path, timeout)
    headers = {}
    for line in head_lines.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers


def post(socket_path: str, path: str, body: object | None, timeout: float) -> tuple[int, bytes]:
    """(status, body) of `POST path` with `body` as JSON (None: no body); errors as get's."""
    import json
    data = b"" if body is None else json.dumps(body).encode()
    head = (f"POST {path} HTTP/1.0\r\nHost: docker\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n")
    status, _, answer = _exchange(socket_path, head.encode() + data, timeout)
    return status, answer


def delete(socket_path: str, path: str, timeout: float) -> tuple[int, bytes]:
    """(status, body) of `DELETE path`; errors as get's."""
    status, _, body = _bodiless(socket_path, "DELETE", path, timeout)
    return status, body


def _bodiless(socket_path: str, method: str, path: str, timeout: float) -> tuple[int, bytes, bytes]:
    return _exchange(socket_path, f"{method} {path} HTTP/1.0\r\nHost: docker\r\n\r\n".encode(), timeout)


def _exchange(socket_path: str, request: bytes, timeout: float) -> tuple[int, bytes, bytes]:
    """(status, the answer's head, its body)."""
    chunks = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(socket_path)
        sock.sendall(request)
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    try:
        return int(head.split(b" ", 2)[1]), head, body
    except (IndexError, ValueError):
        raise ValueError(f"{socket_path} does not answer like a Docker engine") from None
