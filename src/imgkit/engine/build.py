"""docker-py's (legacy) builder: one context into an untagged image, every streamed chunk
checked, and the build-step containers a Ctrl-C or a lost engine leaves behind."""
from __future__ import annotations

import re
import threading
from collections import deque
from pathlib import Path
from typing import Any, Callable

from .. import labels
from ..errors import BuildFailed, Cancelled, EngineUnavailable, first_line
from ..stepnames import step_words
from .client import Chunk, Client, checked

LOG_TAIL = 25
# a step as Docker's legacy builder says it ("Step 2/9 : RUN ...") and as Podman's, buildah,
# does ("STEP 2/9: RUN ..."), and the image a step made (or reused): " ---> id", "--> id"
STEP = re.compile(r"^(?:Step (\d+/\d+) :|STEP (\d+/\d+):) (.*)$")
STEP_IMAGE = re.compile(r"^ ?-{2,3}> ([0-9a-f]{12,64})$")
LOST_HINT = ("check that dockerd is running (it may have restarted), then build again: the "
             "next build removes what this one left")


class BuildLog:
    """What one build's stream said so far: the step it is at, its last lines, every image a
    step made (in order: what a clean-up removes), and the image it ended with."""

    def __init__(self, label: str, on_line: Callable[[str], None]) -> None:
        self.label = label
        self.on_line = on_line
        self.tail: deque[str] = deque(maxlen=LOG_TAIL)
        self.step = "preparing the build context"
        self.made: list[str] = []
        self.image_id: str | None = None

    def take(self, chunk: Chunk, cancelled: bool) -> None:
        """One checked chunk. Once the build is cancelled the stream is read on to its end,
        unshown: the builder kills this build's step containers, and the build is over only
        when the daemon closes the stream (closing it here would leave a step that started
        meanwhile running)."""
        text = str(chunk.get("stream") or "")
        self.made += [m.group(1) for m in map(STEP_IMAGE.match, text.splitlines()) if m]
        aux = chunk.get("aux")
        if isinstance(aux, dict) and "ID" in aux:
            self.image_id = str(aux["ID"])
            self.made.append(self.image_id)
        if cancelled:
            return
        if "error" in chunk:
            detail = chunk.get("errorDetail") or {}
            reason = str(chunk.get("error") or detail.get("message")).strip()
            raise BuildFailed(self.label, self.step, reason, list(self.tail),
                              images=tuple(self.made))
        for line in text.splitlines():
            if line.strip():
                self.tail.append(line)
                self.on_line(line)
                match = STEP.match(line.strip())
                if match:
                    number = match.group(1) or match.group(2)
                    self.step = f"step {number} ({step_words(match.group(3))[:80]})"


class Builds(Client):
    def build(self, context_dir: Path, label: str, *, extra_hosts: dict[str, str],
              on_line: Callable[[str], None], cancel: threading.Event,
              nocache: bool = False, buildargs: dict[str, str] | None = None,
              secrets: dict[str, bytes] | None = None) -> str:
        """Build the context into an *untagged* image and return its id. Tagging is the
        caller's job once the build succeeded, so no tag ever points at a half-built image.
        `nocache`: every step runs anew (fresh apt and pip packages). `secrets` (id ->
        content): the build's secret mounts, which only Podman's API takes (podman_build.py).
        Once `cancel` is set, the log is read on (unshown) until the daemon ends the build,
        which `stop_build_steps` hastens, and Cancelled is raised."""
        import requests.exceptions
        import urllib3.exceptions
        log = BuildLog(label, on_line)
        try:
            if secrets is not None:
                from .podman_build import build_stream
                stream = build_stream(self.api, context_dir, secrets, nocache=nocache,
                                      buildargs=buildargs or {})
            else:
                stream = self.api.build(path=str(context_dir), rm=True, forcerm=True,
                                        pull=False, decode=True, extra_hosts=extra_hosts,
                                        nocache=nocache, buildargs=buildargs or {})
            try:
                for chunk in checked(stream):
                    log.take(chunk, cancelled=cancel.is_set())
            finally:
                stream.close()  # on any exception, closing the stream makes the daemon stop
        except (requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError,
                urllib3.exceptions.ProtocolError) as exc:
            raise EngineUnavailable(f"the {self._who()} stopped answering while building {label} "
                                    f"({log.step}): {first_line(exc)}", hint=LOST_HINT)
        if cancel.is_set():
            raise Cancelled(f"{label}: build cancelled", images=tuple(log.made))
        if log.image_id is None:
            raise BuildFailed(label, log.step, "the engine reported no image id", list(log.tail),
                              images=tuple(log.made))
        return log.image_id

    def stop_build_steps(self, tag: str) -> int:
        """Kill the containers running build steps of `tag`; returns how many.

        For Ctrl-C: the legacy builder has no cancel call and notices a dropped client only
        at its next output, so a silent RUN step would keep going for minutes."""
        import docker.errors
        killed = 0
        for container in self.api.containers(filters={
                "label": f"{labels.TAG}={tag}", "status": "running"}):
            if not _build_step(container):
                continue
            try:
                self.api.kill(container["Id"])
                killed += 1
            except docker.errors.APIError:
                pass  # it finished on its own meanwhile
        return killed

    def remove_stale_build_steps(self, tags: list[str]) -> int:
        """Remove the stopped step containers an interrupted build of `tags` left (a build
        step's container carries the title label and runs an untagged image); returns how
        many. Only one `imgkit build` builds on a host at a time (builder/hostlock.py), so a
        stopped one is no other build's."""
        import docker.errors
        wanted, removed = set(tags), 0
        for container in self.api.containers(all=True, filters={"label": labels.TAG}):
            if (container.get("State") != "running" and _build_step(container)
                    and container.get("Labels", {}).get(labels.TAG) in wanted):
                try:
                    self.api.remove_container(container["Id"], force=True, v=True)
                    removed += 1
                except docker.errors.NotFound:
                    pass
        return removed
    def bridge_gateway(self) -> str:
        import docker.errors
        try:
            config = self.client.networks.get("bridge").attrs["IPAM"]["Config"]
            return str(config[0]["Gateway"])
        except (docker.errors.APIError, KeyError, IndexError):
            return "172.17.0.1"


def _build_step(container: dict[str, Any]) -> bool:
    """A legacy-builder step's container runs an untagged intermediate image (its Image is
    an id, never a tag as in a user's `docker run`) and carries our templates' labels."""
    return str(container.get("Image", "")).startswith("sha256:")
