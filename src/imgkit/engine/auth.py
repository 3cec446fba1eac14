"""Registries as the engine sees them: push and pull (every chunk checked), the credentials
in Docker's own config, and the engine's insecure-registry policy."""
from __future__ import annotations

import contextlib
import socket
from typing import Any, Callable, Iterator

from ..errors import EngineUnavailable, RegistryError, first_line
from .client import START_HINT, Chunk, Client, checked


class Registries(Client):
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


    def registry_credentials(self, registry: str) -> tuple[str, str] | None:
        """(username, password or identity token) for `registry` from Docker's own config
        and credential helpers (DOCKER_CONFIG honoured), or None when it has none."""
        return docker_credentials(registry)

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


def docker_credentials(registry: str) -> tuple[str, str] | None:
    """What `registry_credentials` says, with no engine: Docker's config file (DOCKER_CONFIG
    honoured, as a Kubernetes pull secret mounted there is read) and credential helpers."""
    import docker.auth
    import docker.errors
    try:
        entry = docker.auth.load_config().resolve_authconfig(registry)
    except docker.errors.DockerException as exc:
        raise RegistryError(registry, f"Docker's credential helper failed: {first_line(exc)}")
    if not entry:
        return None
    secret = entry.get("IdentityToken") or entry.get("password") or entry.get("Password")
    user = entry.get("username") or entry.get("Username") or ""
    if entry.get("IdentityToken"):
        user = "<token>"  # docker's marker: the secret is an OAuth2 refresh token
    return (str(user), str(secret)) if secret else None
