"""Promotion: copy a candidate from a staging registry to production repositories, by
digest only, and only when a passing verdict is attached to that very digest in the source.

The staging flow: CPU runners build and `publish --candidate` to staging; GPU runners
`attest STAGING/REPO@sha256:...`; this copies what passed, verdict included, then
moves the human tags.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from ..engine import Engine
from ..errors import RegistryError, UsageError
from ..options import PublishOptions
from ..registry import artifacts, index, skopeo
from ..registry.artifacts import Artifact, artifact_tag
from ..registry.client import Manifest, RegistryClient, endpoint_of
from ..registry.destination import NAMESPACE, REGISTRY
from ..registry.reference import is_registry_host, upper_case
from ..scan import attested
from ..verify import signed, tickets
from ..verify.attestation import record_of
from .push import Published, id_tag

DIGEST_REF = re.compile(r"^(?P<registry>[^/]+)/(?P<repository>[^@:]+)@(?P<digest>sha256:[0-9a-f]{64})$")
TAG = re.compile(r"^[\w][\w.-]{0,127}$")


@dataclass(frozen=True)
class Repository:
    registry: str
    path: str

    def __str__(self) -> str:
        return f"{self.registry}/{self.path}"


def parse_source(text: str) -> tuple[Repository, str]:
    """HOST/REPO@sha256:... -> (repository, digest); a tag is refused: tags move."""
    match = DIGEST_REF.match(text.strip())
    why = upper_case(match["repository"]) if match and is_registry_host(match["registry"]) else None
    if why:
        raise UsageError(f"{text!r}: {why}")
    if not match or not is_registry_host(match["registry"]) or not NAMESPACE.match(match["repository"]):
        raise UsageError(f"{text!r}: promotion copies by digest only",
                         hint="name the source as HOST/REPOSITORY@sha256:<64 hex digits>, e.g. the "
                              "digest `imgkit publish --candidate` printed")
    return Repository(match["registry"], match["repository"]), match["digest"]


def parse_target(text: str) -> Repository:
    registry, _, path = text.strip().rstrip("/").partition("/")
    if not (REGISTRY.match(registry) and is_registry_host(registry) and path and NAMESPACE.match(path)):
        raise UsageError(f"--to {text!r}: " + (upper_case(path) or "expected HOST/REPOSITORY, e.g. "
                                               "registry.example.com/ml/paddle"))
    return Repository(registry, path)


def check_tags(tags: list[str]) -> None:
    for tag in tags:
        if not TAG.match(tag):
            raise UsageError(f"--tag {tag!r} is not a valid tag")


class Promoter:
    def __init__(self, engine: Engine, options: PublishOptions,
                 log: Callable[[str], None] = lambda _: None) -> None:
        self.engine = engine
        self.options = options
        self.log = log
        self.clients: dict[str, RegistryClient] = {}

    def client(self, registry: str) -> RegistryClient:
        if registry not in self.clients:
            self.clients[registry] = RegistryClient(endpoint_of(self.engine, registry),
                                                    retry_for=self.options.retry_for)
        return self.clients[registry]

    def close(self) -> None:
        for client in self.clients.values():
            client.close()

    def run(self, source: Repository, digest: str, targets: list[Repository],
            tags: list[str]) -> list[Published]:
        reference = f"{source}@{digest}"
        manifest = self.client(source.registry).manifest(source.path, digest)
        if manifest is None:
            raise UsageError(f"{reference} is not in the registry",
                             hint="promote the digest `imgkit publish --candidate` printed")
        if index.is_index(manifest):
            return self.run_index(source, manifest, targets, tags)
        image_id = manifest.config_digest or ""
        artifact, why = self.gate(source, digest, image_id)
        if why is not None:
            return [Published(image=reference, image_id=image_id, destination=str(t),
                              status="refused", detail=str(why)) for t in targets]
        for target in targets:                     # credentials everywhere before any copy
            self.client(target.registry).check_push(target.path)
        sbom = artifacts.read_sbom(self.client(source.registry), source.path, digest)
        for target in targets:
            self.copy(source, digest, target, id_tag(image_id))
            self.attachments(source, digest, target, artifact, sbom)
        for target in targets:                     # human tags last, once every copy agreed
            self.move_tags(target, manifest, tags)
        return [Published(image=reference, image_id=image_id, destination=str(t),
                          status="published", digest=digest, tags=(id_tag(image_id), *tags),
                          verdict=artifact.tag if artifact else artifact_tag(digest, "att"),
                          sbom=sbom.tag if sbom else "") for t in targets]

    def run_index(self, source: Repository, manifest: Manifest, targets: list[Repository],
                  tags: list[str]) -> list[Published]:
        """An index moves whole or not at all: every platform's image needs its own passing
        verdict; then the index and every image it names are copied (skopeo --all, digests
        preserved), each image's attestations along, and the tags move to the index."""
        reference = f"{source}@{manifest.digest}"
        gated: list[tuple[index.Entry, str, Artifact | None]] = []
        refusals = []
        for entry in index.entries(manifest):
            child = self.client(source.registry).manifest(source.path, entry.digest)
            image_id = (child.config_digest if child else None) or ""
            artifact, why = self.gate(source, entry.digest, image_id)
            if why is not None:
                refusals.append(f"{entry.platform}: {why}")
            gated.append((entry, image_id, artifact))
        if refusals or not gated:
            why = "; ".join(refusals) or "it names no image of any platform"
            return [Published(image=reference, image_id="", destination=str(t), status="refused",
                              detail=f"not every platform may be promoted: {why}") for t in targets]
        for target in targets:
            self.client(target.registry).check_push(target.path)
        sboms = {entry.digest: artifacts.read_sbom(self.client(source.registry), source.path,
                                                   entry.digest) for entry, _, _ in gated}
        for target in targets:
            self.copy(source, manifest.digest, target, id_tag(manifest.digest),
                      every_platform=True)
            for entry, _, artifact in gated:
                self.attachments(source, entry.digest, target, artifact, sboms[entry.digest])
        for target in targets:
            self.move_tags(target, manifest, tags)
        platforms_named = ", ".join(e.platform for e, _, _ in gated)
        return [Published(image=reference, image_id="", destination=str(t), status="published",
                          digest=manifest.digest, tags=(id_tag(manifest.digest), *tags),
                          detail=f"index of {platforms_named}") for t in targets] + [
                Published(image=f"{source}@{entry.digest}", image_id=image_id, destination=str(t),
                          status="published", digest=entry.digest, detail=entry.platform,
                          verdict=artifact.tag if artifact else artifact_tag(entry.digest, "att"))
                for entry, image_id, artifact in gated for t in targets]

    def attachments(self, source: Repository, digest: str, target: Repository,
                    artifact: Artifact | None, sbom: Artifact | None) -> None:
        """The verdict, the SBOM (when the image has one) and the signed attestations of
        `digest` copied next to it in `target`."""
        if artifact is not None:
            artifacts.attach(self.client(target.registry), target.path, artifact)
        if sbom is not None:               # the SBOM travels with the image when it has one
            artifacts.attach(self.client(target.registry), target.path, sbom)
        # the signed attestations too, so the production copy verifies on its own
        artifacts.copy_tag(self.client(source.registry), source.path,
                           self.client(target.registry), target.path, artifact_tag(digest, "att"))

    def move_tags(self, target: Repository, manifest: Manifest, tags: list[str]) -> None:
        for tag in tags:
            self.client(target.registry).put_manifest(target.path, tag, manifest.body,
                                                      manifest.media_type)

    def gate(self, source: Repository, digest: str,
             image_id: str) -> tuple[Artifact | None, str | None]:
        """Whether `source@digest` may be promoted: (its unsigned verdict artifact, if any,
        None) when it may, else (None, why). With a trusted key or identity only a signed
        verdict counts; without one, only --allow-unsigned lets an unsigned one count."""
        reference = f"{source}@{digest}"
        client = self.client(source.registry)
        trust = self.options.trust
        if trust.configured:
            why = signed.check(client, source.path, digest, image_id, trust,
                               allow_gpu_unverified=self.options.allow_gpu_unverified,
                               max_age=self.options.max_age,
                               require_reproduced=self.options.require_reproduced)
            if why is None and self.options.require_scan:
                why = attested.check(client, source.path, digest, image_id, trust)
            if why is not None:
                return None, why
            try:   # the unsigned copy travels along when it is sound; the signed one decided
                found = artifacts.read_verdict(client, source.path, digest)
            except RegistryError:
                found = None
            return (found[0] if found else None), None
        if self.options.require_scan:    # a scan travels signed only: nothing unsigned to read
            return None, (f"{reference}: this project gates on known vulnerabilities "
                          "(vulnerability_db), and only a signed scan can be checked: pass "
                          "--trusted-key cosign.pub (or --certificate-identity and "
                          "--certificate-oidc-issuer)")
        if not self.options.allow_unsigned:
            return None, (f"{reference}: no trusted key or identity to check its verdict's "
                          "signature: pass --trusted-key cosign.pub (or --certificate-identity and "
                          "--certificate-oidc-issuer), or --allow-unsigned to accept a verdict "
                          f"anyone who can push to {source.registry} could have forged")
        found = artifacts.read_verdict(client, source.path, digest)
        if found is None:
            return None, (f"{reference} has no verdict attached: run `imgkit attest "
                          f"{reference}` on a GPU host")
        artifact, verdict = found
        why = refusal(verdict, reference, image_id, self.options.allow_gpu_unverified,
                      self.options.require_reproduced)
        return (None, why) if why is not None else (artifact, None)

    def copy(self, source: Repository, digest: str, target: Repository, tag: str,
             every_platform: bool = False) -> None:
        self.log(f"copying {source}@{digest} to {target}:{tag}"
                 + (" with every platform's image" if every_platform else ""))
        skopeo.copy(self.client(source.registry).endpoint, f"{source}@{digest}",
                    self.client(target.registry).endpoint, f"{target}:{tag}",
                    retry_for=self.options.retry_for, every_platform=every_platform)
        read = self.client(target.registry).digest(target.path, tag)
        if read != digest:
            raise RegistryError(target.registry, f"{target}:{tag} is {read} after the copy, "
                                f"not {digest}: digests must agree everywhere")


def refusal(verdict: object, reference: str, image_id: str,
            allow_gpu_unverified: bool, require_reproduced: bool = False) -> str | None:
    """Why an attached verdict (JSON, as read) does not allow promotion, or None when it
    does: it must be a verdict that judged this very image, and pass the same gate as a
    local ticket (and, with `require_reproduced`, record that the image was reproduced)."""
    record = record_of(verdict)
    if record is not None and record.image_id != image_id:
        return f"the attached verdict judged {record.image_id}, not this image ({image_id})"
    why = tickets.refusal(reference, image_id, tickets.ticket_of(record, image_id),
                          allow_gpu_unverified=allow_gpu_unverified)
    if why is None and require_reproduced:
        why = signed.unreproduced(reference, record)
    return why
