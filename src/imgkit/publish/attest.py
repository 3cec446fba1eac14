"""The verdict as an OCI artifact attached to an image digest.

Registries without the referrers API (distribution 2.8 among them) find an artifact by
tag: cosign's convention `sha256-<hex>.<kind>` in the image's own repository. The
manifest also names its `subject`, so registries that do index referrers see the link.
Pure: bytes in, bytes out; pushing is the registry client's job.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .registry import OCI_MANIFEST, Manifest, sha256_of

VERDICT_TYPE = "application/vnd.imgkit.verdict.v1+json"
EMPTY_TYPE = "application/vnd.oci.empty.v1+json"
EMPTY = b"{}"
ANNOTATION = "dev.imgkit.verdict"


@dataclass(frozen=True)
class Artifact:
    tag: str                           # sha256-<hex>.verdict
    manifest: bytes
    blobs: tuple[bytes, ...]           # config and layer, uploaded before the manifest

    @property
    def digest(self) -> str:
        return sha256_of(self.manifest)


def artifact_tag(digest: str, kind: str) -> str:
    return digest.replace(":", "-") + f".{kind}"


def _canonical(document: Any) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def verdict_artifact(verdict: dict[str, Any], subject: Manifest, *, gpu_unverified_allowed: bool,
                     created: str) -> Artifact:
    """The artifact holding `verdict` (the ticket document verify recorded), for the image
    manifest `subject`. Built once and pushed as the same bytes everywhere."""
    layer = _canonical({**verdict, "subject": subject.digest,
                        "gpu_unverified_allowed": gpu_unverified_allowed})
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": VERDICT_TYPE,
        "config": {"mediaType": EMPTY_TYPE, "digest": sha256_of(EMPTY), "size": len(EMPTY)},
        "layers": [{"mediaType": VERDICT_TYPE, "digest": sha256_of(layer), "size": len(layer),
                    "annotations": {"org.opencontainers.image.title": "verdict.json"}}],
        "subject": {"mediaType": subject.media_type, "digest": subject.digest,
                    "size": len(subject.body)},
        "annotations": {
            "org.opencontainers.image.created": created,
            f"{ANNOTATION}.image-id": str(verdict.get("image_id", "")),
            f"{ANNOTATION}.passed": str(bool(verdict.get("passed"))).lower(),
            f"{ANNOTATION}.gpu-checked": str(bool(verdict.get("gpu_checked"))).lower(),
            f"{ANNOTATION}.gpu-unverified-allowed": str(gpu_unverified_allowed).lower(),
        },
    }
    return Artifact(tag=artifact_tag(subject.digest, "verdict"), manifest=_canonical(manifest),
                    blobs=(EMPTY, layer))
