"""Registry-to-registry copies by digest, with skopeo (`--preserve-digests`): the engine
may recompress layers on every push, so a second push could give a second digest.

skopeo gets credentials from a temporary auth file imgkit writes (mode 0600, removed
afterwards) from Docker's config, never from argv; TLS follows the engine's policy.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import HostError, RegistryAuthError, RegistryError, RegistryUnreachable
from .client import CERTS_D, Endpoint, retrying, unreachable

AUTH_WORDS = ("unauthorized", "authentication required", "denied", "status 401", "status 403")
STDERR_KEPT = 400


def auth_file(directory: Path, endpoints: list[Endpoint]) -> Path:
    auths = {e.registry: {"auth": base64.b64encode(f"{e.credentials[0]}:{e.credentials[1]}"
                                                   .encode()).decode()}
             for e in endpoints if e.credentials is not None}
    path = directory / "auth.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"auths": auths}, out)
    return path


def _tls(side: str, endpoint: Endpoint) -> list[str]:
    flags = [f"--{side}-tls-verify={'true' if endpoint.secure else 'false'}"]
    if (CERTS_D / endpoint.registry).is_dir():
        flags.append(f"--{side}-cert-dir={CERTS_D / endpoint.registry}")
    return flags


def copy(source: Endpoint, source_ref: str, destination: Endpoint, destination_ref: str, *,
         retry_for: float, every_platform: bool = False) -> None:
    """Copy `source_ref` (host/repo@sha256:...) to `destination_ref` (host/repo:tag),
    digests preserved; retried while the failure looks transient. `every_platform`: an
    index with every image it names (`--all`), not only the host's."""
    if shutil.which("skopeo") is None:
        raise HostError("skopeo is not installed: it copies images between registries by digest",
                        hint="install it (Debian: apt-get install skopeo) or publish to one "
                             "destination")
    with tempfile.TemporaryDirectory(prefix="imgkit-skopeo-") as tmp:
        authfile = auth_file(Path(tmp), [source, destination])
        command = ["skopeo", "copy", "--quiet", "--preserve-digests", "--retry-times=0",
                   *(["--all"] if every_platform else []),
                   f"--authfile={authfile}", *_tls("src", source), *_tls("dest", destination),
                   f"docker://{source_ref}", f"docker://{destination_ref}"]
        retrying(lambda: _run(command, destination.registry), retry_for)


def _run(command: list[str], registry: str) -> None:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, stderr = process.communicate()
    except BaseException:  # Ctrl-C included: no copy outlives imgkit
        process.kill()
        process.wait()
        raise
    if process.returncode == 0:
        return
    said = " ".join(stderr.split())[-STDERR_KEPT:]
    if any(word in said.lower() for word in AUTH_WORDS):
        raise RegistryAuthError(registry, f"skopeo copy was refused: {said}")
    reason = unreachable(said)
    if reason is not None:
        raise RegistryUnreachable(registry, f"{reason} (skopeo copy: {said})")
    raise RegistryError(registry, f"skopeo copy failed: {said}", transient=True)
