"""The only package that imports docker-py. Engine is one object made of its parts: the
connection (client), images, builds, containers, and registries as the engine sees them."""
from __future__ import annotations

import os

from ..errors import HostError
from .address import PODMAN, engine_address, wants_podman
from .auth import Registries, docker_credentials
from .build import Builds
from .client import Client
from .containers import Containers
from .images import Images
from .types import (
    ContainerRun,
    FileEntry,
    ImageConfig,
    ImageInfo,
    PathStat,
    RunSpec,
    ServiceState,
    StatFiles,
    Step,
)

__all__ = ["Client", "ContainerRun", "Engine", "FileEntry", "ImageConfig", "ImageInfo", "PathStat",
           "RunSpec", "ServiceState", "StatFiles", "Step", "connect", "docker_credentials"]


class Engine(Images, Builds, Containers, Registries):
    """Everything imgkit asks of a Docker engine (or of Podman's Docker-compatible one)."""


def connect(timeout: int = 120, chosen: str | None = None) -> Engine:
    """An Engine for the daemon DOCKER_HOST points at, else Podman's socket when the user
    chose Podman (`chosen`: the command's own --engine; else IMGKIT_ENGINE), else the docker
    CLI's current context's, else Docker's default socket (address.py); checked now, so an
    unreachable engine is one clear error (exit 3) before any work starts."""
    podman = wants_podman(os.environ, chosen)
    host, context = engine_address(os.environ, os.getuid(), chosen)
    engine = Engine(timeout, host, podman_chosen=podman and not os.environ.get("DOCKER_HOST"),
                    context=context)
    engine.ping()
    if podman and engine.product() != PODMAN:
        raise HostError(f"Podman was chosen, and the engine at {os.environ.get('DOCKER_HOST')} "
                        "is Docker", hint="unset DOCKER_HOST to use Podman's own socket, or "
                        "point it at Podman's (unix:///run/podman/podman.sock)")
    return engine
