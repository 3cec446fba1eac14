"""The container-create request imgkit posts itself (engine/run_request.py) is the one
docker-py would post for the same spec: the same fields, sizes, device requests and
limits, so that a verify over the local socket and one through docker-py (a remote engine)
start the same container."""
from __future__ import annotations

from typing import Any

import docker
import docker.types
import pytest

from imgkit.engine import RunSpec
from imgkit.engine.run_request import create_body, device_requests, size_bytes

SPECS = [
    RunSpec(image="img@sha256:" + "a" * 64, entrypoint=("python3", "-c", "x"), command=("--no-gpu",),
            environment={"HOME": "/tmp", "IMGKIT_PROBE": "UEsDBA=="}, labels={"imgkit.role": "verify"}),
    RunSpec(image="img", entrypoint=("sh",), gpus="all", memory="512m", shm_size="8g",
            writable=True, network=True, user="1000:1000", stdout_limit=1 << 20),
    RunSpec(image="img", entrypoint=("sh",), gpus="nvidia.com/gpu=0,nvidia.com/gpu=1",
            join="abc123", pids_limit=64, memory="1073741824"),
    RunSpec(image="img", entrypoint=("sh",), gpus="2", shm_size="64mb"),
    RunSpec(image="img", entrypoint=("sh",), gpus="0,3"),
]


def docker_py_body(spec: RunSpec) -> dict[str, Any]:
    """What docker-py's create_container would post for `spec` (as engine/containers.py
    called it before), without the fields it sends as null or as attach defaults."""
    api = docker.APIClient(version="1.51")
    megabytes = 2 * (spec.stdout_limit + spec.stderr_limit) // (1 << 20) + 1
    gpus = docker_py_requests(spec.gpus)
    host_config = api.create_host_config(
        cap_drop=["ALL"], security_opt=["no-new-privileges"], read_only=not spec.writable,
        tmpfs={"/tmp": "rw,exec,nosuid,size=1g"}, mem_limit=spec.memory,
        pids_limit=spec.pids_limit, shm_size=spec.shm_size,
        network_mode=(f"container:{spec.join}" if spec.join else
                      "bridge" if spec.network else "none"),
        device_requests=gpus or None,
        log_config=docker.types.LogConfig(type="json-file", config={
            "max-size": f"{megabytes}m", "max-file": "2"}))
    config = api.create_container_config(
        spec.image, entrypoint=list(spec.entrypoint), command=list(spec.command),
        host_config=host_config, network_disabled=not (spec.network or spec.join),
        labels=spec.labels, environment=spec.environment, user=spec.user or None)
    attach = {"Tty", "OpenStdin", "StdinOnce", "AttachStdin", "AttachStdout", "AttachStderr"}
    return {k: v for k, v in config.items() if v is not None and k not in attach}


def docker_py_requests(gpus: str) -> list[docker.types.DeviceRequest]:
    if gpus == "none":
        return []
    if "=" in gpus:
        return [docker.types.DeviceRequest(driver="cdi", device_ids=gpus.split(","))]
    if gpus == "all":
        return [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])]
    if gpus.isdigit():
        return [docker.types.DeviceRequest(count=int(gpus), capabilities=[["gpu"]])]
    return [docker.types.DeviceRequest(device_ids=gpus.split(","), capabilities=[["gpu"]])]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.gpus + ("-rw" if s.writable else ""))
def test_the_request_is_docker_pys(spec: RunSpec) -> None:
    assert create_body(spec) == docker_py_body(spec)


@pytest.mark.parametrize("size", ["1", "512m", "8g", "64mb", "1073741824", "2k", "3G", "1.5g"])
def test_sizes_read_as_docker_py_reads_them(size: str) -> None:
    assert size_bytes(size) == docker.utils.parse_bytes(size)


def test_a_size_that_is_not_one_is_said() -> None:
    with pytest.raises(ValueError, match="'lots' is not a size"):
        size_bytes("lots")


def test_cdi_names_become_a_cdi_device_request() -> None:
    [request] = device_requests("nvidia.com/gpu=0,nvidia.com/gpu=1")
    assert request["Driver"] == "cdi" and request["DeviceIDs"] == ["nvidia.com/gpu=0",
                                                                   "nvidia.com/gpu=1"]
    [legacy] = device_requests("all")
    assert legacy["Count"] == -1 and legacy["Capabilities"] == [["gpu"]]
    assert device_requests("none") == []
