"""How a container asks the engine for GPUs (`--gpus`): none; NVIDIA's hook, as docker's
`--gpus` takes it (all, a count, device indexes or UUIDs); or CDI device names,
VENDOR/CLASS=NAME as NVIDIA's spec writes them (nvidia.com/gpu=all, nvidia.com/gpu=0,
nvidia.com/mig=0:1), served by the engine's Container Device Interface."""
from __future__ import annotations

import re

# the CDI specification's qualified device name: a vendor (a domain), a class, a name
CDI_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*\.[A-Za-z0-9-]+/[A-Za-z0-9][A-Za-z0-9_.-]*"
                      r"=[A-Za-z0-9][A-Za-z0-9_.:-]*$")


# docker's own key=value spelling of the same forms, as `docker run --gpus` takes them
DOCKER_FORM = re.compile(r'^"?(?:count|device)=([^"=]+)"?$')


def plain(gpus: str) -> str:
    """docker's spelling (count=2, count=all, "device=0,1") as imgkit's (2, all, 0,1); any
    other value as it is."""
    found = DOCKER_FORM.match(gpus.strip())
    return found.group(1) if found else gpus


def cdi_names(gpus: str) -> list[str] | None:
    """The CDI device names `gpus` asks for (comma-separated), or None when it is one of
    docker's --gpus forms. ValueError when it is neither."""
    parts = [p.strip() for p in gpus.split(",") if p.strip()]
    if not any("/" in p or "=" in p for p in parts):
        return None
    bad = [p for p in parts if not CDI_NAME.match(p)]
    if bad:
        raise ValueError(f"{bad[0]!r} is not a CDI device name (VENDOR/CLASS=NAME, e.g. "
                         "nvidia.com/gpu=all), and CDI names and docker's forms do not mix")
    return parts
