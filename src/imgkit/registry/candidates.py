"""Candidates: what `imgkit publish --candidate --json FILE` wrote, read back by later CI jobs
(often on other machines) to find a staged image by the tag the matrix gives it.

A directory of such files (one per build job) is the pipeline's hand-over: a child build
pulls its parents from it, a verify job the image to judge, the promote job the digest to
copy. Only digests are taken from it, never tags: what is used is what was staged.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

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


class Entry(BaseModel):
    """One row of the `published` list `imgkit publish --json` writes (publish/push.py's
    Published), as a later job reads it: loosely, so that a row of another status or an
    older imgkit's is skipped or refused by what it lacks, not by a field it adds."""
    model_config = ConfigDict(extra="ignore")
    image: Optional[str] = None
    image_id: Optional[str] = None
    destination: Optional[str] = None
    digest: Optional[str] = None
    status: Optional[str] = None
    platforms: Optional[list[str]] = None   # an index: the platforms of its images
    platform: Optional[str] = None          # one platform's image staged alone ...
    index: Optional[str] = None             # ... for the multi-platform tag it belongs to


class CandidatesFile(BaseModel):
    published: list[dict[str, object]]


def _rows(path: Path) -> list[dict[str, object]]:
    try:
        return CandidatesFile.model_validate_json(path.read_bytes()).published
    except OSError as exc:
        raise UsageError(f"candidates file {path}: {exc.strerror}") from None
    except ValidationError:
        raise UsageError(f"candidates file {path}: not the JSON of `imgkit publish --json`") from None


def _candidate(path: Path, row: dict[str, object]) -> tuple[Entry, Candidate] | None:
    """The staged image a row names (None: a row of another status), or a usage error
    naming the row's image and what it lacks."""
    if row.get("status") not in STAGED:
        return None
    named = row.get("image")
    try:
        entry = Entry.model_validate(row)
    except ValidationError as exc:
        if any(error["loc"][:1] == ("platforms",) for error in exc.errors()):
            raise UsageError(f"candidates file {path}: entry for {named!r} has bad platforms") from None
        entry = Entry()                                    # refused below, as lacking fields
    listed = entry.platforms or []
    # an index names images and is none itself: its image id is empty
    needed = [entry.image, entry.destination, entry.digest] + ([] if listed else [entry.image_id])
    if entry.image_id is None or not all(needed) or not DIGEST.match(entry.digest or "") or \
            remote_ref(f"{entry.destination}@{entry.digest}") is None:
        raise UsageError(f"candidates file {path}: entry for {named!r} has no usable "
                         "destination and digest")
    return entry, Candidate(image=str(entry.image), image_id="" if listed else entry.image_id,
                            repository=str(entry.destination), digest=str(entry.digest),
                            platforms=tuple(listed))


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
        for row in _rows(path):
            found = _candidate(path, row)
            if found is None:
                continue
            entry, candidate = found
            if not entry.platform:
                _add(images, candidate.image, candidate, directory)
            elif entry.index:
                _add(per_platform, (entry.index, entry.platform), candidate, directory)
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
