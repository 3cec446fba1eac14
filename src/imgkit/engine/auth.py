"""Registries as the engine sees them: push and pull (every chunk checked), the credentials
in Docker's own config (and, on Podman, in Podman's auth file first), and the engine's
insecure-registry policy."""
from __future__ import annotations

import contextlib
import os
import re
import socket
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ..errors import EngineUnavailable, RegistryError, first_line
from .client import START_HINT, Chunk, Client, checked


class Registries(Client):
    def push(self, ref: str, credentials: tuple[str, str] | None = None,
             on_progress: Callable[[str, int, int], None] | None = None,
             retry_until: float | None = None) -> str:
        """Push `ref` (registry/repository:tag) and return the manifest digest the registry
        accepted. docker-py does not raise when the registry refuses a layer or the
        credentials: every chunk is checked, and a push with no `aux.Digest` failed.
        `on_progress(layer, bytes sent, layer size)` follows each layer being uploaded.
        The engine tries a failed layer upload again by itself (5 tries, up to 20 s apart);
        one it would start past `retry_until` (time.monotonic()) stops the push: the
        connection is closed, and the engine cancels a push whose client has gone.
        Raises RegistryError (its message is the engine's, for the caller to classify)."""
        repository, tag = ref.rsplit(":", 1)
        registry = repository.split("/", 1)[0]
        digest = None
        sizes: dict[str, int] = {}
        with _streaming(registry, f"pushing {ref}"):
            response = self._push_request(repository, tag, credentials)
            try:
                for chunk in _registry_stream(self.api._stream_helper(response, decode=True),
                                              registry):
                    _stop_if_retrying_late(chunk, retry_until, registry)
                    digest = _pushed_digest(chunk) or digest
                    if on_progress is not None:
                        _report_layer(chunk, sizes, on_progress)
            finally:
                response.close()        # on every path: an unfinished push is cancelled
        if digest is None:
            raise RegistryError(registry, f"the push of {ref} ended without a digest")
        return digest

    def _push_request(self, repository: str, tag: str,
                      credentials: tuple[str, str] | None) -> Any:
        """The engine's push of repository:tag, its streamed response open. docker-py's own
        `push()` as it is written, but giving the response back: its stream is a generator
        whose closing would leave the connection, and so the engine's push, running."""
        import docker.auth
        registry, _ = docker.auth.resolve_repository_name(repository)   # as push() finds it
        header = self._auth_header(registry, credentials)
        params = {"tag": tag}
        if self._podman_over_http(registry):
            params["tlsVerify"] = "false"     # Podman's own parameter; Docker decides alone
        response = self.api._post_json(self.api._url("/images/{0}/push", repository), None,
                                       headers={"X-Registry-Auth": header} if header else {},
                                       stream=True, params=params)
        self.api._raise_for_status(response)
        return response

    def pull_checked(self, ref: str, credentials: tuple[str, str] | None = None) -> None:
        """Pull `ref` (name:tag or name@sha256:...), every chunk checked like a push."""
        name, digest = ref.split("@", 1) if "@" in ref else ref.rsplit(":", 1)
        registry = name.split("/", 1)[0]
        with _streaming(registry, f"pulling {ref}"):
            if self._podman_over_http(registry):
                stream = self._podman_pull_plain_http(ref, registry, credentials)
            else:
                stream = self.api.pull(name, tag=digest, stream=True, decode=True,
                                       auth_config=_auth_config(credentials))
            for _ in _registry_stream(stream, registry):
                pass

    def _podman_pull_plain_http(self, ref: str, registry: str,
                                credentials: tuple[str, str] | None) -> Iterator[Any]:
        """Podman's own pull (its libpod API), told the registry speaks plain HTTP: its
        Docker-compatible pull has no such parameter and would insist on TLS, where Docker
        takes a loopback registry over HTTP. Its stream carries `error` as Docker's does."""
        header = self._auth_header(registry, credentials)
        # libpod's routes take Podman's own version (not the Docker API's) in the path
        response = self.api._post(f"{self.api.base_url}/v{self.server_version()}/libpod/images/pull",
                                  params={"reference": ref, "tlsVerify": "false",
                                          "policy": "always"},
                                  headers={"X-Registry-Auth": header} if header else {},
                                  stream=True, timeout=None)
        self.api._raise_for_status(response)
        return self.api._stream_helper(response, decode=True)


    def _podman_over_http(self, registry: str) -> bool:
        """Whether the engine is Podman and `registry` one it must reach over plain HTTP
        (Docker decides that alone; Podman must be told, request by request)."""
        return self.product() == "podman" and not self.registry_is_secure(registry)

    def _auth_header(self, registry: str, credentials: tuple[str, str] | None) -> bytes | None:
        """X-Registry-Auth for `registry`: `credentials` when given, else Docker's config."""
        import docker.auth
        auth = _auth_config(credentials)
        return (docker.auth.encode_header(auth) if auth is not None
                else docker.auth.get_config_header(self.api, registry))

    def registry_credentials(self, registry: str) -> tuple[str, str] | None:
        """(username, password or identity token) for `registry` from Docker's own config
        and credential helpers (DOCKER_CONFIG honoured), on Podman from the file `podman
        login` writes first (as Podman reads them), or None when none has any."""
        if self.product() == "podman":
            found = podman_credentials(registry, podman_auth_files(os.environ, os.getuid()))
            if found is not None:
                return found
        return docker_credentials(registry)

    def registry_is_secure(self, registry: str) -> bool:
        """The engine's own policy: False for a registry it treats as insecure (listed in
        insecure-registries, or in their CIDRs, as 127.0.0.0/8 always is). Podman lists
        registries.conf's insecure ones and no CIDRs: a loopback registry is plain HTTP
        there too, as Docker has it (its traffic never leaves the machine)."""
        import ipaddress
        config = self.client.info().get("RegistryConfig") or {}
        loopback = ("127.0.0.0/8", "::1/128") if self.product() == "podman" else ()
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
                       for cidr in (*(config.get("InsecureRegistryCIDRs") or ()), *loopback))


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
                                f"{first_line(exc)}", hint=START_HINT)


def _registry_stream(stream: Iterator[Any], registry: str) -> Iterator[Chunk]:
    """A push or pull stream's chunks; one carrying an error (which docker-py does not
    raise) raises RegistryError with the engine's message."""
    for chunk in checked(stream):
        if chunk.get("error") or chunk.get("errorDetail"):
            detail = chunk.get("errorDetail") or {}
            raise RegistryError(registry, str(detail.get("message") or chunk.get("error")))
        yield chunk


# "TAG: digest: sha256:... size: N", the line docker's CLI prints: Docker sends it beside
# aux.Digest, Podman's compatible API sends only it
PUSHED = re.compile(r"^\S+: digest: (sha256:[0-9a-f]{64}) size: \d+$")


def _pushed_digest(chunk: Chunk) -> str | None:
    """The manifest digest a push chunk says the registry accepted, if it says one."""
    aux = chunk.get("aux")
    if isinstance(aux, dict) and aux.get("Digest"):
        return str(aux["Digest"])
    found = PUSHED.match(str(chunk.get("status") or ""))
    return found.group(1) if found else None


RETRYING = re.compile(r"Retrying in (\d+) seconds?")


def _stop_if_retrying_late(chunk: Chunk, retry_until: float | None, registry: str) -> None:
    """The engine says {"status": "Retrying in N seconds", "id": layer} after a failed
    upload; a try that would start past `retry_until` is not waited for."""
    found = RETRYING.fullmatch(str(chunk.get("status") or ""))
    if retry_until is None or found is None:
        return
    if time.monotonic() + int(found.group(1)) > retry_until:
        raise RegistryError(registry, f"the upload of layer {chunk.get('id', '?')} failed, and the "
                            f"engine's next try ({found.group(1)} s away) is past the time "
                            "allowed for retries (--retry-for): the push was stopped",
                            transient=True)


def _report_layer(chunk: Chunk, sizes: dict[str, int],
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


def podman_auth_files(environ: Mapping[str, str], uid: int) -> list[Path]:
    """Where `podman login` keeps credentials, in the order Podman reads them
    (containers-auth.json(5)): REGISTRY_AUTH_FILE alone when it is set; else the runtime
    folder's file (/run/containers/UID/ without XDG_RUNTIME_DIR), then the config folder's.
    Docker's own config, which Podman reads last, is docker_credentials'."""
    if environ.get("REGISTRY_AUTH_FILE"):
        return [Path(environ["REGISTRY_AUTH_FILE"])]
    runtime = environ.get("XDG_RUNTIME_DIR")
    config = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME") or "~").expanduser()
                                                    / ".config")
    return [Path(runtime) / "containers" / "auth.json" if runtime
            else Path(f"/run/containers/{uid}/auth.json"), Path(config) / "containers" / "auth.json"]


def podman_credentials(registry: str, files: list[Path]) -> tuple[str, str] | None:
    """The first of `files` (Podman's auth files, Docker's format) that holds `registry`."""
    import docker.auth
    import docker.errors
    for path in files:
        if not path.is_file():
            continue
        try:
            entry = docker.auth.load_config(config_path=str(path)).resolve_authconfig(registry)
        except docker.errors.DockerException as exc:
            raise RegistryError(registry, f"{path}: {first_line(exc)}")
        found = _credentials_of(entry)
        if found is not None:
            return found
    return None


def docker_credentials(registry: str) -> tuple[str, str] | None:
    """What `registry_credentials` says, with no engine: Docker's config file (DOCKER_CONFIG
    honoured, as a Kubernetes pull secret mounted there is read) and credential helpers."""
    import docker.auth
    import docker.errors
    try:
        entry = docker.auth.load_config().resolve_authconfig(registry)
    except docker.errors.DockerException as exc:
        raise RegistryError(registry, f"Docker's credential helper failed: {first_line(exc)}")
    return _credentials_of(entry)


def _credentials_of(entry: Any) -> tuple[str, str] | None:
    """(username, secret) of one of docker-py's auth entries, or None for none."""
    if not entry:
        return None
    secret = entry.get("IdentityToken") or entry.get("password") or entry.get("Password")
    user = entry.get("username") or entry.get("Username") or ""
    if entry.get("IdentityToken"):
        user = "<token>"  # docker's marker: the secret is an OAuth2 refresh token
    return (str(user), str(secret)) if secret else None
