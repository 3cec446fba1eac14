"""Which engine imgkit talks to: DOCKER_HOST when it is set (a Docker engine or Podman's
Docker-compatible socket, told apart by what the engine says it is), else Podman's own
socket when the user chose Podman (`--engine podman`, IMGKIT_ENGINE=podman), else the
docker CLI's current context (DOCKER_CONTEXT, else `docker context use`'s choice: rootless
Docker, Docker Desktop, colima), else Docker's default socket: the engine `docker` itself
talks to, which is also the one imgkit's buildx builds run on. Pure: the environment and the
user id come in as data; the context is read from the docker CLI's files. Standard library
only (the no-op build's path reads it too)."""
from __future__ import annotations

from typing import Mapping

from .. import docker_context
from ..errors import UsageError

PODMAN = "podman"
ENGINE_VARIABLE = "IMGKIT_ENGINE"
ROOTFUL_PODMAN = "/run/podman/podman.sock"
PODMAN_START_HINT = ("start Podman's API service: `systemctl start podman.socket` (rootless: "
                     "`systemctl --user start podman.socket`), or `podman system service "
                     "--time=0 &` where there is no systemd")


def wants_podman(environ: Mapping[str, str], chosen: str | None = None) -> bool:
    """Whether the user chose Podman: `chosen` is the command's own --engine when it has one,
    else IMGKIT_ENGINE says."""
    return (chosen if chosen is not None else environ.get(ENGINE_VARIABLE, "")) == PODMAN


def podman_socket(uid: int, environ: Mapping[str, str]) -> str:
    """Podman's API socket: the system service's for root, the user's own service's
    (under XDG_RUNTIME_DIR) for anyone else, as `podman info` reports it."""
    if uid == 0:
        return ROOTFUL_PODMAN
    runtime_dir = environ.get("XDG_RUNTIME_DIR") or f"/run/user/{uid}"
    return f"{runtime_dir}/podman/podman.sock"


def engine_address(environ: Mapping[str, str], uid: int,
                   chosen: str | None = None) -> tuple[str | None, str | None]:
    """The DOCKER_HOST-style address to connect to (None: Docker's default socket), and the
    docker CLI context that named it (None: DOCKER_HOST, Podman's socket or the default)."""
    if environ.get("DOCKER_HOST"):
        return environ["DOCKER_HOST"], None
    if wants_podman(environ, chosen):
        return "unix://" + podman_socket(uid, environ), None
    name = docker_context.current_name(environ)
    return (None, None) if name == "default" else (context_host(environ, name), name)


def context_host(environ: Mapping[str, str], name: str) -> str:
    """The Docker endpoint of the context `name` (one other than "default")."""
    said = "DOCKER_CONTEXT" if environ.get("DOCKER_CONTEXT") else "`docker context use`"
    host, tls, exists = docker_context.endpoint(environ, name)
    if not exists:
        raise UsageError(f"the Docker context {name!r} ({said}) does not exist",
                         hint="`docker context ls` lists them: `docker context use default`, "
                              "or set DOCKER_HOST")
    if host is None:
        raise UsageError(f"the Docker context {name!r} ({said}) names no Docker endpoint",
                         hint=f"`docker context inspect {name}`; or set DOCKER_HOST")
    if tls:
        raise UsageError(f"the Docker context {name!r} ({said}) reaches {host} with TLS files "
                         "imgkit does not read from a context",
                         hint=f"set DOCKER_HOST={host}, DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH "
                              "to a folder of its ca.pem, cert.pem and key.pem")
    return host
