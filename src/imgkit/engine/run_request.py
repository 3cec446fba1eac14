"""The Engine API's request to create a throwaway container (`POST /containers/create`),
built from a RunSpec without docker-py. On the local socket, verify creates and starts its
probe's container with it before docker-py (a tenth of a second of imports on a small
machine, most of what verify adds to `docker run`) has loaded; elsewhere docker-py posts the
same body. tests/test_run_request.py holds it to what docker-py writes for the same spec."""
from __future__ import annotations

from typing import TypedDict

from ..gpus import cdi_names
from .types import RunSpec

UNITS = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


class DeviceRequest(TypedDict):
    Driver: str
    Count: int
    DeviceIDs: list[str]
    Capabilities: list[list[str]]
    Options: dict[str, str]


class LogConfig(TypedDict):
    Type: str
    Config: dict[str, str]


class HostConfig(TypedDict, total=False):
    CapDrop: list[str]
    SecurityOpt: list[str]
    Tmpfs: dict[str, str]
    Memory: int
    PidsLimit: int
    ReadonlyRootfs: bool
    NetworkMode: str
    LogConfig: LogConfig
    ShmSize: int
    DeviceRequests: list[DeviceRequest]


class CreateBody(TypedDict, total=False):
    """The fields of the Engine API's ContainerConfig that imgkit sets."""
    Image: str
    Entrypoint: list[str]
    Cmd: list[str]
    Env: list[str]
    Labels: dict[str, str]
    NetworkDisabled: bool
    HostConfig: HostConfig
    User: str


def size_bytes(size: str) -> int:
    """A size as docker takes it (512m, 8g, 1073741824) in bytes."""
    text = size.strip().lower()
    if text[-2:-1].isalpha() and text.endswith("b"):      # 512mb
        text = text[:-1]
    unit = UNITS.get(text[-1:], 0)
    try:
        return int(float(text[:-1] if unit else text) * (unit or 1))
    except ValueError:
        raise ValueError(f"{size!r} is not a size such as 512m or 8g") from None


def device_requests(gpus: str) -> list[DeviceRequest]:
    """The DeviceRequests for --gpus (see imgkit/gpus.py): CDI names through the cdi
    driver, the rest through NVIDIA's hook (the "gpu" capability)."""
    if gpus == "none":
        return []
    names = cdi_names(gpus)
    if names:
        return [_request(driver="cdi", device_ids=names)]
    if gpus == "all":
        return [_request(count=-1, capabilities=[["gpu"]])]
    if gpus.isdigit():
        return [_request(count=int(gpus), capabilities=[["gpu"]])]
    return [_request(device_ids=gpus.split(","), capabilities=[["gpu"]])]


def _request(driver: str = "", count: int = 0, device_ids: list[str] | None = None,
             capabilities: list[list[str]] | None = None) -> DeviceRequest:
    return {"Driver": driver, "Count": count, "DeviceIDs": device_ids or [],
            "Capabilities": capabilities or [], "Options": {}}


def host_config(spec: RunSpec) -> HostConfig:
    """Locked down: no capabilities, no new privileges, the image read-only unless the spec
    writes, /tmp a tmpfs, memory and processes capped, no network unless asked, the logs
    rotated at twice what is kept of them."""
    # Two log files: rotation empties the current one, so with one file a flood could
    # leave only a short tail; the full previous file keeps the excess visible. Each is
    # twice the kept size, since the log file counts its JSON framing too.
    megabytes = 2 * (spec.stdout_limit + spec.stderr_limit) // (1 << 20) + 1
    config: HostConfig = {
        "CapDrop": ["ALL"], "SecurityOpt": ["no-new-privileges"],
        "Tmpfs": {"/tmp": "rw,exec,nosuid,size=1g"}, "Memory": size_bytes(spec.memory),
        "PidsLimit": spec.pids_limit, "ReadonlyRootfs": not spec.writable,
        "NetworkMode": (f"container:{spec.join}" if spec.join else
                        "bridge" if spec.network else "none"),
        "LogConfig": {"Type": "json-file",
                      "Config": {"max-size": f"{megabytes}m", "max-file": "2"}}}
    if spec.shm_size:
        config["ShmSize"] = size_bytes(spec.shm_size)
    requests = device_requests(spec.gpus)
    if requests:
        config["DeviceRequests"] = requests
    return config


def create_body(spec: RunSpec) -> CreateBody:
    """The body of `POST /containers/create` for `spec` (its platform goes in the query)."""
    body: CreateBody = {
        "Image": spec.image, "Entrypoint": list(spec.entrypoint), "Cmd": list(spec.command),
        "Env": [f"{key}={value}" for key, value in spec.environment.items()],
        "Labels": dict(spec.labels), "NetworkDisabled": not (spec.network or spec.join),
        "HostConfig": host_config(spec)}
    if spec.user:
        body["User"] = spec.user
    return body
