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
    return _exchange(socket_path, f"GET {path} HTTP/1.0\r\nHost: docker\r\n\r\n".encode(),
                     timeout)


def head(socket_path: str, path: str, timeout: float) -> tuple[int, dict[str, str]]:
    """(status, headers, their names in lower case) of `HEAD path`; errors as get's."""
    status, answer = _exchange(socket_path, f"HEAD {path} HTTP/1.0\r\nHost: docker\r\n\r\n".encode(),
                               timeout, whole=True)
    lines = answer.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")[1:]
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers


def post(socket_path: str, path: str, body: object | None, timeout: float) -> tuple[int, bytes]:
    """(status, body) of `POST path` with `body` as JSON (None: no body); errors as get's."""
    import json
    data = b"" if body is None else json.dumps(body).encode()
    head = (f"POST {path} HTTP/1.0\r\nHost: docker\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n")
    return _exchange(socket_path, head.encode() + data, timeout)


def delete(socket_path: str, path: str, timeout: float) -> tuple[int, bytes]:
    """(status, body) of `DELETE path`; errors as get's."""
    return _exchange(socket_path, f"DELETE {path} HTTP/1.0\r\nHost: docker\r\n\r\n".encode(),
                     timeout)


def _exchange(socket_path: str, request: bytes, timeout: float,
              whole: bool = False) -> tuple[int, bytes]:
    """(status, body), or the whole answer, head included, when `whole`."""
    chunks = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(socket_path)
        sock.sendall(request)
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
    answer = b"".join(chunks)
    status_line, _, body = answer.partition(b"\r\n\r\n")
    try:
        return int(status_line.split(b" ", 2)[1]), answer if whole else body
    except (IndexError, ValueError):
        raise ValueError(f"{socket_path} does not answer like a Docker engine") from None
