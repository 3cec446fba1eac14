"""The verdict and the SBOM as OCI artifacts attached to an image digest.

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
SBOM_TYPE = "application/vnd.cyclonedx+json"
EMPTY_TYPE = "application/vnd.oci.empty.v1+json"
EMPTY = b"{}"
ANNOTATION = "dev.imgkit.verdict"


@dataclass(frozen=True)
class Artifact:
    tag: str                           # sha256-<hex>.verdict or .sbom
    manifest: bytes
    blobs: tuple[bytes, ...]           # config and layer, uploaded before the manifest

    @property
    def digest(self) -> str:
        return sha256_of(self.manifest)


def artifact_tag(digest: str, kind: str) -> str:
    return digest.replace(":", "-") + f".{kind}"


def _canonical(document: Any) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def _artifact(kind: str, artifact_type: str, layer: bytes, title: str, subject: Manifest,
              annotations: dict[str, str]) -> Artifact:
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": artifact_type,
        "config": {"mediaType": EMPTY_TYPE, "digest": sha256_of(EMPTY), "size": len(EMPTY)},
        "layers": [{"mediaType": artifact_type, "digest": sha256_of(layer), "size": len(layer),
                    "annotations": {"org.opencontainers.image.title": title}}],
        "subject": {"mediaType": subject.media_type, "digest": subject.digest,
                    "size": len(subject.body)},
        "annotations": annotations,
    }
    return Artifact(tag=artifact_tag(subject.digest, kind), manifest=_canonical(manifest),
                    blobs=(EMPTY, layer))


def verdict_artifact(verdict: dict[str, Any], subject: Manifest, *, gpu_unverified_allowed: bool,
                     created: str) -> Artifact:
    """The artifact holding `verdict` (the ticket document verify recorded), for the image
    manifest `subject`. Built once and pushed as the same bytes everywhere."""
    layer = _canonical({**verdict, "subject": subject.digest,
                        "gpu_unverified_allowed": gpu_unverified_allowed})
    return _artifact("verdict", VERDICT_TYPE, layer, "verdict.json", subject, {
        "org.opencontainers.image.created": created,
        f"{ANNOTATION}.image-id": str(verdict.get("image_id", "")),
        f"{ANNOTATION}.passed": str(bool(verdict.get("passed"))).lower(),
        f"{ANNOTATION}.gpu-checked": str(bool(verdict.get("gpu_checked"))).lower(),
        f"{ANNOTATION}.gpu-unverified-allowed": str(gpu_unverified_allowed).lower(),
    })


def sbom_artifact(document: bytes, subject: Manifest, *, created: str) -> Artifact:
    """The image's CycloneDX SBOM as an artifact next to its digest (`sha256-<hex>.sbom`)."""
    return _artifact("sbom", SBOM_TYPE, document, "sbom.cdx.json", subject,
                     {"org.opencontainers.image.created": created})
