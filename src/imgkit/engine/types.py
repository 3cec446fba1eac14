"""What the engine hands back: plain frozen values, no docker-py objects."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping


@dataclass(frozen=True)
class ImageInfo:
    id: str
    tags: tuple[str, ...]
    labels: dict[str, str]
    layers: tuple[str, ...]
    size: int
    user: str = ""          # the image's default user (Config.User), "" for root
    platform: str = ""      # os/architecture[/variant] its config names, e.g. linux/arm64
    env: tuple[tuple[str, str], ...] = ()   # its config's ENV, in order
    digests: tuple[str, ...] = ()  # REPO@sha256:... it is known by in registries (RepoDigests)
    created: int = 0        # its config's date, in seconds since the epoch (0: none given)


@dataclass(frozen=True)
class Step:
    """One entry of an image's history: the instruction and the bytes its layer holds."""
    size: int
    instruction: str
    created: int = 0            # seconds since the epoch


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
    network: bool = False          # the engine's default bridge (e.g. to ask the apt mirror)
    user: str = ""                 # "" = the image's own default user
    platform: str = ""             # "" = the image's own; linux/arm64 runs under emulation here
    writable: bool = False         # the image's filesystem writable (a team's command may write)
    join: str = ""                 # a container whose network namespace it shares ("" = its own)


@dataclass(frozen=True)
class ImageConfig:
    """What an image's config says it runs as and with (what a metadata test reads)."""
    env: tuple[tuple[str, str], ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    exposed_ports: tuple[str, ...] = ()     # "8888/tcp"
    volumes: tuple[str, ...] = ()
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    workdir: str = ""
    user: str = ""

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> ImageConfig:
        """From the engine's `Config` of an image (absent keys as empty)."""
        pairs = (str(e).partition("=") for e in config.get("Env") or [])
        return cls(env=tuple((name, value) for name, _, value in pairs),
                   labels=tuple((str(k), str(v)) for k, v in (config.get("Labels") or {}).items()),
                   exposed_ports=tuple(config.get("ExposedPorts") or {}),
                   volumes=tuple(config.get("Volumes") or {}),
                   entrypoint=tuple(config.get("Entrypoint") or ()), cmd=tuple(config.get("Cmd") or ()),
                   workdir=str(config.get("WorkingDir") or ""), user=str(config.get("User") or ""))


@dataclass(frozen=True)
class ServiceState:
    """A started container as the engine sees it now."""
    running: bool
    exit_code: int | None          # once it stopped
    log: str                       # the last of what it printed (both streams)


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
class FileEntry:
    """A path as the image's own filesystem has it, read through the engine."""
    mode: str                      # as Go's FileMode writes it: -rw-r--r--, drwxr-xr-x, Lrwxrwxrwx
    uid: int
    gid: int
    content: bytes | None = None   # a regular file's first bytes (up to the reader's limit)
    link: str | None = None        # a symbolic link's target, as written


@dataclass(frozen=True)
class PathStat:
    """A file as the image's own filesystem has it (read through the engine)."""
    size: int


# what each path is in an image's filesystem (None: no such file)
StatFiles = Callable[[list[str]], dict[str, PathStat | None]]
