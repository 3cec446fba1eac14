"""The module that talks to Docker. Every streamed chunk is checked.

Builds, tags, imports and removals go through docker-py. Importing docker-py (and requests)
costs about 0.1 s, more than everything else a no-op `imgkit build` does, so it is imported
only when first needed; the read-only calls a no-op needs (ping, inspect) speak HTTP to the
local engine socket with the standard library when DOCKER_HOST is a unix socket (the
default) and fall back to docker-py for tcp/ssh/TLS engines.
"""
from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import socket
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator
from urllib.parse import quote

from . import labels
from .errors import BuildFailed, EngineUnavailable, ImgkitError, RegistryError

if TYPE_CHECKING:
    import docker

LOG_TAIL = 25
STEP = re.compile(r"^Step (\d+/\d+) : (.*)$")
STEP_IMAGE = re.compile(r"^ ---> ([0-9a-f]{12,64})$")   # the image a step made (or reused)
LOST_HINT = ("check that dockerd is running (it may have restarted), then build again: the "
             "next build removes what this one left")


class Cancelled(ImgkitError):
    """The build was stopped on request (Ctrl-C); carries the images its steps made."""

    def __init__(self, message: str, images: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.images = images


class ContainerFailed(ImgkitError):
    """The engine refused to create or start a container; carries its explanation."""

    def __init__(self, explanation: str) -> None:
        super().__init__(f"the container could not start: {explanation.strip()[:300]}")
        self.explanation = explanation


@dataclass(frozen=True)
class ImageInfo:
    id: str
    tags: tuple[str, ...]
    labels: dict[str, str]
    layers: tuple[str, ...]
    size: int
    user: str = ""          # the image's default user (Config.User), "" for root


@dataclass(frozen=True)
class Step:
    """One entry of an image's history: the instruction and the bytes its layer holds."""
    size: int
    instruction: str


@dataclass(frozen=True)
class RunSpec:
    """A throwaway container: what runs, with what limits, and how much output is kept."""
    image: str
    entrypoint: tuple[str, ...]
    command: tuple[str, ...] = ()
    environment: dict[str, str] = field(default_factory=dict)
    gpus: str = "none"             # none, all, a count, or comma-separated device ids
    timeout: float = 600.0         # seconds before the container is killed
    memory: str = "16g"
    shm_size: str | None = None
    pids_limit: int = 1024
    labels: dict[str, str] = field(default_factory=dict)
    stdout_limit: int = 8 << 20    # bytes kept of each stream; the logs rotate beyond
    stderr_limit: int = 64 << 10


@dataclass(frozen=True)
class ContainerRun:
    exit_code: int | None          # None: still running at the deadline, so it was killed
    stdout: str
    stderr: str
    stdout_truncated: bool
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.exit_code is None


@dataclass(frozen=True)
class PathStat:
    """A file as the image's own filesystem has it (read through the engine)."""
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
        config = attrs.get("Config") or {}
        return ImageInfo(id=attrs["Id"], tags=tuple(attrs.get("RepoTags") or ()),
                         labels=dict(config.get("Labels") or {}),
                         layers=tuple(attrs.get("RootFS", {}).get("Layers") or ()),
                         size=int(attrs.get("Size") or 0), user=str(config.get("User") or ""))

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

    def remove_made(self, images: tuple[str, ...]) -> None:
        """Remove the images a failed or stopped build's steps made, newest first, so no
        `<none>` image lingers. Exactly those: no engine-wide prune, which the engine refuses
        while another runs (two builds stopping together). An image still tagged, or still
        the parent of another, is kept; removing one also removes its untagged parents."""
        for image in reversed(images):
            self.remove_if_unused(image)

    def remove_stale_build_steps(self, tags: list[str]) -> int:
        """Remove the stopped step containers an interrupted build of `tags` left (a build
        step's container carries the title label and runs an untagged image); returns how
        many. Only one `imgkit build` runs on a host at a time (its settings server holds
        a fixed port), so a stopped one is no other build's."""
        import docker.errors
        wanted, removed = set(tags), 0
        for container in self.api.containers(all=True, filters={"label": labels.TITLE}):
            if (container.get("State") != "running" and _build_step(container)
                    and container.get("Labels", {}).get(labels.TITLE) in wanted):
                try:
                    self.api.remove_container(container["Id"], force=True, v=True)
                    removed += 1
                except docker.errors.NotFound:
                    pass
        return removed

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
        import requests.exceptions
        import urllib3.exceptions
        tail: deque[str] = deque(maxlen=LOG_TAIL)
        step = "preparing the build context"
        made: list[str] = []  # every image a step made, in order: what a cleanup removes
        image_id = None
        try:
            stream = self.api.build(path=str(context_dir), rm=True, forcerm=True, pull=False,
                                    decode=True, extra_hosts=extra_hosts)
            try:
                for chunk in _checked(stream):
                    text = str(chunk.get("stream") or "")
                    made += [m.group(1) for m in map(STEP_IMAGE.match, text.splitlines()) if m]
                    aux = chunk.get("aux")
                    if isinstance(aux, dict) and "ID" in aux:
                        image_id = str(aux["ID"])
                        made.append(image_id)
                    if cancel.is_set():
                        # Read on to the end: the builder kills this build's step containers,
                        # and the build is over only when the daemon closes the stream.
                        # Closing it ourselves would leave a step that started meanwhile running.
                        continue
                    if "error" in chunk:
                        detail = chunk.get("errorDetail") or {}
                        reason = str(chunk.get("error") or detail.get("message")).strip()
                        raise BuildFailed(label, step, reason, list(tail), images=tuple(made))
                    for line in text.splitlines():
                        if not line.strip():
                            continue
                        tail.append(line)
                        on_line(line)
                        match = STEP.match(line.strip())
                        if match:
                            step = f"step {match.group(1)} ({match.group(2)[:80]})"
            finally:
                stream.close()  # on any exception, closing the stream makes the daemon stop
        except (requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError,
                urllib3.exceptions.ProtocolError) as exc:
            raise EngineUnavailable(f"the Docker engine stopped answering while building {label} "
                                    f"({step}): {_first_line(exc)}", hint=LOST_HINT)
        if cancel.is_set():
            raise Cancelled(f"{label}: build cancelled", images=tuple(made))
        if image_id is None:
            raise BuildFailed(label, step, "the engine reported no image id", list(tail),
                              images=tuple(made))
        return image_id

    # -- registries -----------------------------------------------------------------
    def history(self, ref: str) -> list[Step]:
        """The steps that made `ref`, oldest first (empty steps included: they keep the
        history of a child aligned with its parent's)."""
        return [Step(int(h.get("Size") or 0), str(h.get("CreatedBy") or ""))
                for h in reversed(self.api.history(ref))]

    def push(self, ref: str, credentials: tuple[str, str] | None = None,
             on_progress: Callable[[str, int, int], None] | None = None) -> str:
        """Push `ref` (registry/repository:tag) and return the manifest digest the registry
        accepted. docker-py does not raise when the registry refuses a layer or the
        credentials: every chunk is checked, and a push with no `aux.Digest` failed.
        `on_progress(layer, bytes sent, layer size)` follows each layer being uploaded.
        Raises RegistryError (its message is the engine's, for the caller to classify)."""
        repository, tag = ref.rsplit(":", 1)
        registry = repository.split("/", 1)[0]
        digest = None
        sizes: dict[str, int] = {}
        with _streaming(registry, f"pushing {ref}"):
            stream = self.api.push(repository, tag=tag, stream=True, decode=True,
                                   auth_config=_auth_config(credentials))
            for chunk in _registry_stream(stream, registry):
                aux = chunk.get("aux")
                if isinstance(aux, dict) and aux.get("Digest"):
                    digest = str(aux["Digest"])
                if on_progress is not None:
                    _report_layer(chunk, sizes, on_progress)
        if digest is None:
            raise RegistryError(registry, f"the push of {ref} ended without a digest")
        return digest

    def pull_checked(self, ref: str, credentials: tuple[str, str] | None = None) -> None:
        """Pull `ref` (name:tag or name@sha256:...), every chunk checked like a push."""
        name, digest = ref.split("@", 1) if "@" in ref else ref.rsplit(":", 1)
        registry = name.split("/", 1)[0]
        with _streaming(registry, f"pulling {ref}"):
            for _ in _registry_stream(self.api.pull(name, tag=digest, stream=True, decode=True,
                                                    auth_config=_auth_config(credentials)), registry):
                pass

    def untag(self, ref: str) -> None:
        """Remove the tag `ref` only (never the image it names)."""
        import docker.errors
        try:
            self.api.remove_image(ref, force=False, noprune=True)
        except docker.errors.NotFound:
            pass

    def registry_credentials(self, registry: str) -> tuple[str, str] | None:
        """(username, password or identity token) for `registry` from Docker's own config
        and credential helpers (DOCKER_CONFIG honoured), or None when it has none."""
        import docker.auth
        import docker.errors
        try:
            entry = docker.auth.load_config().resolve_authconfig(registry)
        except docker.errors.DockerException as exc:
            raise RegistryError(registry, f"Docker's credential helper failed: {_first_line(exc)}")
        if not entry:
            return None
        secret = entry.get("IdentityToken") or entry.get("password") or entry.get("Password")
        user = entry.get("username") or entry.get("Username") or ""
        if entry.get("IdentityToken"):
            user = "<token>"  # docker's marker: the secret is an OAuth2 refresh token
        return (str(user), str(secret)) if secret else None

    def registry_is_secure(self, registry: str) -> bool:
        """The engine's own policy: False for a registry it treats as insecure (listed in
        insecure-registries, or in their CIDRs, as 127.0.0.0/8 always is)."""
        import ipaddress
        config = self.client.info().get("RegistryConfig") or {}
        index = (config.get("IndexConfigs") or {}).get(registry)
        if index is not None:
            return bool(index.get("Secure", True))
        host = registry[1:registry.find("]")] if registry.startswith("[") else registry.split(":")[0]
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            try:
                address = ipaddress.ip_address(socket.gethostbyname(host))
            except (OSError, ValueError):
                return True
        return not any(address in ipaddress.ip_network(cidr, strict=False)
                       for cidr in config.get("InsecureRegistryCIDRs") or ())

    # -- containers ---------------------------------------------------------------
    def stop_build_steps(self, tag: str) -> int:
        """Kill the containers running build steps of `tag`; returns how many.

        For Ctrl-C: the legacy builder has no cancel call and notices a dropped client only
        at its next output, so a silent RUN step would keep going for minutes."""
        import docker.errors
        killed = 0
        for container in self.api.containers(filters={
                "label": f"{labels.TITLE}={tag}", "status": "running"}):
            if not _build_step(container):
                continue
            try:
                self.api.kill(container["Id"])
                killed += 1
            except docker.errors.APIError:
                pass  # it finished on its own meanwhile
        return killed

    def run_container(self, spec: RunSpec) -> ContainerRun:
        """Run `spec` to its end or its deadline; the container is removed on every path
        (start failure, timeout, Ctrl-C). At most the limits of output are kept, and the
        engine's own log of it rotates, so a flood fills neither memory nor the disk."""
        import docker.errors
        import docker.types
        api = self.api
        # Two log files: rotation empties the current one, so with one file a flood could
        # leave only a short tail; the full previous file keeps the excess visible. Each is
        # twice the kept size, since the log file counts its JSON framing too.
        megabytes = 2 * (spec.stdout_limit + spec.stderr_limit) // (1 << 20) + 1
        host_config = api.create_host_config(
            cap_drop=["ALL"], security_opt=["no-new-privileges"], read_only=True,
            tmpfs={"/tmp": "rw,exec,nosuid,size=1g"}, mem_limit=spec.memory,
            pids_limit=spec.pids_limit, shm_size=spec.shm_size, network_mode="none",
            device_requests=_device_requests(spec.gpus) or None,
            log_config=docker.types.LogConfig(type="json-file", config={
                "max-size": f"{megabytes}m", "max-file": "2"}))
        started = time.monotonic()
        try:
            cid = api.create_container(
                spec.image, entrypoint=list(spec.entrypoint), command=list(spec.command),
                host_config=host_config, network_disabled=True, labels=spec.labels,
                environment=spec.environment)["Id"]
        except docker.errors.APIError as exc:
            raise ContainerFailed(str(exc.explanation or exc))
        try:
            try:
                api.start(cid)
            except docker.errors.APIError as exc:
                raise ContainerFailed(str(exc.explanation or exc))
            code = self._wait(cid, spec.timeout)
            out, truncated = self._logs(cid, "stdout", spec.stdout_limit)
            err, _ = self._logs(cid, "stderr", spec.stderr_limit)
            return ContainerRun(code, out, err, truncated, time.monotonic() - started)
        finally:
            self.remove_container(cid)

    def _wait(self, cid: str, timeout: float) -> int | None:
        """The exit code, or None after killing a container still running at `timeout`.
        requests reports a read timeout as ReadTimeout or as ConnectionError depending on
        where it strikes, so the container's state decides, not the exception's type."""
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
                raise EngineUnavailable(f"lost the Docker engine while waiting: {_first_line(exc)}",
                                        hint=START_HINT)

    def _logs(self, cid: str, which: str, limit: int) -> tuple[str, bool]:
        """At most `limit` bytes of one stream, and whether there was more."""
        stream = self.api.logs(cid, stdout=which == "stdout", stderr=which == "stderr",
                               stream=True, follow=False)
        kept = bytearray()
        try:
            for chunk in stream:
                kept += chunk
                if len(kept) > limit:
                    return kept[:limit].decode(errors="replace"), True
        finally:
            stream.close()
        return kept.decode(errors="replace"), False

    def stat_files(self, image: str, paths: list[str]) -> dict[str, PathStat | None]:
        """Each path as `image`'s filesystem has it (None: no such file), read through the
        engine from a container that is created but never started, then removed."""
        import docker.errors
        try:
            cid = self.api.create_container(image, entrypoint=["/nonexistent"],
                                            labels={labels.ROLE: labels.ROLE_VERIFY})["Id"]
        except docker.errors.APIError as exc:
            raise ContainerFailed(str(exc.explanation or exc))
        try:
            with ThreadPoolExecutor(max_workers=8) as pool:  # one HEAD request per path
                return dict(zip(paths, pool.map(lambda path: self._stat(cid, path), paths)))
        finally:
            self.remove_container(cid)

    def _stat(self, cid: str, path: str) -> PathStat | None:
        response = self.api.head(self.api._url("/containers/{0}/archive", cid),
                                 params={"path": path})
        if response.status_code == 404:
            return None
        response.raise_for_status()
        header = response.headers.get("X-Docker-Container-Path-Stat", "")
        stat = json.loads(base64.b64decode(header)) if header else {}
        return PathStat(size=int(stat.get("size", -1)))

    def remove_container(self, container_id: str) -> None:
        import docker.errors
        try:
            self.api.remove_container(container_id, force=True, v=True)
        except docker.errors.NotFound:
            pass


def _build_step(container: dict[str, Any]) -> bool:
    """A legacy-builder step's container runs an untagged intermediate image (its Image is
    an id, never a tag as in a user's `docker run`) and carries our templates' labels."""
    return str(container.get("Image", "")).startswith("sha256:")


def _device_requests(gpus: str) -> list[Any]:
    """docker's --gpus: none, all, a count, or comma-separated ids/UUIDs."""
    import docker.types
    if gpus == "none":
        return []
    if gpus == "all":
        return [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])]
    if gpus.isdigit():
        return [docker.types.DeviceRequest(count=int(gpus), capabilities=[["gpu"]])]
    return [docker.types.DeviceRequest(device_ids=gpus.split(","), capabilities=[["gpu"]])]


def _auth_config(credentials: tuple[str, str] | None) -> dict[str, str] | None:
    """docker-py's auth_config for the engine (None: send no credentials)."""
    if credentials is None:
        return None
    user, secret = credentials
    return {"identitytoken": secret} if user == "<token>" else {"username": user, "password": secret}


@contextlib.contextmanager
def _streaming(registry: str, doing: str) -> Iterator[None]:
    """A push's or pull's failures: the registry's (RegistryError, its message the engine's,
    for the caller to classify) or a lost engine (exit 3)."""
    import docker.errors
    import requests.exceptions
    import urllib3.exceptions
    try:
        yield
    except docker.errors.APIError as exc:
        raise RegistryError(registry, str(exc.explanation or exc))
    except (requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError,
            urllib3.exceptions.ProtocolError) as exc:
        raise EngineUnavailable(f"the Docker engine stopped answering while {doing}: "
                                f"{_first_line(exc)}", hint=START_HINT)


def _registry_stream(stream: Iterator[Any], registry: str) -> Iterator[dict[str, Any]]:
    """A push or pull stream's chunks; one carrying an error (which docker-py does not
    raise) raises RegistryError with the engine's message."""
    for chunk in _checked(stream):
        if chunk.get("error") or chunk.get("errorDetail"):
            detail = chunk.get("errorDetail") or {}
            raise RegistryError(registry, str(detail.get("message") or chunk.get("error")))
        yield chunk


def _report_layer(chunk: dict[str, Any], sizes: dict[str, int],
                  on_progress: Callable[[str, int, int], None]) -> None:
    """Uploads report {"id", "progressDetail": {"current", "total"}}; "Pushed" ends one."""
    layer, detail = chunk.get("id"), chunk.get("progressDetail") or {}
    if not isinstance(layer, str) or not isinstance(detail, dict):
        return
    if isinstance(detail.get("total"), int) and detail["total"] > 0:
        sizes[layer] = detail["total"]
        on_progress(layer, int(detail.get("current") or 0), sizes[layer])
    elif chunk.get("status") == "Pushed" and layer in sizes:
        on_progress(layer, sizes[layer], sizes[layer])


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
