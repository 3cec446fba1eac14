"""The connection to the Docker engine: docker-py, imported and connected on first use,
and plain HTTP over the local socket (localhttp.py) for the read-only calls a no-op build
makes and for creating and starting verify's probe container.

Importing docker-py (and requests) costs about 0.1 s, more than everything else a no-op
`imgkit build` does, and most of what `imgkit verify` adds to `docker run`; the calls they
need before any waiting (ping, inspect, create, start) speak HTTP to the local engine
socket with the standard library when DOCKER_HOST is a unix socket (the default) and fall
back to docker-py for tcp/ssh/TLS engines.
"""
from __future__ import annotations

import json
import os
import re
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypedDict, TypeVar, cast

from .. import localhttp
from ..errors import EngineUnavailable, HostError, ImgkitError, first_line
from .address import PODMAN_START_HINT

if TYPE_CHECKING:
    import docker

    from .ssh_bridge import SshBridge

DEFAULT_SOCKET = "/var/run/docker.sock"
START_HINT = "start it (e.g. `sudo dockerd &` or `systemctl start docker`) or set DOCKER_HOST"
CONTAINERD_STORE_HINT = ("turn the containerd image store off for the engine imgkit uses: "
                         '"features": {"containerd-snapshotter": false} in /etc/docker/daemon.json, '
                         "restart dockerd and build the images again (docs/runtimes.md, "
                         "\"The containerd image store\")")
ADDRESS_FORMS = ("unix:///var/run/docker.sock, tcp://HOST:2375 (tcp://HOST:2376 with "
                 "DOCKER_TLS_VERIFY=1), or ssh://USER@HOST")
Answer = TypeVar("Answer")   # what a localhttp call returns: (status, body) or (status, headers)


def refused(status: int, asked: str, body: bytes = b"") -> ImgkitError:
    """The error for an engine's answer other than the one asked for ("GET /path")."""
    return ImgkitError(f"the Docker engine answered {status} to {asked}: "
                       f"{body.decode(errors='replace').strip()[:300]}")


def unix_socket(docker_host: str | None) -> str | None:
    """The socket path when the engine is local (DOCKER_HOST unset or unix://), else None."""
    if not docker_host:
        return DEFAULT_SOCKET
    if docker_host.startswith("unix://"):
        return docker_host[len("unix://"):] or DEFAULT_SOCKET
    return None


def _system_words(exc: Exception) -> str:
    """The system's words at the end of what requests and urllib3 nest ("[Errno 111]
    Connection refused"), else the error's first line."""
    found = re.findall(r"\[Errno -?\d+\] ([^'\")\]]+)", str(exc))
    return found[-1].strip() if found else first_line(exc)


class Client:
    """The engine's connection; the other parts of Engine build on it."""

    def __init__(self, timeout: int = 120, docker_host: str | None = None,
                 podman_chosen: bool = False, context: str | None = None) -> None:
        """`podman_chosen`: the user asked for Podman (address.py chose its socket), so an
        engine that does not answer is Podman's service to start. `context`: the docker
        CLI context that named `docker_host`, for the messages (None: DOCKER_HOST did)."""
        self.timeout = timeout
        self.docker_host = docker_host
        self.context = context
        self.socket_path = unix_socket(docker_host)
        # DOCKER_HOST at Podman's socket is Podman's service too, for what the errors say
        self.podman_chosen = podman_chosen or "/podman/" in (self.socket_path or "")
        self._client: docker.DockerClient | None = None
        self._bridge: SshBridge | None = None
        self._product: str | None = None
        self._containerd_store: bool | None = None
        self._lock = threading.Lock()

    @property
    def client(self) -> docker.DockerClient:
        """docker-py, imported and connected on first use (DOCKER_HOST's TLS settings
        apply as docker's own CLI reads them)."""
        with self._lock:
            if self._client is None:
                import docker
                environment = dict(os.environ)
                if self.docker_host and self.docker_host.startswith("ssh://"):
                    # through the ssh client, as the docker CLI goes (ssh_bridge.py says why)
                    from .ssh_bridge import SshBridge
                    self._bridge = SshBridge(self.docker_host)
                    for tls in ("DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"):  # not for a unix socket
                        environment.pop(tls, None)
                    environment["DOCKER_HOST"] = self._bridge.address
                elif self.docker_host:
                    environment["DOCKER_HOST"] = self.docker_host
                self._client = docker.from_env(timeout=self.timeout, environment=environment)
            return self._client

    @property
    def api(self) -> docker.APIClient:
        return self.client.api

    def _ask_local(self, ask: Callable[[str], Answer]) -> Answer:
        """What one request `ask` makes on the local engine socket answers (a localhttp
        call's status, and body or headers); EngineUnavailable when the socket does not
        answer, or not in HTTP."""
        if self.socket_path is None:
            raise EngineUnavailable("the engine is not on a local socket", hint=self.start_hint)
        try:
            return ask(self.socket_path)
        except OSError as exc:
            raise EngineUnavailable(f"cannot reach the {self._who()} at {self.socket_path}: "
                                    f"{exc.strerror or exc}", hint=self.start_hint)
        except ValueError as exc:
            raise EngineUnavailable(str(exc), hint=self.start_hint)

    def _get_local(self, path: str) -> Any:
        """GET a JSON document from the local engine socket; None on 404."""
        status, body = self._ask_local(lambda socket: localhttp.get(socket, path, self.timeout))
        if status == 404:
            return None
        if status != 200:
            raise refused(status, f"GET {path}", body)
        return json.loads(body) if body.lstrip()[:1] in (b"{", b"[") else body.decode()

    @property
    def start_hint(self) -> str:
        if self.podman_chosen:
            return PODMAN_START_HINT
        if self.context is not None:
            return (f"the Docker context {self.context!r} points at {self.docker_host}: start "
                    "the engine there, or `docker context use default` (or set DOCKER_HOST) for "
                    "another")
        if self.docker_host and self.socket_path != DEFAULT_SOCKET:
            return (f"DOCKER_HOST is {self.docker_host}: start the engine there, or unset "
                    f"DOCKER_HOST to use this host's {DEFAULT_SOCKET}")
        return START_HINT

    def _who(self) -> str:
        """The engine as messages name it."""
        return "Podman service" if self.podman_chosen else "Docker engine"

    def _version(self) -> dict[str, Any]:
        found = (self._get_local("/version") if self.socket_path is not None
                 else self.client.version())
        return found if isinstance(found, dict) else {}

    def server_version(self) -> str:
        """The engine's release, as it says it ("26.1.5+dfsg1", Podman's "5.7.0")."""
        return str(self._version().get("Version", ""))

    def product(self) -> str:
        """"podman" when Podman's Docker-compatible service answers, else "docker" (read
        once: its /version lists a "Podman Engine" component)."""
        if self._product is None:
            names = [str(c.get("Name", "")) for c in self._version().get("Components") or []
                     if isinstance(c, dict)]
            self._product = "podman" if "Podman Engine" in names else "docker"
        return self._product

    def cdi(self) -> tuple[list[str], list[str] | None]:
        """The engine's CDI spec folders (none: CDI is off) and the device names it found in
        them (None: an engine before API 1.50 does not say). Podman does not say either:
        its folders are containers.conf's, and imgkit reads their names there when the
        service is on this machine (engine/cdi_specs.py)."""
        if self.product() == "podman":
            from .cdi_specs import device_names, podman_spec_dirs
            dirs, sure = podman_spec_dirs(self.socket_path)
            local = self.socket_path is not None and sure
            return dirs, device_names(dirs) if local else None
        found = self.client.info()
        dirs = [str(d) for d in found.get("CDISpecDirs") or []]
        major, _, minor = str(self.api.api_version).partition(".")
        if (int(major), int(minor or 0)) < (1, 50):
            return dirs, None
        devices = found.get("DiscoveredDevices") or []     # null when none were found
        return dirs, [str(d.get("ID")) for d in devices if d.get("Source") == "cdi" and d.get("ID")]

    def containerd_store(self) -> bool:
        """Whether the engine keeps its images in containerd's image store (Docker 29's
        default for a new install; `"containerd-snapshotter": true` before): its image ids
        are then a manifest's or an index's digest, not the image config's."""
        if self._containerd_store is None:
            found = (self._get_local("/info") if self.socket_path is not None
                     else self.client.info())
            status = found.get("DriverStatus") if isinstance(found, dict) else None
            self._containerd_store = any(
                isinstance(pair, list) and pair[1:2] == ["io.containerd.snapshotter.v1"]
                for pair in status or [])
        return self._containerd_store

    def refuse_containerd_store(self, what: str) -> None:
        """`what` names an image by its config digest, in a registry and in verdicts, which
        the containerd store's image ids are not: said before any work (exit 3)."""
        if self.product() != "podman" and self.containerd_store():
            raise HostError(f"{what} is not supported yet on an engine that keeps images in the "
                            "containerd image store: imgkit names an image by its config's "
                            "digest, and this store's image ids are a manifest's or an index's",
                            hint=CONTAINERD_STORE_HINT)

    def ping(self) -> None:
        if self.socket_path is not None:
            self._get_local("/_ping")
            return
        import docker.errors
        import requests.exceptions
        try:
            self.client.ping()
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            said = self._bridge.last_error() if self._bridge else None    # ssh's own words
            if "Invalid bind address" in str(exc) or "scheme is not supported" in str(exc):
                raise EngineUnavailable(f"DOCKER_HOST {self.docker_host!r} is not an engine's "
                                        "address", hint=ADDRESS_FORMS) from None
            raise EngineUnavailable(f"cannot reach the {self._who()} at {self.docker_host}: "
                                    f"{said or _system_words(exc)}", hint=self.start_hint) from None


class Progress(TypedDict, total=False):
    current: int
    total: int


class ErrorDetail(TypedDict, total=False):
    message: str


class Chunk(TypedDict, total=False):
    """One chunk of the engine's JSON stream (build, push, pull) as the Engine API writes
    it; read as untrusted all the same (each reader checks the types it relies on)."""
    stream: str
    status: str
    id: str
    progressDetail: Progress
    aux: dict[str, object]
    error: str
    errorDetail: ErrorDetail


def checked(stream: Iterator[Any]) -> Iterator[Chunk]:
    """A docker-py stream's chunks (a bare string becomes {"stream": ...})."""
    for chunk in stream:
        yield cast(Chunk, chunk) if isinstance(chunk, dict) else {"stream": str(chunk)}
