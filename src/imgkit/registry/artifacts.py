"""The verdict and the SBOM as OCI artifacts attached to an image digest.

Registries without the referrers API (distribution 2.8 among them) find an artifact by
tag: cosign's convention `sha256-<hex>.<kind>` in the image's own repository. The
manifest also names its `subject`, so registries that do index referrers see the link.
Made from bytes alone; attached and read back through the registry client.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import RegistryError
from .client import OCI_MANIFEST, Manifest, RegistryClient, sha256_of

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


def verdict_artifact(verdict: Mapping[str, object], subject: Manifest, *, gpu_unverified_allowed: bool,
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

def make_verdict(document: Mapping[str, object], subject: Manifest) -> Artifact:
    """The artifact for `document` (a recorded verdict) about the image manifest `subject`;
    a verdict without the GPU checks says it was accepted without them."""
    return verdict_artifact(document, subject,
                            gpu_unverified_allowed=not bool(document.get("gpu_checked")),
                            created=_now())


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def make_sbom(document: bytes, subject: Manifest) -> Artifact:
    return sbom_artifact(document, subject, created=_now())


def read_sbom(client: RegistryClient, repository: str, digest: str) -> Artifact | None:
    return fetch(client, repository, digest, "sbom", SBOM_TYPE)


def attach(client: RegistryClient, repository: str, artifact: Artifact) -> None:
    for blob in artifact.blobs:
        client.put_blob(repository, blob)
    client.put_manifest(repository, artifact.tag, artifact.manifest, OCI_MANIFEST)


def fetch(client: RegistryClient, repository: str, digest: str, kind: str,
          artifact_type: str) -> Artifact | None:
    """The artifact of `kind` attached to `repository@digest`, or None when there is none.
    One about another digest, or of another type, is an error."""
    tag = artifact_tag(digest, kind)
    manifest = client.manifest(repository, tag)
    if manifest is None:
        return None
    document = json.loads(manifest.body)
    subject = (document.get("subject") or {}).get("digest")
    layers = [layer for layer in document.get("layers") or []
              if layer.get("mediaType") == artifact_type]
    if document.get("artifactType") != artifact_type or subject != digest or len(layers) != 1:
        raise RegistryError(client.endpoint.registry, f"{client.endpoint.registry}/{repository}:"
                            f"{tag} is not an imgkit {kind} about that digest")
    config = client.blob(repository, document["config"]["digest"])
    return Artifact(tag=tag, manifest=manifest.body,
                    blobs=(config, client.blob(repository, layers[0]["digest"])))


def read_verdict(client: RegistryClient, repository: str,
                 digest: str) -> tuple[Artifact, object] | None:
    """The verdict attached to `repository@digest` and what it says (JSON, as read: its
    schema is verify/attestation.py's), or None when there is none. An artifact about
    another digest, or whose blobs do not match, is an error."""
    artifact = fetch(client, repository, digest, "verdict", VERDICT_TYPE)
    if artifact is None:
        return None
    body = json.loads(artifact.blobs[1])
    if not isinstance(body, dict) or body.get("subject") != digest:
        raise RegistryError(client.endpoint.registry, f"{client.endpoint.registry}/{repository}: "
                            "the verdict names another image")
    return artifact, body


def copy_tag(source: RegistryClient, source_repository: str, target: RegistryClient,
             target_repository: str, tag: str) -> bool:
    """Copy the small manifest under `tag` (cosign's `sha256-<hex>.att`, its signed
    attestations) with its blobs, byte for byte; False when the source has none."""
    manifest = source.manifest(source_repository, tag)
    if manifest is None:
        return False
    document = json.loads(manifest.body)
    for blob in [document.get("config") or {}, *(document.get("layers") or [])]:
        if isinstance(blob, dict) and blob.get("digest"):
            target.put_blob(target_repository, source.blob(source_repository, blob["digest"]))
    target.put_manifest(target_repository, tag, manifest.body, manifest.media_type)
    return True
