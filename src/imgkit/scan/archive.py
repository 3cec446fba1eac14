"""The image as both scanners read it: the engine's `docker save`, as is, unless its layers
mix plain tars and compressed ones. The containerd image store saves each layer as its store
holds it: the base imgkit loads (a `docker save` archive of its root filesystem) plain, the
layers built on it gzipped.
osv-scanner and trivy read such an archive through go-containerregistry, which takes every
layer to be compressed as its first one is, and fails on the rest ("archive/tar: invalid
tar header"). Then the plain layers are gzipped into a copy, so all are alike; a layer's
file keeps its name (the readers find layers by the names manifest.json gives, and judge
them by their content's diff id, which gzip does not change)."""
from __future__ import annotations

import gzip
import json
import shutil
import tarfile
import tempfile
from pathlib import Path

GZIP, ZSTD = b"\x1f\x8b", b"\x28\xb5\x2f\xfd"


def scannable(saved: Path) -> Path:
    """`saved` itself when its layers are alike, else a copy (beside it) whose plain layers
    are gzipped; `saved` is then removed."""
    with tarfile.open(saved) as archive:
        kinds = {name: _kind(archive, name) for name in _layers(archive)}
        plain = {name for name, kind in kinds.items() if kind == "plain"}
        if not plain or len(plain) == len(kinds):
            return saved
        alike = saved.with_name("alike-" + saved.name)
        with tarfile.open(alike, "w", format=tarfile.PAX_FORMAT) as out:
            for member in archive:
                if member.name in plain:
                    _add_gzipped(archive, member, out, saved.parent)
                else:
                    out.addfile(member, archive.extractfile(member) if member.isfile() else None)
    saved.unlink()
    return alike


def _layers(archive: tarfile.TarFile) -> list[str]:
    """The layer files manifest.json names (none where there is no manifest.json)."""
    try:
        handle = archive.extractfile("manifest.json")
        entries = json.load(handle) if handle is not None else []
    except (KeyError, ValueError):
        return []
    return [str(name) for entry in entries if isinstance(entry, dict)
            for name in entry.get("Layers") or []]


def _kind(archive: tarfile.TarFile, name: str) -> str:
    try:
        handle = archive.extractfile(name)
    except KeyError:
        return "missing"
    head = handle.read(4) if handle is not None else b""
    return "gzip" if head[:2] == GZIP else "zstd" if head == ZSTD else "plain"


def _add_gzipped(archive: tarfile.TarFile, member: tarfile.TarInfo, out: tarfile.TarFile,
                 work: Path) -> None:
    source = archive.extractfile(member)
    if source is None:                     # not a regular file: nothing to compress
        out.addfile(member)
        return
    with tempfile.TemporaryFile(dir=work) as packed:
        with gzip.GzipFile(fileobj=packed, mode="wb", compresslevel=1, mtime=0) as zipped:
            shutil.copyfileobj(source, zipped, 1 << 20)
        member.size = packed.tell()
        packed.seek(0)
        out.addfile(member, packed)
