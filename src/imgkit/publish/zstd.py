"""`publish --compression zstd`: the verified image put in a registry with zstd layers,
under an OCI manifest whose config is the engine's own config, byte for byte.

The engine's `docker push` sends gzip only. `skopeo copy --dest-compress-format zstd`
converts the image to OCI and rewrites its config on the way, so the image a runner pulls
would have another id than the one verified. Here the config blob is the one `docker save`
gives (its sha256 is the verified id, checked); each layer is the saved, uncompressed tar
compressed with zstd as the archive streams by (its sha256 before compression must be one
of the config's diff_ids), uploaded unless the registry holds it, and the manifest names
them. Engines from Docker
23.0 pull zstd layers; older ones cannot, which is why gzip stays the default."""
from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator

from ..cache import cache_dir
from ..cachefile import write_whole
from ..engine import Engine
from ..errors import Inconsistent
from ..registry.client import RegistryClient
from ..registry.reference import DIGEST
from ..scratch import scratch

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
ZSTD_LAYER = "application/vnd.oci.image.layer.v1.tar+zstd"
LEVEL = 3              # zstd's own default: most of the gain at a fraction of the time
CHUNK = 1 << 20
SMALL = 4 << 20        # a file of the saved archive read whole: the config is one of these
PLACES = 20            # the repositories remembered per layer, newest first


@dataclass(frozen=True)
class Packed:
    """One layer, zstd-compressed into a file of the scratch folder (None: the registry
    holds it already, as this machine compressed it before)."""
    path: Path | None
    digest: str             # sha256 of the compressed bytes: the blob's name
    size: int


def push(engine: Engine, client: RegistryClient, repository: str, tag: str, image_id: str,
         progress: Callable[[str, int, int], None] = lambda *_: None,
         say: Callable[[str], None] = lambda _: None) -> str:
    """Put the engine's image `image_id` in `repository:tag` with zstd layers; returns the
    manifest's digest. `progress(layer, bytes sent, layer size)` follows each upload.
    The saved archive is read as it streams (never written out whole): disk for the
    compressed layers only, in the temporary folder (TMPDIR). A layer this machine
    compressed before (imgkit's cache records its digest and where it was put) is neither
    compressed nor sent again when the repository holds it, or can mount it from another
    repository of the registry: images of a matrix share most of their layers."""
    info = engine.image(image_id)
    if info is None:
        raise Inconsistent(f"the engine no longer holds {image_id}")
    diff_ids = list(info.layers)
    with scratch("imgkit-zstd-", 0, f"compressing {image_id[:19]}'s layers with zstd") as folder:
        config, packed = _pack(engine.save(image_id, CHUNK), image_id, set(diff_ids),
                               folder, _held_by(client, repository))
        if config is None:
            raise Inconsistent(f"the engine saved {image_id} without its config")
        if json.loads(config)["rootfs"]["diff_ids"] != diff_ids:
            raise Inconsistent(f"{image_id}: its config names other layers than the engine's")
        missing = [d for d in diff_ids if d not in packed]
        if missing:
            raise Inconsistent(f"the engine saved {image_id} without its layer {missing[0]}")
        made = {d: path for d in diff_ids if (path := packed[d].path) is not None}
        say(f"{len(made)} of its {len(packed)} layers compressed with zstd; the registry "
            "holds the rest already")
        for diff_id, path in made.items():
            layer = packed[diff_id]

            def sent(count: int, layer: Packed = layer) -> None:
                progress(layer.digest, count, layer.size)
            client.put_blob_file(repository, path, layer.digest, sent)
            _remember(diff_id, layer, f"{client.endpoint.registry}/{repository}")
        client.put_blob(repository, config)
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, "digest": image_id, "size": len(config)},
            "layers": [{"mediaType": ZSTD_LAYER, "digest": packed[d].digest, "size": packed[d].size}
                       for d in diff_ids]}, separators=(",", ":")).encode()
        return client.put_manifest(repository, tag, manifest, OCI_MANIFEST)


def _held_by(client: RegistryClient, repository: str) -> Callable[[str], Packed | None]:
    """The layer as recorded, when `repository` holds it or mounts it from a repository of
    the same registry it was put in before; else None (it is compressed and sent)."""
    registry = client.endpoint.registry
    here = f"{registry}/{repository}"

    def held(diff_id: str) -> Packed | None:
        known, places = _recalled(diff_id)
        if known is None:
            return None
        elsewhere = [p.split("/", 1)[1] for p in places
                     if p != here and p.split("/", 1)[0] == registry]
        if client.has_blob(repository, known.digest) or any(
                client.mount_blob(repository, known.digest, source) for source in elsewhere):
            _remember(diff_id, known, here)
            return known
        return None
    return held


def _record(diff_id: str) -> Path:
    return cache_dir() / "zstd-layers" / f"{diff_id.removeprefix('sha256:')}.json"


def _recalled(diff_id: str) -> tuple[Packed | None, list[str]]:
    """What this machine's compression of that layer gave, at this level, if recorded, and
    the repositories (HOST/REPO) it was put in."""
    try:
        found = json.loads(_record(diff_id).read_text())
        if found.get("level") == LEVEL and DIGEST.match(found["digest"]):
            return (Packed(None, found["digest"], int(found["size"])),
                    [str(p) for p in found.get("in") or []])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None, []


def _remember(diff_id: str, layer: Packed, place: str) -> None:
    """Record the layer's zstd digest, and that `place` (HOST/REPO) holds it: a later
    push to another repository of that registry mounts it from there."""
    known, places = _recalled(diff_id)
    places = [p for p in places if known is not None and known.digest == layer.digest and p != place]
    write_whole(_record(diff_id), json.dumps({"digest": layer.digest, "size": layer.size,
                                               "level": LEVEL, "in": [place, *places][:PLACES]}))


def _pack(saved: Iterable[bytes], image_id: str, diff_ids: set[str], scratch: Path,
          held: Callable[[str], Packed | None] = lambda _: None,
          ) -> tuple[bytes | None, dict[str, Packed]]:
    """From `docker save`'s stream, whatever its layout (engine 25's OCI one or the older
    one): the file whose sha256 is `image_id` (the config), and each file whose sha256 is
    one of `diff_ids` (a layer, uncompressed), zstd-compressed. Anything else is dropped.
    A layer the OCI layout names by its diff_id and `held` answers for is not compressed."""
    config: bytes | None = None
    packed: dict[str, Packed] = {}
    reader = io.BufferedReader(_Chunks(iter(saved)), CHUNK)
    try:
        with tarfile.open(fileobj=reader, mode="r|") as archive:
            for member in archive:
                named = "sha256:" + member.name.rsplit("/", 1)[-1]
                if named in diff_ids and named not in packed and member.name.startswith("blobs/"):
                    known = held(named)
                    if known is not None:
                        packed[named] = known
                        continue
                source = archive.extractfile(member) if member.isfile() else None
                if source is None:
                    continue
                if member.size <= SMALL:          # read whole: the config is one of these
                    data = source.read()
                    plain = "sha256:" + hashlib.sha256(data).hexdigest()
                    if plain == image_id:
                        config = data
                    if plain not in diff_ids or plain in packed:
                        continue
                    source = io.BytesIO(data)
                target = scratch / f"{len(packed)}.zst"
                plain, layer = _compress(source, target)
                if plain in diff_ids and plain not in packed:
                    packed[plain] = layer
                else:
                    target.unlink()
    except tarfile.TarError as exc:
        raise Inconsistent(f"the engine's save of {image_id} is not a whole archive: {exc}")
    return config, packed


def _compress(source: IO[bytes], target: Path) -> tuple[str, Packed]:
    """zstd-compress `source` into `target`, hashing both sides as they pass (one pass):
    (sha256 of what was read, the layer)."""
    import zstandard
    plain, packed = hashlib.sha256(), hashlib.sha256()
    compressor = zstandard.ZstdCompressor(level=LEVEL, threads=-1).compressobj()
    with open(target, "wb") as out:
        while chunk := source.read(CHUNK):
            plain.update(chunk)
            data = compressor.compress(chunk)
            packed.update(data)
            out.write(data)
        data = compressor.flush()
        packed.update(data)
        out.write(data)
    return "sha256:" + plain.hexdigest(), Packed(target, "sha256:" + packed.hexdigest(),
                                                 target.stat().st_size)


class _Chunks(io.RawIOBase):
    """The engine's stream of chunks, read as a file."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks, self.rest = chunks, memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: "memoryview | bytearray") -> int:   # type: ignore[override]
        while not self.rest:
            chunk = next(self.chunks, b"")
            if not chunk:
                return 0
            self.rest = memoryview(chunk)
        count = min(len(buffer), len(self.rest))
        buffer[:count] = self.rest[:count]
        self.rest = self.rest[count:]
        return count
