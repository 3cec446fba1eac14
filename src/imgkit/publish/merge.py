"""`imgkit merge`: the index of each multi-platform image, made from the images each
platform's own build job staged alone (`imgkit publish --candidate --platform P`, on a
runner of that platform), and put next to them in the staging repository under its id tag.

What it writes is what `publish --candidate` writes for an index, so verify and promote take
a merged index as they take one a single job staged. No engine work and no image bytes:
each platform's manifest is read from the registry and the index names it by digest.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ..console import stderr_line
from ..engine import connect
from ..errors import UsageError
from ..matrix.load import load_plan
from ..registry import index
from ..registry.candidates import Candidate, Staged, load_staged
from ..registry.client import OCI_INDEX, Manifest, RegistryClient, endpoint_of, sha256_of
from ..selection import Selection
from .command import summarized
from .push import Published, id_tag


@dataclass(frozen=True)
class Merge:
    """One index to put: each platform's staged image of the tag."""
    tag: str
    registry: str
    repository: str                          # where every child is staged, in `registry`
    children: tuple[tuple[str, Candidate], ...]   # (platform, its staged image)

    @property
    def where(self) -> str:
        return f"{self.registry}/{self.repository}"


def to_merge(selection: Selection, tags: list[str], staged: Staged) -> list[Merge]:
    """The multi-platform images named (default: the selection's final ones) with each
    platform's staged image; a platform not staged, or staged elsewhere, is bad input."""
    plan = load_plan(selection)
    by_tag = {t.tag: t for t in plan.targets}
    out = []
    for tag in dict.fromkeys(tags) or plan.finals:
        if tag not in by_tag:
            raise UsageError(f"{tag} is not an image of the matrix selection",
                             hint="name the matrix's tags, as the build jobs staged them")
        made_for = by_tag[tag].platforms
        if len(made_for) == 1:        # one platform: its image is the tag, no index
            if tags:
                raise UsageError(f"{tag} is made for {made_for[0]} alone: its tag names that "
                                 "image, there is no index to merge")
            continue
        missing = [p for p in made_for if (tag, p) not in staged.per_platform]
        if missing:
            held = ", ".join(p for t, p in staged.per_platform if t == tag) or "none"
            raise UsageError(f"{tag}: no staged {', '.join(missing)} image to merge "
                             f"(staged: {held})", hint="the build job of each platform stages "
                             "its images with `imgkit publish --candidate --platform P`")
        children = tuple((p, staged.per_platform[(tag, p)]) for p in made_for)
        repositories = {c.repository for _, c in children}
        if len(repositories) > 1:
            raise UsageError(f"{tag}: its platforms were staged in different repositories "
                             f"({', '.join(sorted(repositories))}); an index names images of "
                             "its own repository", hint="stage every platform to the same --to")
        remote = children[0][1].remote
        out.append(Merge(tag, remote.registry, remote.repository, children))
    return out


def merge(selection: Selection, *, tags: list[str], candidates: Path,
          json_file: Path | None = None, retry_for: float) -> int:
    """Put each index; returns the exit code. Nothing is put unless every image of every
    index is staged where the candidates say."""
    started = time.monotonic()
    merges = to_merge(selection, tags, load_staged(candidates))        # bad input: exit 2
    if not merges:
        raise UsageError("nothing to merge: the selection has no image of several platforms")
    engine = connect()                                                 # no engine: exit 3
    results = []
    for registry in dict.fromkeys(m.registry for m in merges):
        with RegistryClient(endpoint_of(engine, registry), retry_for=retry_for) as client:
            mine = [m for m in merges if m.registry == registry]
            read = {m.tag: [(_child(client, m, c), p) for p, c in m.children] for m in mine}
            for item in mine:                                          # all read: now put
                results.append(_put(client, item, read[item.tag]))
    return summarized(results, started, json_file)


def _child(client: RegistryClient, item: Merge, candidate: Candidate) -> Manifest:
    manifest = client.manifest(item.repository, candidate.digest)
    if manifest is None or manifest.config_digest != candidate.image_id:
        raise UsageError(f"{item.tag}: {candidate.reference} does not hold the image that was "
                         f"staged ({candidate.image_id})")
    return manifest


def _put(client: RegistryClient, item: Merge, children: list[tuple[Manifest, str]]) -> Published:
    body = index.make(children)
    digest = sha256_of(body)
    client.put_manifest(item.repository, id_tag(digest), body, OCI_INDEX)
    held = ", ".join(p for _, p in sorted(children, key=lambda c: c[1]))
    stderr_line(f"put the index of {item.tag} ({held}) at {item.where}@{digest}")
    return Published(image=item.tag, image_id="", destination=item.where,
                     status="candidate", digest=digest, tags=(id_tag(digest),),
                     detail=f"index of {held}", platforms=tuple(sorted(p for _, p in children)))
