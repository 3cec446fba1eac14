"""Image indexes: one tag for the images of several platforms (an OCI image index, or
Docker's manifest list when a registry serves one), each platform's image by its digest.

imgkit makes OCI indexes of the per-platform images it pushed (publish) and reads any index
(verify picks a platform's image, promote gates on every platform's verdict). Entries
without a real platform (BuildKit's attestation manifests, `unknown/unknown`) are not
images to run. Pure: bytes in, bytes out.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from .. import platforms
from ..errors import UsageError
from .client import DOCKER_LIST, OCI_INDEX, Manifest


@dataclass(frozen=True)
class Entry:
    digest: str
    media_type: str
    size: int
    platform: str             # os/architecture, the variant dropped


def is_index(manifest: Manifest) -> bool:
    if manifest.media_type in (OCI_INDEX, DOCKER_LIST):
        return True
    body = json.loads(manifest.body)
    return isinstance(body, dict) and "manifests" in body and "config" not in body


def entries(manifest: Manifest) -> list[Entry]:
    """The index's images, one per platform (attestation entries left out)."""
    out = []
    for item in json.loads(manifest.body).get("manifests") or []:
        found = item.get("platform") or {}
        platform = f"{found.get('os', '')}/{found.get('architecture', '')}"
        if platform in ("/", "unknown/unknown"):
            continue
        out.append(Entry(str(item["digest"]), str(item.get("mediaType", "")),
                         int(item.get("size", 0)), platforms.os_arch(platform)))
    return out


def pick(manifest: Manifest, platform: str, reference: str) -> Entry:
    """The entry of `platform`; an index without one is bad input naming what it holds."""
    found = entries(manifest)
    for entry in found:
        if entry.platform == platform:
            return entry
    held = ", ".join(e.platform for e in found) or "no image"
    raise UsageError(f"{reference} is an index of {held}: it has no {platform} image",
                     hint=f"name one with --platform ({held})")


def make(children: list[tuple[Manifest, str]]) -> bytes:
    """An OCI image index of (each platform's manifest, its platform), platforms in a
    stable order, so the same images always give the same digest."""
    manifests = []
    for manifest, platform in sorted(children, key=lambda c: c[1]):
        os_name, architecture = platforms.os_arch(platform).split("/")
        manifests.append({"mediaType": manifest.media_type, "digest": manifest.digest,
                          "size": len(manifest.body),
                          "platform": {"architecture": architecture, "os": os_name}})
    return json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests},
                      indent=2).encode()
