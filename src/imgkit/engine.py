"""The only module that talks to Docker (docker-py). Every streamed chunk is checked."""
from __future__ import annotations

import re
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import docker
import docker.errors
import requests.exceptions

from .errors import BuildFailed, EngineUnavailable, ImgkitError

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


class Engine:
    def __init__(self, client: docker.DockerClient) -> None:
        self.client = client
        self.api = client.api

    # -- images -------------------------------------------------------------------
    def image(self, ref: str) -> ImageInfo | None:
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
        try:
            self.api.remove_image(image_id, noprune=False)
        except docker.errors.APIError:
            pass  # still a parent of another image or used by a container: keep it

    def remove_image(self, ref: str) -> None:
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
        try:
            self.client.images.pull(ref)
            return True
        except docker.errors.APIError:
            return False

    def bridge_gateway(self) -> str:
        try:
            config = self.client.networks.get("bridge").attrs["IPAM"]["Config"]
            return str(config[0]["Gateway"])
        except (docker.errors.APIError, KeyError, IndexError):
            return "172.17.0.1"

    # -- build --------------------------------------------------------------------
    def build(self, context_dir: Path, label: str, *, extra_hosts: dict[str, str],
              on_line: Callable[[str], None], cancel: threading.Event) -> str:
        """Build the context into an *untagged* image and return its id. Tagging is the
        caller's job once the build succeeded, so no tag ever points at a half-built image."""
        tail: deque[str] = deque(maxlen=LOG_TAIL)
        step = "preparing the build context"
        stream = self.api.build(path=str(context_dir), rm=True, forcerm=True, pull=False,
                                decode=True, extra_hosts=extra_hosts)
        image_id = None
        try:
            for chunk in _checked(stream):
                if cancel.is_set():
                    raise Cancelled(f"{label}: build cancelled")
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
            stream.close()  # closing the stream makes the daemon stop a build we abandon
        if image_id is None:
            raise BuildFailed(label, step, "the engine reported no image id", list(tail))
        return str(image_id)

    # -- containers ---------------------------------------------------------------
    def remove_container(self, container_id: str) -> None:
        try:
            self.api.remove_container(container_id, force=True, v=True)
        except docker.errors.NotFound:
            pass


def _checked(stream: Iterator[Any]) -> Iterator[dict[str, Any]]:
    for chunk in stream:
        yield chunk if isinstance(chunk, dict) else {"stream": str(chunk)}


def connect(timeout: int = 120) -> Engine:
    """An Engine for the daemon DOCKER_HOST (or the default socket) points at."""
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise EngineUnavailable(
            f"cannot reach the Docker engine: {_first_line(exc)}",
            hint="start it (e.g. `sudo dockerd &` or `systemctl start docker`) or set DOCKER_HOST")
    return Engine(client)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
