"""Verdicts (and SBOMs) in registries: attach one next to an image digest, and read one
back (what a promotion on another machine trusts, and copies along)."""
from __future__ import annotations

import json
import time
from typing import Any

from ..errors import RegistryError
from .attest import SBOM_TYPE, VERDICT_TYPE, Artifact, artifact_tag, sbom_artifact, verdict_artifact
from .registry import OCI_MANIFEST, Manifest, RegistryClient


def make(document: dict[str, Any], subject: Manifest) -> Artifact:
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


def read(client: RegistryClient, repository: str, digest: str) -> tuple[Artifact, dict[str, Any]] | None:
    """The verdict attached to `repository@digest` and what it says, or None when there is
    none. An artifact about another digest, or whose blobs do not match, is an error."""
    artifact = fetch(client, repository, digest, "verdict", VERDICT_TYPE)
    if artifact is None:
        return None
    body = json.loads(artifact.blobs[1])
    if body.get("subject") != digest:
        raise RegistryError(client.endpoint.registry, f"{client.endpoint.registry}/{repository}: "
                            "the verdict names another image")
    return artifact, body
