"""Where two images that should be the same differ: the first layer whose digest differs,
and the files that differ within it (type, mode, owner, size, time, content), read from the
engine's `docker save` stream of each, so that the leak can be found."""
from __future__ import annotations

import datetime as dt
import hashlib
import io
import tarfile
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Iterator

if TYPE_CHECKING:
    from ..engine import Engine


@dataclass(frozen=True)
class Entry:
    """One file of a layer as its tar header and content say."""
    kind: str           # file, dir, symlink, hardlink, whiteout, other
    mode: int
    owner: str          # uid:gid
    size: int
    mtime: int
    target: str         # a link's target
    sha256: str         # a file's content ("" for others)


def first_difference(ours: Iterable[str], theirs: Iterable[str]) -> int | None:
    """The index of the first layer (by diff id) that differs, None when all match; a chain
    longer on one side differs where the other ends."""
    a, b = list(ours), list(theirs)
    for index, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return index
    return None if len(a) == len(b) else min(len(a), len(b))


class _Chunks(io.RawIOBase):
    """An iterator of byte chunks as a readable stream (what tarfile's stream mode reads)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks, self.rest = chunks, b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self.rest:
            self.rest = next(self.chunks, b"")
            if not self.rest:
                return 0
        size = min(len(buffer), len(self.rest))
        buffer[:size], self.rest = self.rest[:size], self.rest[size:]
        return size


class _Hashing(io.RawIOBase):
    """Reads through `raw`, hashing what passes (a layer's digest, while it is parsed)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw, self.digest = raw, hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.raw.read(len(buffer))
        buffer[:len(data)] = data
        self.digest.update(data)
        return len(data)


def _entry(layer: tarfile.TarFile, member: tarfile.TarInfo) -> Entry:
    name = member.name.rsplit("/", 1)[-1]
    kind = ("whiteout" if name.startswith(".wh.") else "file" if member.isfile() else
            "dir" if member.isdir() else "symlink" if member.issym() else
            "hardlink" if member.islnk() else "other")
    content = ""
    if member.isfile():
        digest, stream = hashlib.sha256(), layer.extractfile(member)
        for block in iter(lambda: stream.read(1 << 20), b"") if stream else ():
            digest.update(block)
        content = digest.hexdigest()
    return Entry(kind, member.mode, f"{member.uid}:{member.gid}", member.size,
                 int(member.mtime), member.linkname, content)


def layer_entries(engine: Engine, image: str, diff_id: str) -> dict[str, Entry]:
    """The files of the layer `diff_id` of `image`, read from the engine's save stream (the
    layer tarballs are hashed as they pass: their digest is the diff id)."""
    wanted = diff_id.removeprefix("sha256:")
    outer = tarfile.open(fileobj=io.BufferedReader(_Chunks(engine.save(image)), 1 << 20),
                         mode="r|")
    for member in outer:
        blob = member.name.startswith("blobs/sha256/")
        if not member.isfile() or (blob and not member.name.endswith(wanted)) \
                or not (blob or member.name.endswith("layer.tar")):
            continue
        stream = outer.extractfile(member)
        if stream is None:
            continue
        hashing = _Hashing(stream)
        entries: dict[str, Entry] = {}
        try:
            with tarfile.open(fileobj=io.BufferedReader(hashing, 1 << 20), mode="r|") as layer:
                for inner in layer:
                    entries[inner.name.lstrip("./") or "/"] = _entry(layer, inner)
        except tarfile.ReadError:
            continue                             # a blob that is not a layer (a config)
        while hashing.read(1 << 20):             # the padding after the tar's end
            pass
        if hashing.digest.hexdigest() == wanted:
            return entries
    raise LookupError(f"{image} has no layer {diff_id} in its saved form")


def _when(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def differences(ours: dict[str, Entry], theirs: dict[str, Entry]) -> list[str]:
    """One line per file that differs, in path order: what differs, ours then theirs."""
    lines = []
    for path in sorted(set(ours) | set(theirs)):
        a, b = ours.get(path), theirs.get(path)
        if a == b:
            continue
        if a is None or b is None:
            lines.append(f"{path}: only in the {'rebuilt' if a is None else 'original'} image")
            continue
        fields: list[tuple[str, Callable[[Any], str], object, object]] = [
            ("", str, a.kind, b.kind), ("mode", "{:o}".format, a.mode, b.mode),
            ("owner", str, a.owner, b.owner), ("size", str, a.size, b.size),
            ("time", _when, a.mtime, b.mtime), ("link", str, a.target, b.target)]
        what = [f"{name} {show(x)} vs {show(y)}".lstrip() for name, show, x, y in fields if x != y]
        if a.sha256 != b.sha256 and a.size == b.size:
            what.append("content")
        kind = " (a whiteout: a file a lower layer holds, removed)" if a.kind == "whiteout" else ""
        lines.append(f"{path}: {', '.join(what)}{kind}")
    return lines
