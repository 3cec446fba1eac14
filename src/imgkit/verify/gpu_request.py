"""Which way the probe's container gets its GPUs, decided before it starts: CDI device names
are checked against what the engine's CDI found (the host's faults named for what they
are, exit 3); docker's --gpus forms (all, device indexes) go through NVIDIA's CDI spec when
the engine has one for them, through NVIDIA's legacy hook otherwise. Pure logic: the
engine's CDI view comes in as data."""
from __future__ import annotations

from dataclasses import dataclass

from .. import versions
from ..errors import HostError
from ..gpus import cdi_names
from .diagnose import HOST
from .expect import check_gpus
from .verdict import INFO, Check

NVIDIA_GPU = "nvidia.com/gpu"
PODMAN_CDI = "5.5"    # the first Podman whose API honours CDI device requests
GENERATE = ("generate NVIDIA's spec: `sudo nvidia-ctk cdi generate "
            "--output=/var/run/cdi/nvidia.yaml` (the NVIDIA Container Toolkit 1.18 and later "
            "keep it current themselves); `nvidia-ctk cdi list` shows the names it holds")
CDI_OFF_HINT = ('turn CDI on in the daemon ({"features": {"cdi": true}} in '
                "/etc/docker/daemon.json, the default from Docker 28.2) and restart dockerd, "
                "or ask with --gpus all (NVIDIA's legacy hook)")


@dataclass(frozen=True)
class GpuPath:
    gpus: str     # what the container is created with (the engine's device requests take it)
    way: str      # "CDI" or "NVIDIA's hook"

    def check(self) -> Check:
        """The verdict's record of which way the GPUs came."""
        return Check("gpu.request", INFO, "GPUs from the engine", f"{self.way}: {self.gpus}",
                     f"the probe's container asked for its GPUs through {self.way} "
                     f"({self.gpus})", scope=HOST, required=False)


def resolve(gpus: str, spec_dirs: list[str], found: list[str] | None,
            podman: str = "") -> GpuPath:
    """The way `gpus` (not "none") is asked for, given the engine's CDI spec folders
    (`spec_dirs`: empty when CDI is off) and the devices it found (`found`: None when the
    engine does not say, before API 1.50). `podman`: Podman's release when the engine is
    Podman, whose API serves GPUs only by CDI (and silently drops any other request)."""
    names = cdi_names(check_gpus(gpus))       # a malformed value: the usage error, exit 2
    if podman:
        _check_podman(podman)
    if names is not None:
        _check_names(names, spec_dirs, found)
        return GpuPath(",".join(names), "CDI")
    # docker's forms as NVIDIA's spec names the same GPUs (a count has no such name)
    wanted = ([f"{NVIDIA_GPU}=all"] if gpus == "all" else None if gpus.isdigit()
              else [f"{NVIDIA_GPU}={i.strip()}" for i in gpus.split(",")])
    if podman:
        if wanted is None:
            raise HostError(f"--gpus {gpus}: Podman hands out GPUs by CDI device name, which "
                            "has no count", hint="name them: --gpus all, --gpus 0,1 or "
                            f"--gpus {NVIDIA_GPU}=0")
        _check_names(wanted, spec_dirs, found)
        return GpuPath(",".join(wanted), "CDI")
    if found and wanted and all(name in found for name in wanted):
        return GpuPath(",".join(wanted), "CDI")   # the way the engine serves them now
    return GpuPath(gpus, "NVIDIA's hook")


def _check_podman(release: str) -> None:
    """Podman's Docker-compatible API passes CDI device requests on from 5.5 (before, it
    drops them and the container would start with no GPU)."""
    if not versions.at_least(release, PODMAN_CDI):
        raise HostError(f"Podman {release}'s API drops CDI device requests (5.5 and later "
                        "pass them on), so the probe's container would get no GPU",
                        hint="upgrade Podman to 5.5 or later, or verify with --gpus none")


def _check_names(names: list[str], spec_dirs: list[str], found: list[str] | None) -> None:
    if not spec_dirs:
        raise HostError(f"--gpus {','.join(names)} asks for CDI devices, and CDI is off in "
                        "this Docker daemon (docker info lists no CDI spec folders)",
                        hint=CDI_OFF_HINT)
    if found is None:
        return      # the engine names what it cannot resolve when the container starts
    for name in names:
        if name in found:
            continue
        kind, device = name.split("=", 1)
        has = sorted(f.split("=", 1)[1] for f in found if f.split("=", 1)[0] == kind)
        where = ", ".join(spec_dirs)
        if not has:
            raise HostError(f"no CDI spec on this host names {kind} devices (the engine "
                            f"looked in {where})",
                            hint=GENERATE if kind.startswith("nvidia.com/") else
                            f"add the spec for {kind} to one of {where}")
        raise HostError(f"the host's CDI spec for {kind} has no device {device!r}: it has "
                        f"{', '.join(has)}",
                        hint="ask for one of those, or, if the GPUs changed since the spec "
                             "was written, " + GENERATE)
