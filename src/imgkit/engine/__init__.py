"""The only package that imports docker-py. Engine is one object made of its parts: the
connection (client), images, builds, containers, and registries as the engine sees them."""
from __future__ import annotations

import os

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
    """Everything imgkit asks of a Docker engine."""


def connect(timeout: int = 120) -> Engine:
    """An Engine for the daemon DOCKER_HOST (or the default socket) points at; checked now,
    so an unreachable engine is one clear error (exit 3) before any work starts."""
    engine = Engine(timeout, os.environ.get("DOCKER_HOST"))
    engine.ping()
    return engine
