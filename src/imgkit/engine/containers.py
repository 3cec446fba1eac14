"""Throwaway containers: run one to its end or deadline, always removed; start one running
the image's own service and stop it; read files of an image without starting anything."""
from __future__ import annotations

import base64
import json
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar
from urllib.parse import quote

from .. import labels, localhttp
from ..errors import ContainerFailed, EngineUnavailable, first_line
from .client import START_HINT, Client, refused
from .run_request import CreateBody, create_body
from .types import ContainerRun, FileEntry, PathStat, RunSpec, ServiceState, StatFiles

T = TypeVar("T")


class Containers(Client):
    def run_container(self, spec: RunSpec) -> ContainerRun:
        """Run `spec` to its end or its deadline; the container is removed on every path
        (start failure, timeout, Ctrl-C). At most the limits of output are kept, and the
        engine's own log of it rotates, so a flood fills neither memory nor the disk."""
        with self.ran_container(spec) as (run, _):
            return run

    @contextmanager
    def ran_container(self, spec: RunSpec, on_start: Callable[[], None] | None = None
                      ) -> Iterator[tuple[ContainerRun, StatFiles]]:
        """run_container's run, the exited container kept until the block ends, and a
        `stat_files` for the image: read through that container when its root was read-only
        (one container serves the run and the look at the image's files), else through a
        container of its own. `on_start` is called once the container runs (what the caller
        can do while it waits). (Whether a writable run changed anything is no cheaper to
        ask: the engine's diff of a container takes 0.5 s on the Paddle image, and its
        SizeRw misses a deletion.)"""
        started = time.monotonic()
        cid = self._create(create_body(spec), spec.platform)
        try:
            self._start(cid)
            if on_start is not None:
                on_start()
            code = self._wait(cid, spec.timeout)
            (out, truncated), (err, _) = self._both_logs(cid, spec)
            run = ContainerRun(code, out, err, truncated, time.monotonic() - started)

            def stat(paths: list[str]) -> dict[str, PathStat | None]:
                if spec.writable:
                    return self.stat_files(spec.image, paths)
                return self._stat_all(cid, paths)   # its /tmp tmpfs went with the run
            yield run, stat
        finally:
            self.remove_container(cid)

    def _create(self, body: CreateBody, platform: str) -> str:
        """The id of a container created from `body` (run_request.py), or ContainerFailed
        saying what the engine refused. On the local socket without docker-py: verify's
        probe starts before docker-py's import, which the wait for it then covers."""
        if self.socket_path is None:
            return str(_or_failed(lambda: self.api.create_container_from_config(
                body, platform=platform or None))["Id"])
        query = f"?platform={quote(platform, safe='')}" if platform else ""
        return str(self._post_local(f"/containers/create{query}", body)["Id"])

    def _start(self, cid: str) -> None:
        if self.socket_path is None:
            _or_failed(lambda: self.api.start(cid))
        else:
            self._post_local(f"/containers/{cid}/start", None)

    def _post_local(self, path: str, body: object | None) -> Any:
        """POST to the local socket: its JSON answer, ContainerFailed with the engine's own
        message when it refuses, EngineUnavailable when it does not answer."""
        status, answer = self._ask_local(
            lambda socket: localhttp.post(socket, path, body, self.timeout))
        try:
            found = json.loads(answer) if answer.strip() else {}
        except ValueError:
            found = {"message": answer.decode(errors="replace").strip()[:300]}
        if status >= 400:
            raise ContainerFailed(str(found.get("message") or f"the engine answered {status}"))
        return found

    def _wait(self, cid: str, timeout: float) -> int | None:
        """The exit code, or None after killing a container still running at `timeout`.
        requests reports a read timeout as ReadTimeout or as ConnectionError depending on
        where it strikes, so the container's state decides, not the exception's type."""
        if self.socket_path is not None:
            return self._wait_local(self.socket_path, cid, timeout)
        import docker.errors
        import requests.exceptions
        try:
            return int(self.api.wait(cid, timeout=timeout)["StatusCode"])
        except requests.exceptions.RequestException as exc:
            try:
                state = self.api.inspect_container(cid)["State"]
                if not state.get("Running"):
                    return int(state.get("ExitCode", -1))
                self.api.kill(cid)
                return None
            except (docker.errors.APIError, requests.exceptions.RequestException):
                raise EngineUnavailable(f"lost the Docker engine while waiting: {first_line(exc)}",
                                        hint=START_HINT)

    def _wait_local(self, socket_path: str, cid: str, timeout: float) -> int | None:
        """_wait on the local socket: the engine answers the wait when the container exits;
        at `timeout` the container's state decides, as for docker-py's."""
        try:
            status, answer = localhttp.post(socket_path, f"/containers/{cid}/wait", None, timeout)
            if status == 200:
                return int(json.loads(answer)["StatusCode"])
            raise EngineUnavailable(f"the engine answered {status} to waiting for the container: "
                                    f"{answer.decode(errors='replace').strip()[:300]}")
        except TimeoutError:
            pass
        except (OSError, ValueError) as exc:
            raise EngineUnavailable(f"lost the Docker engine while waiting: {first_line(exc)}",
                                    hint=START_HINT)
        state = self._get_local(f"/containers/{cid}/json")["State"]
        if state.get("Running"):
            try:
                self._post_local(f"/containers/{cid}/kill", None)
                return None
            except ContainerFailed:      # it ended meanwhile
                state = self._get_local(f"/containers/{cid}/json")["State"]
        return int(state.get("ExitCode", -1))

    def _both_logs(self, cid: str, spec: RunSpec) -> tuple[tuple[str, bool], tuple[str, bool]]:
        """_logs of stdout and of stderr. On the local socket, one request for both, split
        by the frames the engine sends them in: 5 ms for a probe's report, where docker-py's
        two streamed reads took 21 (its reads of each frame). The whole answer is read: the
        engine's log of the run rotates at twice the limits (run_request.py)."""
        if self.socket_path is None:
            return (self._logs(cid, "stdout", spec.stdout_limit),
                    self._logs(cid, "stderr", spec.stderr_limit))
        path = f"/containers/{cid}/logs?stdout=1&stderr=1"
        status, body = self._ask_local(lambda socket: localhttp.get(socket, path, self.timeout))
        if status != 200:
            raise refused(status, f"GET {path}", body)
        streams = split_streams(body)
        return _kept(streams[1], spec.stdout_limit), _kept(streams[2], spec.stderr_limit)

    def _logs(self, cid: str, which: str, limit: int) -> tuple[str, bool]:
        """At most `limit` bytes of one stream, and whether there was more."""
        stream = self.api.logs(cid, stdout=which == "stdout", stderr=which == "stderr",
                               stream=True, follow=False)
        kept = bytearray()
        try:
            for chunk in stream:
                kept += chunk
                if len(kept) > limit:
                    break
        finally:
            stream.close()
        return _kept(kept, limit)

    @contextmanager
    def _unstarted(self, image: str) -> Iterator[str]:
        """A container of `image` that is created but never started (its filesystem, read
        through the engine; no command of the image runs), removed on every path."""
        import docker.errors
        try:
            cid = self.api.create_container(image, entrypoint=["/nonexistent"],
                                            labels={labels.ROLE: labels.ROLE_VERIFY})["Id"]
        except docker.errors.APIError as exc:
            raise ContainerFailed(str(exc.explanation or exc))
        try:
            yield cid
        finally:
            self.remove_container(cid)

    def stat_files(self, image: str, paths: list[str]) -> dict[str, PathStat | None]:
        """Each path as `image`'s filesystem has it (None: no such file)."""
        with self._unstarted(image) as cid:
            return self._stat_all(cid, paths)

    def _stat_all(self, cid: str, paths: list[str]) -> dict[str, PathStat | None]:
        # imported here: concurrent.futures brings logging, ~4 ms a no-op build never needs
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=8) as pool:  # one HEAD request per path
            return dict(zip(paths, pool.map(lambda path: self._stat(cid, path), paths)))

    def _stat(self, cid: str, path: str) -> PathStat | None:
        header = self._stat_header(cid, path)
        if header is None:
            return None
        stat = json.loads(base64.b64decode(header)) if header else {}
        return PathStat(size=int(stat.get("size", -1)))

    def _stat_header(self, cid: str, path: str) -> str | None:
        """The engine's stat of a path in the container (base64 JSON), None: no such path.
        On the local socket without docker-py (its requests add a millisecond to each)."""
        if self.socket_path is None:
            response = self.api.head(self.api._url("/containers/{0}/archive", cid),
                                     params={"path": path})
            if response.status_code == 404:
                return None
            response.raise_for_status()
            return str(response.headers.get("X-Docker-Container-Path-Stat", ""))
        asked = f"/containers/{cid}/archive?path={quote(path, safe='')}"
        status, headers = self._ask_local(lambda socket: localhttp.head(socket, asked, self.timeout))
        if status == 404:
            return None
        if status != 200:
            raise refused(status, f"HEAD {asked}")
        return headers.get("x-docker-container-path-stat", "")

    def read_paths(self, image: str, paths: dict[str, bool],
                   limit: int = 1 << 20) -> dict[str, FileEntry | None]:
        """Each path as `image`'s filesystem has it (None: no such path): its type and
        permissions, owner, and a regular file's first `limit` bytes; a path whose flag is
        True is followed through symbolic links (a file's contents), the others are the
        link itself."""
        with self._unstarted(image) as cid:
            return {path: self._followed(cid, path, limit) if follow else self._entry(cid, path, limit)
                    for path, follow in paths.items()}

    def _followed(self, cid: str, path: str, limit: int) -> FileEntry | None:
        """The entry a path's symbolic links lead to (at most 16 of them)."""
        import posixpath
        for _ in range(16):
            entry = self._entry(cid, path, limit)
            if entry is None or entry.link is None:
                return entry
            path = posixpath.normpath(posixpath.join(posixpath.dirname(path), entry.link))
        return None

    def _entry(self, cid: str, path: str, limit: int) -> FileEntry | None:
        """The first member of the path's archive: the path itself (a folder's contents
        follow it and are never read)."""
        import tarfile

        import docker.errors
        try:
            chunks, _ = self.api.get_archive(cid, path, chunk_size=64 << 10)
        except docker.errors.NotFound:
            return None
        stream = _ChunkReader(chunks)
        try:
            with tarfile.open(fileobj=stream, mode="r|") as tar:  # type: ignore[call-overload]
                member = tar.next()
                if member is None:
                    return None
                content = None
                if member.isfile():
                    read = tar.extractfile(member)
                    content = read.read(limit) if read is not None else b""
                kind = "d" if member.isdir() else "L" if member.issym() else "-"
                return FileEntry(mode=kind + _rwx(member.mode), uid=member.uid, gid=member.gid,
                                 content=content, link=member.linkname if member.issym() else None)
        finally:
            stream.close()

    @contextmanager
    def service(self, image: str, *, command: tuple[str, ...] = (),
                environment: dict[str, str] | None = None, memory: str = "8g",
                stop_after: float = 2.0) -> Iterator[str]:
        """A container of `image` running its own command (ENTRYPOINT and CMD, or `command`
        instead), on no network but its own loopback (containers that join it reach it
        there), with its user, every capability dropped and a writable layer of its own;
        stopped (SIGTERM, then SIGKILL after `stop_after` s) and removed on every path."""
        import docker.errors
        import docker.types
        api = self.api
        host_config = api.create_host_config(
            cap_drop=["ALL"], security_opt=["no-new-privileges"], network_mode="none",
            tmpfs={"/tmp": "rw,exec,nosuid,size=1g"}, mem_limit=memory, pids_limit=1024,
            log_config=docker.types.LogConfig(type="json-file", config={"max-size": "1m",
                                                                        "max-file": "2"}))
        cid: str = _or_failed(lambda: api.create_container(
            image, entrypoint=list(command[:1]) or None, command=list(command[1:]) or None,
            host_config=host_config, environment=environment or {},
            labels={labels.ROLE: labels.ROLE_VERIFY})["Id"])
        try:
            _or_failed(lambda: api.start(cid))
            yield cid
        finally:
            try:
                api.stop(cid, timeout=int(stop_after))
            except docker.errors.APIError:
                pass        # gone already; removed below either way
            self.remove_container(cid)

    def service_state(self, cid: str, tail: int = 20) -> ServiceState:
        """Whether a service still runs, its exit code once stopped, and its last lines."""
        state = self.api.inspect_container(cid)["State"]
        log = self.api.logs(cid, stdout=True, stderr=True, tail=tail).decode(errors="replace")
        running = bool(state.get("Running"))
        return ServiceState(running, None if running else int(state.get("ExitCode", -1)), log)

    def remove_container(self, container_id: str) -> None:
        if self.socket_path is not None:
            path = f"/containers/{container_id}?force=1&v=1"
            status, answer = self._ask_local(
                lambda socket: localhttp.delete(socket, path, self.timeout))
            if status >= 400 and status != 404:
                raise refused(status, f"DELETE {path}", answer)
            return
        import docker.errors
        try:
            self.api.remove_container(container_id, force=True, v=True)
        except docker.errors.NotFound:
            pass


def split_streams(body: bytes) -> dict[int, bytearray]:
    """stdout (1) and stderr (2) of a non-TTY container's attach or logs answer: frames of
    an 8-byte header (the stream, three zero bytes, the size as a big-endian uint32) and
    that many bytes (the Engine API's stream format). A frame cut short keeps what came."""
    streams = {1: bytearray(), 2: bytearray()}
    at = 0
    while at + 8 <= len(body):
        size = int.from_bytes(body[at + 4:at + 8], "big")
        if body[at] in streams:
            streams[body[at]] += body[at + 8:at + 8 + size]
        at += 8 + size
    return streams


def _kept(data: bytearray, limit: int) -> tuple[str, bool]:
    """At most `limit` bytes of a stream as text, and whether there was more."""
    return data[:limit].decode(errors="replace"), len(data) > limit


def _or_failed(call: Callable[[], T]) -> T:
    """The engine's answer to `call`, or ContainerFailed saying what it refused."""
    import docker.errors
    try:
        return call()
    except docker.errors.APIError as exc:
        raise ContainerFailed(str(exc.explanation or exc))


def _rwx(mode: int) -> str:
    """0o754 -> rwxr-xr-- (what follows the type letter in Go's FileMode string)."""
    return "".join(letter if mode & (1 << (8 - i)) else "-"
                   for i, letter in enumerate("rwxrwxrwx"))


class _ChunkReader:
    """The chunks of an HTTP stream as a file tarfile reads from, closed early when done."""

    def __init__(self, chunks: Any) -> None:
        self.chunks = iter(chunks)
        self.buffer = b""

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self.buffer) < size:
            chunk = next(self.chunks, None)
            if chunk is None:
                break
            self.buffer += chunk
        out, self.buffer = ((self.buffer, b"") if size < 0
                            else (self.buffer[:size], self.buffer[size:]))
        return out

    def close(self) -> None:
        close = getattr(self.chunks, "close", None)
        if close is not None:
            close()
