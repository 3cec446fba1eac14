"""Which engine imgkit talks to: DOCKER_HOST when it is set (a Docker engine or Podman's
Docker-compatible socket, told apart by what the engine says it is), else Podman's own
socket when the user chose Podman (`--engine podman`, IMGKIT_ENGINE=podman), else Docker's
default socket. Pure: the environment and the user id come in as data."""
from __future__ import annotations

from typing import Mapping

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


def engine_host(environ: Mapping[str, str], uid: int, chosen: str | None = None) -> str | None:
    """The DOCKER_HOST-style address to connect to (None: Docker's default socket)."""
    if environ.get("DOCKER_HOST"):
        return environ["DOCKER_HOST"]
    if wants_podman(environ, chosen):
        return "unix://" + podman_socket(uid, environ)
    return None
