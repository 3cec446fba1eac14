"""The module that talks to Docker. Every streamed chunk is checked.

Builds, tags, imports and removals go through docker-py. Importing docker-py (and requests)
costs about 0.1 s, more than everything else a no-op `imgkit build` does, so it is imported
only when first needed; the read-only calls a no-op needs (ping, inspect) speak HTTP to the
local engine socket with the standard library when DOCKER_HOST is a unix socket (the
default) and fall back to docker-py for tcp/ssh/TLS engines.
"""
from __future__ import annotations

import json
import os
import re
import socket
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator
from urllib.parse import quote

from .errors import BuildFailed, EngineUnavailable, ImgkitError

if TYPE_CHECKING:
    import docker

LOG_TAIL = 25
STEP = re.compile(r"^Step (\d+/\d+) : (.*)$")


class Cancelled(ImgkitError):
    """The build was stopped on request (Ctrl-C)."""


@dataclass(frozen=True)
class ImageInfo:
    id: str
    tags: tuple[str, ...]
    labels: dict[str, str]
    layers: tuple[str, ...]
    size: int


DEFAULT_SOCKET = "/var/run/docker.sock"
START_HINT = "start it (e.g. `sudo dockerd &` or `systemctl start docker`) or set DOCKER_HOST"


def unix_socket(docker_host: str | None) -> str | None:
    """The socket path when the engine is local (DOCKER_HOST unset or unix://), else None."""
    if not docker_host:
        return DEFAULT_SOCKET
    if docker_host.startswith("unix://"):
        return docker_host[len("unix://"):] or DEFAULT_SOCKET
    return None


class Engine:
    def __init__(self, timeout: int = 120, docker_host: str | None = None) -> None:
        self.timeout = timeout
        self.socket_path = unix_socket(docker_host)
        self._client: docker.DockerClient | None = None
        self._lock = threading.Lock()

    @property
    def client(self) -> docker.DockerClient:
        """docker-py, imported and connected on first use."""
        with self._lock:
            if self._client is None:
                import docker
                self._client = docker.from_env(timeout=self.timeout)
            return self._client

    @property
    def api(self) -> docker.APIClient:
        return self.client.api

    def _get_local(self, path: str) -> Any:
        """GET a JSON document from the local engine socket; None on 404.

        HTTP/1.0, so the engine sends a plain body and closes the connection: a dozen lines
        instead of http.client, whose import alone costs a no-op build ~15 ms."""
        assert self.socket_path is not None
        chunks = []
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(self.timeout)
                sock.connect(self.socket_path)
                sock.sendall(f"GET {path} HTTP/1.0\r\nHost: docker\r\n\r\n".encode())
                while chunk := sock.recv(1 << 16):
                    chunks.append(chunk)
        except OSError as exc:
            raise EngineUnavailable(f"cannot reach the Docker engine at {self.socket_path}: "
                                    f"{exc.strerror or exc}", hint=START_HINT)
        head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
        try:
            status = int(head.split(b" ", 2)[1])
        except (IndexError, ValueError):
            raise EngineUnavailable(f"{self.socket_path} does not answer like a Docker engine",
                                    hint=START_HINT)
        if status == 404:
            return None
        if status != 200:
            raise ImgkitError(f"the Docker engine answered {status} to GET {path}: "
                              f"{body.decode(errors='replace').strip()[:300]}")
        return json.loads(body) if body.lstrip()[:1] in (b"{", b"[") else body.decode()

    def ping(self) -> None:
        if self.socket_path is not None:
            self._get_local("/_ping")
            return
        import docker.errors
        import requests.exceptions
        try:
            self.client.ping()
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise EngineUnavailable(f"cannot reach the Docker engine: {_first_line(exc)}",
                                    hint=START_HINT)

    # -- images -------------------------------------------------------------------
    def image(self, ref: str) -> ImageInfo | None:
        if self.socket_path is not None:
            attrs = self._get_local(f"/images/{quote(ref, safe='/:@')}/json")
            if attrs is None:
                return None
        else:
            import docker.errors
            try:
                attrs = self.api.inspect_image(ref)
            except docker.errors.ImageNotFound:
                return None
        return ImageInfo(id=attrs["Id"], tags=tuple(attrs.get("RepoTags") or ()),
                         labels=dict((attrs.get("Config") or {}).get("Labels") or {}),
                         layers=tuple(attrs.get("RootFS", {}).get("Layers") or ()),
                         size=int(attrs.get("Size") or 0))

    def tag(self, image_id: str, ref: str) -> None:
        """Point `ref` at `image_id`; the image it pointed at before is removed if nothing
        else uses it, so a rebuild leaves no dangling <none> image behind."""
        old = self.image(ref)
        repository, tag = ref.rsplit(":", 1)
        if not self.api.tag(image_id, repository, tag, force=True):
            raise ImgkitError(f"could not tag {image_id[:19]} as {ref}")
        if old is not None and old.id != image_id:
            self.remove_if_unused(old.id)

    def remove_if_unused(self, image_id: str) -> None:
        info = self.image(image_id)
        if info is None or info.tags:
            return
        import docker.errors
        try:
            self.api.remove_image(image_id, noprune=False)
        except docker.errors.APIError:
            pass  # still a parent of another image or used by a container: keep it

    def remove_partial_build(self, tag: str) -> None:
        """Remove the steps a failed or stopped build of `tag` left behind (untagged images
        no container uses), so no `<none>` image lingers. Every step image carries the
        labels our templates set first; finished images are tagged, so they are never hit."""
        import docker.errors
        try:
            self.api.prune_images(filters={
                "dangling": True, "label": f"org.opencontainers.image.title={tag}"})
        except docker.errors.APIError:
            pass  # another prune is running: the leftovers are docker's cache, harmless

    def remove_image(self, ref: str) -> None:
        import docker.errors
        try:
            self.api.remove_image(ref, force=True)
        except docker.errors.ImageNotFound:
            pass

    def import_rootfs(self, tarball: Path, ref: str, changes: list[str]) -> str:
        repository, tag = ref.rsplit(":", 1)
        out = self.api.import_image_from_file(str(tarball), repository=repository, tag=tag,
                                              changes=changes)
        for line in str(out).splitlines():
            if '"error"' in line:
                raise ImgkitError(f"docker import of {ref} failed: {line}")
        info = self.image(ref)
        if info is None:
            raise ImgkitError(f"docker import of {ref} reported no image: {out}")
        return info.id

    def pull(self, ref: str) -> bool:
        import docker.errors
        try:
            self.client.images.pull(ref)
            return True
        except docker.errors.APIError:
            return False

    def bridge_gateway(self) -> str:
        import docker.errors
        try:
            config = self.client.networks.get("bridge").attrs["IPAM"]["Config"]
            return str(config[0]["Gateway"])
        except (docker.errors.APIError, KeyError, IndexError):
            return "172.17.0.1"

    # -- build --------------------------------------------------------------------
    def build(self, context_dir: Path, label: str, *, extra_hosts: dict[str, str],
              on_line: Callable[[str], None], cancel: threading.Event) -> str:
        """Build the context into an *untagged* image and return its id. Tagging is the
        caller's job once the build succeeded, so no tag ever points at a half-built image.
        Once `cancel` is set, the log is read on (unshown) until the daemon ends the build,
        which `stop_build_steps` hastens, and Cancelled is raised."""
        tail: deque[str] = deque(maxlen=LOG_TAIL)
        step = "preparing the build context"
        stream = self.api.build(path=str(context_dir), rm=True, forcerm=True, pull=False,
                                decode=True, extra_hosts=extra_hosts)
        image_id = None
        try:
            for chunk in _checked(stream):
                if cancel.is_set():
                    # Read on to the end: the builder kills this build's step containers, and
                    # the build is over only when the daemon closes the stream. Closing it
                    # ourselves would leave a step that started meanwhile running.
                    continue
                if "error" in chunk:
                    detail = chunk.get("errorDetail") or {}
                    reason = str(chunk.get("error") or detail.get("message")).strip()
                    raise BuildFailed(label, step, reason, list(tail))
                text = str(chunk.get("stream") or "")
                for line in text.splitlines():
                    if not line.strip():
                        continue
                    tail.append(line)
                    on_line(line)
                    match = STEP.match(line.strip())
                    if match:
                        step = f"step {match.group(1)} ({match.group(2)[:80]})"
                aux = chunk.get("aux")
                if isinstance(aux, dict) and "ID" in aux:
                    image_id = aux["ID"]
        finally:
            stream.close()  # on any exception, closing the stream makes the daemon stop
        if cancel.is_set():
            raise Cancelled(f"{label}: build cancelled")
        if image_id is None:
            raise BuildFailed(label, step, "the engine reported no image id", list(tail))
        return str(image_id)

    # -- containers ---------------------------------------------------------------
    def stop_build_steps(self, tag: str) -> int:
        """Kill the containers running build steps of `tag`; returns how many.

        For Ctrl-C: the legacy builder has no cancel call and notices a dropped client only
        at its next output, so a silent RUN step would keep going for minutes. A step's
        container is made from an untagged intermediate image (its Image is an id, never a
        tag, unlike a user's `docker run`) and carries the labels our templates set first."""
        import docker.errors
        killed = 0
        for container in self.api.containers(filters={
                "label": f"org.opencontainers.image.title={tag}", "status": "running"}):
            if not str(container.get("Image", "")).startswith("sha256:"):
                continue
            try:
                self.api.kill(container["Id"])
                killed += 1
            except docker.errors.APIError:
                pass  # it finished on its own meanwhile
        return killed

    def remove_container(self, container_id: str) -> None:
        import docker.errors
        try:
            self.api.remove_container(container_id, force=True, v=True)
        except docker.errors.NotFound:
            pass


def _checked(stream: Iterator[Any]) -> Iterator[dict[str, Any]]:
    for chunk in stream:
        yield chunk if isinstance(chunk, dict) else {"stream": str(chunk)}


def connect(timeout: int = 120) -> Engine:
    """An Engine for the daemon DOCKER_HOST (or the default socket) points at; checked now,
    so an unreachable engine is one clear error (exit 3) before any work starts."""
    engine = Engine(timeout, os.environ.get("DOCKER_HOST"))
    engine.ping()
    return engine


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
