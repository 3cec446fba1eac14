"""Candidates: what `imgkit publish --candidate --json FILE` wrote, read back by later CI jobs
(often on other machines) to find a staged image by the tag the matrix gives it.

A directory of such files (one per build job) is the pipeline's hand-over: a child build
pulls its parents from it, a verify job the image to judge, the promote job the digest to
copy. Only digests are taken from it, never tags: what is used is what was staged.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from .. import platforms
from ..errors import UsageError
from .reference import DIGEST, RemoteRef, remote_ref

Key = TypeVar("Key", str, tuple[str, str])
STAGED = ("candidate", "published", "reused")   # statuses whose digest is in a registry


@dataclass(frozen=True)
class Candidate:
    image: str        # the local tag the matrix gives it
    image_id: str     # the image that was pushed (its manifest's config)
    repository: str   # HOST/REPO where it is staged
    digest: str
    platforms: tuple[str, ...] = ()   # an index (image_id ""): the platforms of its images

    @property
    def reference(self) -> str:
        return f"{self.repository}@{self.digest}"

    @property
    def remote(self) -> RemoteRef:
        ref = remote_ref(self.reference)
        if ref is None:
            raise UsageError(f"candidate {self.image}: {self.repository} names no registry")
        return ref


def _entries(path: Path) -> list[dict[str, object]]:
    try:
        document = json.loads(path.read_text())
        entries = document["published"]
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise TypeError
        return entries
    except (OSError, ValueError, KeyError, TypeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not the JSON of `imgkit publish --json`"
        raise UsageError(f"candidates file {path}: {why}") from None


def _candidate(path: Path, entry: dict[str, object]) -> Candidate | None:
    fields = {k: entry.get(k) for k in ("image", "image_id", "destination", "digest", "status")}
    if fields["status"] not in STAGED:
        return None
    named = entry.get("platforms") or []
    if not isinstance(named, list) or not all(isinstance(p, str) for p in named):
        raise UsageError(f"candidates file {path}: entry for {fields['image']!r} has bad platforms")
    # an index names images and is none itself: its image id is empty
    filled = [k for k in fields if not (named and k == "image_id")]
    if not isinstance(fields["image_id"], str) or not all(
            isinstance(fields[k], str) and fields[k] for k in filled) or not DIGEST.match(
            str(fields["digest"])) or remote_ref(f"{fields['destination']}@{fields['digest']}") is None:
        raise UsageError(f"candidates file {path}: entry for {fields['image']!r} has no usable "
                         "destination and digest")
    return Candidate(image=str(fields["image"]), image_id="" if named else str(fields["image_id"]),
                     repository=str(fields["destination"]), digest=str(fields["digest"]),
                     platforms=tuple(named))


@dataclass(frozen=True)
class Staged:
    """A hand-over directory read: each image (or index) by the matrix's tag, and each
    platform's image of a multi-platform tag by (tag, platform): staged with its index, or
    alone by a job on a runner of that platform (`publish --candidate --platform`)."""
    images: dict[str, Candidate]
    per_platform: dict[tuple[str, str], Candidate]


def _add(found: dict[Key, Candidate], key: Key, candidate: Candidate, directory: Path) -> None:
    known = found.setdefault(key, candidate)
    # an image by its id; an index (no id of its own) by its digest
    if (known.image_id or known.digest) != (candidate.image_id or candidate.digest):
        named = key if isinstance(key, str) else f"{key[0]} ({key[1]})"
        raise UsageError(f"--candidates {directory}: {named} was staged as two images "
                         f"({known.image_id or known.digest} and "
                         f"{candidate.image_id or candidate.digest})")


def load_staged(directory: Path) -> Staged:
    """Every staged image in the directory's *.json files (the first destination of each);
    the same tag (or tag and platform) staged as two different images is an error."""
    if not directory.is_dir():
        raise UsageError(f"--candidates {directory}: not a directory",
                         hint="the folder the build jobs' `imgkit publish --candidate --json` "
                              "files were gathered in")
    images: dict[str, Candidate] = {}
    per_platform: dict[tuple[str, str], Candidate] = {}
    for path in sorted(directory.glob("*.json")):
        for entry in _entries(path):
            candidate = _candidate(path, entry)
            if candidate is None:
                continue
            platform, index = entry.get("platform"), entry.get("index")
            if not platform:
                _add(images, candidate.image, candidate, directory)
            elif isinstance(platform, str) and isinstance(index, str) and index:
                _add(per_platform, (index, platform), candidate, directory)
    return Staged(images, per_platform)


def load(directory: Path) -> dict[str, Candidate]:
    """Every staged image or index, by the matrix's tag."""
    return load_staged(directory).images


def lookup(directory: Path, image: str, platform: str | None = None) -> Candidate:
    """The staged image (or index) of `image`; else, of a tag whose platforms were staged
    alone, that platform's image (`platform`, default: this host's)."""
    staged = load_staged(directory)
    if image in staged.images:
        return staged.images[image]
    alone = staged.per_platform.get((image, platform or platforms.host()))
    if alone is not None:
        return alone
    held = sorted({*staged.images, *(f"{t} ({p})" for t, p in staged.per_platform)})
    raise UsageError(f"{image} is not among the candidates in {directory}"
                     + (f" for {platform}" if platform else ""),
                     hint="staged: " + (", ".join(held) or "nothing"))
