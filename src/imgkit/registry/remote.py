"""Images named by registry reference: `verify HOST/REPO@sha256:...` pulls exactly that
digest (a tag is resolved to its digest first, so it cannot move meanwhile) and, with
`imgkit attest`, attaches the verdict next to it."""
from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from .. import platforms
from ..engine import Engine, ImageConfig, ImageInfo, docker_credentials
from ..errors import EXIT_FAILED, HostError, RegistryError, UsageError
from ..options import Signer
from . import artifacts, cosign, index
from .client import Endpoint, Manifest, RegistryClient, classify_engine_error, endpoint_of, retrying
from .reference import RemoteRef


def _client(engine: Engine, registry: str, retry_for: float) -> RegistryClient:
    return RegistryClient(endpoint_of(engine, registry), retry_for=retry_for)


def fetch(engine: Engine, remote: RemoteRef, *, retry_for: float,
          platform: str | None = None) -> tuple[RemoteRef, ImageInfo]:
    """Resolve the reference to a digest and pull exactly that; the pulled image's id must be
    the manifest's config. An index resolves to its image of `platform` (default: this
    host's), whose digest is the one judged and attested. Returns the reference with its
    digest and local name, and what the engine says of the pulled image."""
    engine.refuse_containerd_store(f"pulling a registry image ({remote})")
    with _client(engine, remote.registry, retry_for) as client:
        manifest = _image_manifest(client, remote, platform)
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
    return replace(remote, digest=manifest.digest, local_ref=local), info


def fetch_or_host_fault(engine: Engine, remote: RemoteRef, *, retry_for: float,
                        platform: str | None = None,
                        hint: str = "the registry kept failing; try again later",
                        ) -> tuple[RemoteRef, ImageInfo]:
    """`fetch`, with a registry that kept failing (not the image) said as the host's fault:
    exit 3, and nothing judged or scanned."""
    try:
        return fetch(engine, remote, retry_for=retry_for, platform=platform)
    except RegistryError as exc:
        if exc.exit_code != EXIT_FAILED:
            raise
        raise HostError(f"cannot fetch {remote}: {exc.message}", hint=exc.hint or hint) from None


def offline_endpoint(registry: str) -> Endpoint:
    """`registry` with no engine to ask (a judge in a pod): Docker's default policy (plain
    HTTP on loopback only) and the credentials Docker's config file holds for it."""
    host = registry.rsplit(":", 1)[0] if not registry.startswith("[") else registry
    loopback = host in ("localhost", "[::1]") or host.startswith("127.")
    return Endpoint(registry, not loopback, docker_credentials(registry))


def facts(remote: RemoteRef, *, retry_for: float,
          platform: str | None = None) -> tuple[RemoteRef, ImageInfo]:
    """What the registry says of the image, pulling nothing and asking no engine: its config
    (labels, environment, user, platform) and id, the image of `platform` in an index."""
    import json
    with RegistryClient(offline_endpoint(remote.registry), retry_for=retry_for) as client:
        manifest = _image_manifest(client, remote, platform)
        config_digest = manifest.config_digest or ""
        document = json.loads(manifest.body)
        config = json.loads(client.blob(remote.repository, config_digest))
    by_digest = f"{remote.registry}/{remote.repository}@{manifest.digest}"
    settings = ImageConfig.of(config.get("config") or {})    # the OCI config spells it as the engine
    info = ImageInfo(
        id=config_digest, tags=(), labels=dict(settings.labels),
        layers=tuple((config.get("rootfs") or {}).get("diff_ids") or ()),
        size=sum(int(layer.get("size") or 0) for layer in document.get("layers") or []),
        user=settings.user, env=settings.env,
        platform="/".join(str(config[k]) for k in ("os", "architecture", "variant") if config.get(k)),
        digests=(by_digest,))
    return replace(remote, digest=manifest.digest, local_ref=by_digest), info


def _image_manifest(client: RegistryClient, remote: RemoteRef, platform: str | None) -> Manifest:
    manifest = client.manifest(remote.repository, remote.reference)
    if manifest is None:
        raise UsageError(f"{remote} is not in the registry",
                         hint=f"check the name, or list the tags: skopeo list-tags "
                              f"docker://{remote.registry}/{remote.repository}")
    if index.is_index(manifest):
        entry = index.pick(manifest, platform or platforms.host(), str(remote))
        found = client.manifest(remote.repository, entry.digest)
        if found is None:
            raise RegistryError(remote.registry, f"{remote} names {entry.digest} for "
                                f"{entry.platform}, which the registry does not hold")
        return found
    return manifest


def attach_verdict(engine: Engine, remote: RemoteRef, image_id: str, document: Mapping[str, object], *,
                   retry_for: float) -> str:
    """Attach `document` (the verdict verify recorded for `image_id`) next to the digest it
    was pulled by, if that digest still holds `image_id`; returns the artifact's tag."""
    with _client(engine, remote.registry, retry_for) as client:
        manifest = client.manifest(remote.repository, remote.digest)
        if manifest is None or manifest.config_digest != image_id:
            raise RegistryError(remote.registry, f"{remote.repository}@{remote.digest} no longer "
                                f"holds the image that was verified ({image_id})")
        artifact = artifacts.make_verdict(document, manifest)
        artifacts.attach(client, remote.repository, artifact)
    return artifact.tag


def attach_sbom(engine: Engine, remote: RemoteRef, document: bytes, *, retry_for: float) -> str:
    """Attach the image's SBOM next to the digest it was pulled by; returns the tag."""
    with _client(engine, remote.registry, retry_for) as client:
        manifest = client.manifest(remote.repository, remote.digest)
        if manifest is None:
            raise RegistryError(remote.registry, f"{remote.repository}@{remote.digest} is gone")
        artifact = artifacts.make_sbom(document, manifest)
        artifacts.attach(client, remote.repository, artifact)
    return artifact.tag


def sign(engine: Engine, remote: RemoteRef, predicate: bytes, predicate_type: str,
         signer: Signer) -> str:
    """Sign `predicate` as an in-toto statement about the digest `remote` was pulled by and
    attach it (cosign's `sha256-<hex>.att`); returns that tag."""
    reference = f"{remote.registry}/{remote.repository}@{remote.digest}"
    cosign.attest(endpoint_of(engine, remote.registry), reference, predicate, predicate_type,
                  signer)
    return artifacts.artifact_tag(remote.digest or "", "att")
