"""The root of every image: a Debian base, pulled when a registry answers, otherwise made
locally from the distro mirror (debootstrap + docker import), so that a machine with only
package mirrors can build the whole matrix."""
from __future__ import annotations

import glob
import os
import re
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

from .engine import Engine
from .errors import HostError, UsageError

SOURCE_LABEL = "org.imgkit.base.source"
REGISTRY_PROBE = ("registry-1.docker.io", 443)


def host_mirror(sources: list[str] | None = None) -> str | None:
    """The Debian mirror the host's apt already uses (never a hard-coded host)."""
    if sources is None:
        sources = sorted(glob.glob("/etc/apt/sources.list.d/*.sources")
                         + glob.glob("/etc/apt/sources.list.d/*.list")
                         + ["/etc/apt/sources.list"])
    for path in sources:
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        for uri in re.findall(r"(?m)^\s*(?:deb\s+(?:\[[^\]]*\]\s+)?|URIs:\s*)(https?://\S+)", text):
            if "debian" in uri and "security" not in uri:
                return uri.rstrip("/")
    return None


def registry_reachable(timeout: float = 3.0) -> bool:
    try:
        with socket.create_connection(REGISTRY_PROBE, timeout=timeout):
            return True
    except OSError:
        return False


def ensure_base(engine: Engine, ref: str, os_name: str, *, source: str = "auto",
                mirror: str | None = None, log: Callable[[str], None] = print) -> str:
    """Make sure `ref` exists; returns how it was obtained ('present', 'pulled', 'debootstrap')."""
    if engine.image(ref) is not None:
        return "present"
    if source not in ("auto", "pull", "debootstrap"):
        raise UsageError(f"unknown base source {source!r}", hint="auto, pull or debootstrap")
    if source in ("auto", "pull") and registry_reachable():
        upstream = f"debian:{os_name}-slim"
        log(f"pulling {upstream} for {ref}")
        if engine.pull(upstream):
            info = engine.image(upstream)
            assert info is not None
            engine.tag(info.id, ref)
            return "pulled"
        if source == "pull":
            raise HostError(f"could not pull {upstream}")
    elif source == "pull":
        raise HostError("no image registry is reachable", hint="use --base-source debootstrap")
    make_base(engine, ref, os_name, mirror or os.environ.get("IMGKIT_MIRROR") or host_mirror(),
              log)
    return "debootstrap"


def make_base(engine: Engine, ref: str, os_name: str, mirror: str | None,
              log: Callable[[str], None]) -> None:
    if mirror is None:
        raise HostError("no Debian mirror found in the host's apt sources",
                        hint="pass --mirror URL or set IMGKIT_MIRROR")
    if shutil.which("debootstrap") is None:
        raise HostError("debootstrap is not installed; it makes the base image when no "
                        "registry is reachable", hint="apt-get install debootstrap")
    if os.geteuid() != 0:
        raise HostError("making the base image with debootstrap needs root",
                        hint="run once as root, or provide the base image: "
                             f"docker tag <a debian:{os_name} image> {ref}")
    with tempfile.TemporaryDirectory(prefix="imgkit-rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        log(f"making {ref} with debootstrap from {mirror} (about 30 s)")
        proc = subprocess.run(["debootstrap", "--variant=minbase", os_name, str(root), mirror],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-10:])
            raise HostError(f"debootstrap {os_name} from {mirror} failed:\n{tail}")
        # Keep images small and apt quiet: no recommends, no caches.
        (root / "etc/apt/apt.conf.d/90imgkit").write_text(
            'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n')
        shutil.rmtree(root / "var/cache/apt/archives", ignore_errors=True)
        (root / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
        tarball = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(root), "--numeric-owner", "-cf", str(tarball), "."],
                       check=True)
        engine.import_rootfs(tarball, ref, [
            f'LABEL {SOURCE_LABEL}="debootstrap {os_name} {mirror}"',
            'ENV LANG=C.UTF-8', 'CMD ["/bin/bash"]'])
