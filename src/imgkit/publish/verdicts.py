"""Verdicts in registries: attach one next to an image digest, and read one back (what a
promotion on another machine trusts)."""
from __future__ import annotations

import json
import time
from typing import Any

from ..errors import RegistryError
from .attest import VERDICT_TYPE, Artifact, artifact_tag, verdict_artifact
from .registry import OCI_MANIFEST, Manifest, RegistryClient


def make(document: dict[str, Any], subject: Manifest) -> Artifact:
    """The artifact for `document` (a recorded verdict) about the image manifest `subject`;
    a verdict without the GPU checks says it was accepted without them."""
    return verdict_artifact(document, subject,
                            gpu_unverified_allowed=not bool(document.get("gpu_checked")),
                            created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


def attach(client: RegistryClient, repository: str, artifact: Artifact) -> None:
    for blob in artifact.blobs:
        client.put_blob(repository, blob)
    client.put_manifest(repository, artifact.tag, artifact.manifest, OCI_MANIFEST)


def read(client: RegistryClient, repository: str, digest: str) -> tuple[Artifact, dict[str, Any]] | None:
    """The verdict attached to `repository@digest` and what it says, or None when there is
    none. An artifact about another digest, or whose blobs do not match, is an error."""
    manifest = client.manifest(repository, artifact_tag(digest, "verdict"))
    if manifest is None:
        return None
    where = f"{client.endpoint.registry}/{repository}"
    document = json.loads(manifest.body)
    subject = (document.get("subject") or {}).get("digest")
    layers = [layer for layer in document.get("layers") or [] if layer.get("mediaType") == VERDICT_TYPE]
    if document.get("artifactType") != VERDICT_TYPE or subject != digest or len(layers) != 1:
        raise RegistryError(client.endpoint.registry, f"{where}:{artifact_tag(digest, 'verdict')} "
                            "is not an imgkit verdict about that digest")
    config = client.blob(repository, document["config"]["digest"])
    verdict = client.blob(repository, layers[0]["digest"])
    body = json.loads(verdict)
    if body.get("subject") != digest:
        raise RegistryError(client.endpoint.registry, f"{where}: the verdict names another image")
    return Artifact(tag=artifact_tag(digest, "verdict"), manifest=manifest.body,
                    blobs=(config, verdict)), body
