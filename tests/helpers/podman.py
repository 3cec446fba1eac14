"""Podman, rootful and rootless, as .ci/setup-podman.sh serves it (`make test` runs that
beside the first tests: this waits for it): each one's API socket, and an imgkit Engine
connected to it."""
from __future__ import annotations

import pwd

from .background import missing, wait_while_building

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
    wait_while_building("podman", wait)
    host = "unix://" + socket_of(mode)
    engine = Engine(120, host)
    try:
        engine.ping()
    except EngineUnavailable as exc:
        missing(f"{mode} Podman ({exc})", ".ci/setup-podman.sh")
    assert engine.product() == "podman", f"{host} is not Podman"
    return host, engine
