"""Images named by registry reference: `verify HOST/REPO@sha256:...` pulls exactly that
digest (a tag is resolved to its digest first, so it cannot move meanwhile) and, with
--attest, attaches the verdict next to it."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..engine import Engine
from ..errors import RegistryError, UsageError
from ..verify import tickets
from . import verdicts
from .destination import is_registry_host
from .registry import RegistryClient, classify_engine_error, endpoint_of, retrying

DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class RemoteRef:
    registry: str
    repository: str
    reference: str          # the tag or digest the user named
    digest: str = ""        # what it resolved to
    local_ref: str = ""     # how the engine knows the pulled image

    @property
    def by_digest(self) -> bool:
        return bool(DIGEST.match(self.reference))


def remote_ref(text: str) -> RemoteRef | None:
    """HOST/REPO@sha256:... or HOST/REPO:TAG as a registry reference; None for a local name."""
    name, at, digest = text.partition("@")
    if at:
        if not DIGEST.match(digest):
            raise UsageError(f"{text!r}: a digest is sha256: and 64 hex digits")
        reference = digest
    else:
        last = name.rsplit("/", 1)[-1]
        name, reference = (name.rsplit(":", 1) if ":" in last else (name, "latest"))
    first, _, path = name.partition("/")
    if not path or not is_registry_host(first):
        if at:
            raise UsageError(f"{text!r}: name the registry, e.g. registry.example.com/ml/paddle@...")
        return None
    return RemoteRef(registry=first, repository=path, reference=reference)


def _client(engine: Engine, registry: str, retry_for: float) -> RegistryClient:
    return RegistryClient(endpoint_of(engine, registry), retry_for=retry_for)


def fetch(engine: Engine, remote: RemoteRef, *, retry_for: float) -> RemoteRef:
    """Resolve the reference to a digest and pull exactly that; the pulled image's id must be
    the manifest's config."""
    with _client(engine, remote.registry, retry_for) as client:
        manifest = client.manifest(remote.repository, remote.reference)
        if manifest is None:
            raise UsageError(f"{remote.registry}/{remote.repository}@{remote.reference} is not in "
                             "the registry")
    by_digest = f"{remote.registry}/{remote.repository}@{manifest.digest}"
    credentials = client.endpoint.credentials
    retrying(lambda: classify_engine_error(lambda: engine.pull_checked(by_digest, credentials),
                                           f"the pull of {by_digest}"), retry_for)
    info = engine.image(by_digest)
    if info is None or info.id != manifest.config_digest:
        raise RegistryError(remote.registry, f"the pull of {by_digest} gave another image "
                            f"({info.id if info else 'none'}, not {manifest.config_digest})")
    local = by_digest
    if not remote.by_digest:  # as `docker pull HOST/REPO:TAG` would name it
        local = f"{remote.registry}/{remote.repository}:{remote.reference}"
        engine.tag(info.id, local)
    return replace(remote, digest=manifest.digest, local_ref=local)


def attach_verdict(engine: Engine, remote: RemoteRef, image_id: str, *, retry_for: float) -> str:
    """Attach the verdict recorded for `image_id` next to the digest it was pulled by;
    returns the artifact's tag."""
    document = tickets.document(image_id)
    if document is None:
        raise RegistryError(remote.registry, f"no recorded verdict for {image_id}")
    with _client(engine, remote.registry, retry_for) as client:
        manifest = client.manifest(remote.repository, remote.digest)
        if manifest is None or manifest.config_digest != image_id:
            raise RegistryError(remote.registry, f"{remote.repository}@{remote.digest} no longer "
                                f"holds the image that was verified ({image_id})")
        artifact = verdicts.make(document, manifest)
        verdicts.attach(client, remote.repository, artifact)
    return artifact.tag


def attach_sbom(engine: Engine, remote: RemoteRef, document: bytes, *, retry_for: float) -> str:
    """Attach the image's SBOM next to the digest it was pulled by; returns the tag."""
    with _client(engine, remote.registry, retry_for) as client:
        manifest = client.manifest(remote.repository, remote.digest)
        if manifest is None:
            raise RegistryError(remote.registry, f"{remote.repository}@{remote.digest} is gone")
        artifact = verdicts.make_sbom(document, manifest)
        verdicts.attach(client, remote.repository, artifact)
    return artifact.tag
