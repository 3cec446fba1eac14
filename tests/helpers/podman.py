"""Podman, rootful and rootless, as .ci/setup-podman.sh serves it (`make test` runs that
beside the first tests: this waits for it): each one's API socket, and an imgkit Engine
connected to it."""
from __future__ import annotations

import os
import pwd
import time
from pathlib import Path

import pytest

TOOLS = Path(os.environ.get("IMGKIT_TOOLS") or Path.home() / ".cache" / "imgkit-tools")
ROOTLESS_USER = "imgkit-rootless"
PODMAN = "/opt/imgkit-podman/bin/podman"    # where .ci/setup-podman.sh builds it


def socket_of(mode: str) -> str:
    """The API socket of the rootful service, or of imgkit-rootless's own."""
    if mode == "rootful":
        return "/run/podman/podman.sock"
    try:
        uid = pwd.getpwnam(ROOTLESS_USER).pw_uid
    except KeyError:
        return f"/run/user/(no {ROOTLESS_USER} user)/podman/podman.sock"
    return f"/run/user/{uid}/podman/podman.sock"


def podman_engine(mode: str, wait: float = 900):
    """An Engine on that Podman, waiting while the set-up still builds it; skipped (failed
    in CI) when there is none."""
    from imgkit.engine import Engine
    from imgkit.errors import EngineUnavailable
    status = TOOLS / "podman.status"
    deadline = time.monotonic() + wait
    while status.is_file() and status.read_text().strip() == "building" and time.monotonic() < deadline:
        time.sleep(5)
    host = "unix://" + socket_of(mode)
    engine = Engine(120, host)
    try:
        engine.ping()
    except EngineUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"no {mode} Podman ({exc}): .ci/setup-podman.sh serves it")
        pytest.skip(f"no {mode} Podman: run .ci/setup-podman.sh ({exc})")
    assert engine.product() == "podman", f"{host} is not Podman"
    return host, engine
