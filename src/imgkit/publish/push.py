"""Publish verified images: gate, push once, copy by digest, attach the verdict, move the
human tags last.

1. Gate: every image needs a passing verdict for the id its tag points at now (tickets),
   and, where the project names an advisory database, a passing scan of it (scan/record);
   one refusal and nothing is pushed.
2. Preflight: every destination accepts our credentials for every repository (exit 3 fast).
3. Per image: the engine pushes the gated image *id* (tagged only for the push, and only
   under its id tag) to the first destination (with `--compression zstd`, imgkit uploads
   it itself: zstd.py); the digest comes from the push and is read back, and the
   manifest's config must be the verified image id. Every further
   destination gets a registry-to-registry copy of that digest (skopeo), read back too.
   The verdict artifact goes next to the digest everywhere.
4. Only when every image reached every destination do the human tags (the local tag and
   the matrix's aliases) move, each to the digest that was read back.

An image the matrix makes for several platforms is one tag: each platform's image (the
engine keeps another platform's as TAG-ARCH) is gated on its own verdict and pushed by
digest as above, then an OCI image index naming them all is put under its own id tag in
every destination (the same bytes, so the same digest), and the human tags move to it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Literal

from ..engine import Engine
from ..errors import Inconsistent, RegistryAuthError, RegistryError, RegistryUnreachable
from ..options import PublishOptions
from ..registry import artifacts, cosign, index, skopeo
from ..registry.artifacts import Artifact
from ..registry.client import (
    OCI_INDEX,
    Manifest,
    RegistryClient,
    classify_engine_error,
    endpoint_of,
    retrying,
    sha256_of,
)
from ..registry.destination import Destination, destination_ref, split_ref
from ..scan import record as scans
from ..verify import attestation, tickets
from . import zstd

Status = Literal["published", "candidate", "reused", "would publish", "refused", "held", "failed", "pushed"]


@dataclass(frozen=True)
class Wanted:
    """One local image to publish, with the extra tags the matrix gives it."""
    ref: str
    aliases: tuple[str, ...] = ()
    platform: str = ""          # set for one platform's image of a multi-platform tag ...
    index: str = ""             # ... which is that tag, pointing at their index
    alone: bool = False         # staged without the index (`imgkit merge` puts it later)


@dataclass(frozen=True)
class _Index:
    """The index of one multi-platform tag, as put in every destination."""
    tag: str
    aliases: tuple[str, ...]
    platforms: tuple[str, ...]
    manifest: Manifest


@dataclass(frozen=True)
class Published:
    image: str                           # the local reference
    image_id: str
    destination: str
    status: Status
    digest: str = ""
    tags: tuple[str, ...] = ()           # tags that point at the digest there
    verdict: str = ""                    # the verdict artifact's tag there
    sbom: str = ""                       # the SBOM artifact's tag there
    detail: str = ""
    gpu_unverified_allowed: bool = False
    platforms: tuple[str, ...] = ()      # an index: the platforms of the images it names
    platform: str = ""                   # one platform's image of an index (found through it)
    index: str = ""                      # ... the multi-platform tag whose index names it

    @property
    def reference(self) -> str:
        return f"{self.destination}@{self.digest}" if self.digest else ""


@dataclass
class _Pushed:
    wanted: Wanted
    image_id: str
    ticket: tickets.Ticket | None       # its recorded verdict (a candidate may have none)
    manifest: Manifest | None = None
    verdict: Artifact | None = None
    signed_verdict: bytes = b""            # the same document, as the predicate cosign signs
    sbom: bytes = b""                   # its CycloneDX document, made before any push
    sbom_artifact: Artifact | None = None
    done: list[Destination] = field(default_factory=list)

    def pushed(self) -> Manifest:
        """The manifest read back after the first push (every later step needs it)."""
        if self.manifest is None:
            raise Inconsistent(f"{self.wanted.ref}: used before its push was read back")
        return self.manifest


def id_tag(image_id: str) -> str:
    """The immutable tag an image is pushed under: its id, never moved to another image."""
    return f"id-{image_id.split(':', 1)[1][:16]}"


class Publisher:
    def __init__(self, engine: Engine, destinations: list[Destination], options: PublishOptions,
                 log: Callable[[str], None] = lambda _: None,
                 progress: Callable[[str, str, int, int], None] = lambda *_: None,
                 describe: Callable[[str, str], bytes] | None = None,
                 provenance: Callable[[str, str], bytes | None] | None = None) -> None:
        self.engine = engine
        self.destinations = destinations
        self.options = options
        self.log = log
        self.progress = progress      # (image, layer, bytes sent, layer size)
        self.describe = describe      # (ref, image id) -> its SBOM, attached next to the verdict
        self.provenance = provenance  # (ref, image id) -> its SLSA provenance, or None
        self.endpoints = {d.registry: endpoint_of(engine, d.registry) for d in destinations}
        self.clients = {r: RegistryClient(e, retry_for=options.retry_for)
                        for r, e in self.endpoints.items()}

    def close(self) -> None:
        for client in self.clients.values():
            client.close()

    # -- the whole flow ---------------------------------------------------------------
    def run(self, wanted: list[Wanted]) -> list[Published]:
        gated, refused = self.gate(wanted)
        if refused:  # one refusal and nothing is pushed
            return refused + [self._result(i, d, "held", detail="not pushed: another image was "
                                           "refused") for i in gated for d in self.destinations]
        if self.options.dry_run:
            return [self._planned(item) for item in gated]
        self.preflight(gated)
        if self.describe is not None and not self.options.candidate:
            for item in gated:                 # an image that cannot be described: nothing pushed
                self.log(f"reading what {item.wanted.ref} holds (SBOM)")
                item.sbom = self.describe(item.wanted.ref, item.image_id)
        failures: dict[str, str] = {}
        for item in gated:
            try:
                self.push(item)
            except (RegistryAuthError, RegistryUnreachable):
                raise                  # exit 3: the next image could fare no better
            except RegistryError as exc:
                failures[item.wanted.ref] = exc.message
        if failures:  # no human tag moves unless every image reached every destination
            return [self._unfinished(item, d, failures.get(item.wanted.ref))
                    for item in gated for d in self.destinations]
        try:
            indexes = self.put_indexes(gated)
        except RegistryError as exc:
            return [self._unfinished(item, d, exc.message) for item in gated
                    for d in self.destinations]
        if self.options.candidate:   # staged by digest: no human tag, the index by its id tag
            return [self._result(i, d, "candidate", detail=i.wanted.platform) for i in gated
                    for d in self.destinations] + [self._index_result(made, d, "candidate")
                                                   for made in indexes for d in self.destinations]
        results = [self._result(i, d, "published",
                                tags=() if i.wanted.index else self.move_tags(i, d),
                                detail=i.wanted.platform) for i in gated for d in self.destinations]
        return results + [self._index_result(made, d, "published", tags=self._point(
            d, made.tag, made.aliases, made.manifest)) for made in indexes for d in self.destinations]

    def gate(self, wanted: list[Wanted]) -> tuple[list[_Pushed], list[Published]]:
        """The images that may be published, and a refusal for each that may not."""
        gated: list[_Pushed] = []
        refused: list[Published] = []
        for item in wanted:
            # bad input, as for verify: exit 2 before anything is pushed
            info = self.engine.known(item.ref, "build it (imgkit build) or pull it first; "
                                     "publish takes local images by name:tag")
            ticket = tickets.lookup(info.id)
            why = None if self.options.candidate else tickets.refusal(
                item.ref, info.id, ticket, allow_gpu_unverified=self.options.allow_gpu_unverified,
                earlier=tickets.latest_for(item.ref))
            if why is None and self.options.require_scan and not self.options.candidate:
                why = scans.refusal(item.ref, info.id, scans.lookup(info.id))
            if why is not None:
                refused += self._refuse(item, info.id, why)
            else:
                gated.append(_Pushed(item, info.id, ticket))
        return gated, refused

    def preflight(self, gated: list[_Pushed]) -> None:
        """Every destination must take our credentials before anything is pushed."""
        for destination in self.destinations:
            for repository in dict.fromkeys(destination.repository(p.wanted.ref) for p in gated):
                self.clients[destination.registry].check_push(repository)

    # -- one image --------------------------------------------------------------------
    def push(self, item: _Pushed) -> None:
        first, *rest = self.destinations
        self._engine_push(item, first)
        for destination in rest:
            self._copy(item, first, destination)
        if not self.options.candidate:
            for destination in self.destinations:
                self._attach(item, destination)
        if self.options.signer.signs and self.provenance is not None:
            made = self.provenance(item.wanted.index or item.wanted.ref, item.image_id) or b""
            for destination in self.destinations if made else []:
                reference = (f"{destination.registry}/{destination.repository(item.wanted.ref)}"
                             f"@{item.pushed().digest}")
                cosign.attest(self.endpoints[destination.registry], reference, made,
                              cosign.PROVENANCE_TYPE, self.options.signer)
                self.log(f"signed its build provenance (SLSA v1) at {reference}")

    def _engine_push(self, item: _Pushed, destination: Destination) -> None:
        tag = id_tag(item.image_id)
        ref = destination_ref(destination, item.wanted.ref, tag)
        repository = destination.repository(item.wanted.ref)
        client = self.clients[destination.registry]
        if self.options.compression == "zstd":
            self.log(f"pushing {item.wanted.ref} ({item.image_id[:19]}) to {ref}, zstd layers")
            digest = zstd.push(self.engine, client, repository, tag, item.image_id,
                               lambda layer, sent, size: self.progress(item.wanted.ref, layer, sent, size),
                               say=self.log)
        else:
            self.log(f"pushing {item.wanted.ref} ({item.image_id[:19]}) to {ref}")
            self.engine.tag(item.image_id, ref)        # the gated id, whatever the tag says now
            # the engine's own tries of a layer count against --retry-for too
            until = time.monotonic() + self.options.retry_for
            try:
                digest = retrying(lambda: self._push_once(ref, item.wanted.ref, destination.registry,
                                                          until),
                                  self.options.retry_for)
            finally:
                self.engine.untag(ref)                 # nothing of the push stays tagged locally
        manifest = client.manifest(repository, digest)
        if manifest is None or client.digest(repository, tag) != digest:
            raise RegistryError(destination.registry, f"{repository}@{digest} is not in the "
                                "registry after a push that reported it")
        if manifest.config_digest != item.image_id:
            raise RegistryError(destination.registry, f"{repository}@{digest} holds the image "
                                f"{manifest.config_digest}, not the verified {item.image_id}")
        item.manifest = manifest
        item.done.append(destination)

    def _push_once(self, ref: str, image: str, registry: str, until: float) -> str:
        credentials = self.endpoints[registry].credentials

        def on_progress(layer: str, sent: int, size: int) -> None:
            self.progress(image, layer, sent, size)
        return classify_engine_error(lambda: self.engine.push(ref, credentials, on_progress, until),
                                     f"the push of {ref}")

    def _copy(self, item: _Pushed, source: Destination, destination: Destination) -> None:
        manifest = item.pushed()
        digest = manifest.digest
        tag = id_tag(item.image_id)
        source_ref = f"{source.registry}/{source.repository(item.wanted.ref)}@{digest}"
        target = destination_ref(destination, item.wanted.ref, tag)
        self.log(f"copying {source_ref} to {target}")
        skopeo.copy(self.endpoints[source.registry], source_ref,
                    self.endpoints[destination.registry], target, retry_for=self.options.retry_for)
        repository = destination.repository(item.wanted.ref)
        read = self.clients[destination.registry].digest(repository, tag)
        if read != digest:
            raise RegistryError(destination.registry, f"{repository}:{tag} is {read} after the "
                                f"copy, not {digest}: digests must agree everywhere")
        item.done.append(destination)

    def _attach(self, item: _Pushed, destination: Destination) -> None:
        manifest = item.pushed()
        if item.verdict is None:  # made once: the same bytes, the same digest everywhere
            document = tickets.document(item.image_id)
            if document is None:                # the gate read it a moment ago
                raise Inconsistent(f"{item.wanted.ref}: its recorded verdict went missing")
            item.verdict = artifacts.make_verdict(document.model_dump(mode="json"), manifest)
            item.signed_verdict = attestation.predicate(document) if self.options.signer.signs else b""
        repository = destination.repository(item.wanted.ref)
        artifacts.attach(self.clients[destination.registry], repository, item.verdict)
        self.log(f"attached the verdict to {destination.registry}/{repository}@"
                 f"{manifest.digest} ({item.verdict.tag})")
        if item.sbom:
            if item.sbom_artifact is None:
                item.sbom_artifact = artifacts.make_sbom(item.sbom, manifest)
            artifacts.attach(self.clients[destination.registry], repository, item.sbom_artifact)
            self.log(f"attached the SBOM ({item.sbom_artifact.tag})")
        signer = self.options.signer
        if signer.signs:          # the same verdict and SBOM, signed (cosign's .att)
            reference = f"{destination.registry}/{repository}@{manifest.digest}"
            endpoint = self.endpoints[destination.registry]
            cosign.attest(endpoint, reference, item.signed_verdict, cosign.VERDICT_TYPE, signer)
            if item.sbom:
                cosign.attest(endpoint, reference, item.sbom, cosign.SBOM_TYPE, signer)
            scan = scans.vuln_predicate(item.image_id)
            if scan is not None:      # the scan travels too, where one was kept for this id
                cosign.attest(endpoint, reference, scan, cosign.VULN_TYPE, signer)
            self.log(f"signed the verdict{' and the SBOM' if item.sbom else ''}"
                     f"{' and the scan' if scan is not None else ''} "
                     f"({artifacts.artifact_tag(manifest.digest, 'att')})")

    def put_indexes(self, gated: list[_Pushed]) -> list[_Index]:
        """Each multi-platform tag's index of the images just pushed, under its own id tag
        in every destination (read back: the same digest everywhere)."""
        groups: dict[str, list[_Pushed]] = {}
        for item in gated:
            if item.wanted.index and not item.wanted.alone:
                groups.setdefault(item.wanted.index, []).append(item)
        made = []
        for tag, items in groups.items():
            body = index.make([(item.pushed(), item.wanted.platform) for item in items])
            manifest = Manifest(sha256_of(body), OCI_INDEX, body)
            for destination in self.destinations:
                repository = destination.repository(tag)
                self.clients[destination.registry].put_manifest(
                    repository, id_tag(manifest.digest), body, OCI_INDEX)
                self.log(f"put the index of {tag} ({', '.join(i.wanted.platform for i in items)}) "
                         f"at {destination.registry}/{repository}@{manifest.digest}")
            made.append(_Index(tag, items[0].wanted.aliases,
                               tuple(i.wanted.platform for i in items), manifest))
        return made

    def _index_result(self, made: _Index, destination: Destination, status: Status, *,
                      tags: tuple[str, ...] = ()) -> Published:
        return Published(image=made.tag, image_id="", status=status,
                         destination=f"{destination.registry}/{destination.repository(made.tag)}",
                         digest=made.manifest.digest, tags=(id_tag(made.manifest.digest), *tags),
                         detail=f"index of {', '.join(made.platforms)}", platforms=made.platforms)

    def move_tags(self, item: _Pushed, destination: Destination) -> tuple[str, ...]:
        """Point the image's own tag and its aliases at the digest, by putting the very
        manifest that was read back (so the digest cannot change)."""
        return self._point(destination, item.wanted.ref, item.wanted.aliases, item.pushed())

    def _point(self, destination: Destination, ref: str, aliases: tuple[str, ...],
               manifest: Manifest) -> tuple[str, ...]:
        """Put `manifest` (an image's, or an index's) under `ref`'s tag and its aliases."""
        repository = destination.repository(ref)
        tags = (split_ref(ref)[1], *aliases)
        for tag in tags:
            self.clients[destination.registry].put_manifest(repository, tag, manifest.body,
                                                            manifest.media_type)
        self.log(f"tagged {destination.registry}/{repository}@{manifest.digest} as "
                 f"{', '.join(tags)}")
        return tags

    # -- results ----------------------------------------------------------------------
    def _result(self, item: _Pushed, destination: Destination, status: Status, *,
                tags: tuple[str, ...] = (), detail: str = "") -> Published:
        reached = destination in item.done and item.manifest is not None
        return Published(
            image=item.wanted.ref, image_id=item.image_id,
            destination=f"{destination.registry}/{destination.repository(item.wanted.ref)}",
            status=status, digest=item.manifest.digest if reached and item.manifest else "",
            tags=(id_tag(item.image_id), *tags) if reached else (),
            verdict=item.verdict.tag if item.verdict is not None and reached else "",
            sbom=item.sbom_artifact.tag if item.sbom_artifact is not None and reached else "",
            detail=detail, gpu_unverified_allowed=self._gpu_unverified(item),
            platform=item.wanted.platform if item.wanted.index else "",
            index=item.wanted.index)

    def _unfinished(self, item: _Pushed, destination: Destination, error: str | None) -> Published:
        if destination in item.done:
            return self._result(item, destination, "pushed", detail="human tags not moved: "
                                + ("a later step failed" if error else "another image failed"))
        first_missing = next(d for d in self.destinations if d not in item.done)
        return self._result(item, destination, "failed",
                            detail=str(error) if destination == first_missing else "not reached")

    def _gpu_unverified(self, item: _Pushed) -> bool:
        return item.ticket is not None and not item.ticket.gpu_checked

    def _planned(self, item: _Pushed) -> Published:
        tags = () if self.options.candidate else (split_ref(item.wanted.ref)[1], *item.wanted.aliases)
        return Published(image=item.wanted.ref, image_id=item.image_id,
                         destination=", ".join(str(d) for d in self.destinations),
                         status="would publish", tags=(id_tag(item.image_id), *tags),
                         gpu_unverified_allowed=self._gpu_unverified(item))

    def _refuse(self, item: Wanted, image_id: str, why: str) -> list[Published]:
        return [Published(image=item.ref, image_id=image_id, destination=str(d), status="refused",
                          detail=why) for d in self.destinations]
