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
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator

from ..engine import Engine
from ..errors import Inconsistent
from ..registry.client import RegistryClient

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
ZSTD_LAYER = "application/vnd.oci.image.layer.v1.tar+zstd"
LEVEL = 3              # zstd's own default: most of the gain at a fraction of the time
CHUNK = 1 << 20
SMALL = 4 << 20        # a file of the saved archive read whole: the config is one of these


@dataclass(frozen=True)
class Packed:
    """One layer, zstd-compressed into a file of the scratch folder."""
    path: Path
    digest: str             # sha256 of the compressed bytes: the blob's name
    size: int


def push(engine: Engine, client: RegistryClient, repository: str, tag: str, image_id: str,
         progress: Callable[[str, int, int], None] = lambda *_: None) -> str:
    """Put the engine's image `image_id` in `repository:tag` with zstd layers; returns the
    manifest's digest. `progress(layer, bytes sent, layer size)` follows each upload.
    The saved archive is read as it streams (never written out whole): disk for the
    compressed layers only, in the temporary folder (TMPDIR)."""
    info = engine.image(image_id)
    if info is None:
        raise Inconsistent(f"the engine no longer holds {image_id}")
    diff_ids = list(info.layers)
    with tempfile.TemporaryDirectory(prefix="imgkit-zstd-") as scratch:
        config, packed = _pack(engine.save(image_id, CHUNK), image_id, set(diff_ids), Path(scratch))
        if config is None:
            raise Inconsistent(f"the engine saved {image_id} without its config")
        if json.loads(config)["rootfs"]["diff_ids"] != diff_ids:
            raise Inconsistent(f"{image_id}: its config names other layers than the engine's")
        missing = [d for d in diff_ids if d not in packed]
        if missing:
            raise Inconsistent(f"the engine saved {image_id} without its layer {missing[0]}")
        for diff_id in dict.fromkeys(diff_ids):
            layer = packed[diff_id]

            def sent(count: int, layer: Packed = layer) -> None:
                progress(layer.digest, count, layer.size)
            client.put_blob_file(repository, layer.path, layer.digest, sent)
        client.put_blob(repository, config)
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, "digest": image_id, "size": len(config)},
            "layers": [{"mediaType": ZSTD_LAYER, "digest": packed[d].digest, "size": packed[d].size}
                       for d in diff_ids]}, separators=(",", ":")).encode()
        return client.put_manifest(repository, tag, manifest, OCI_MANIFEST)


def _pack(saved: Iterable[bytes], image_id: str, diff_ids: set[str],
          scratch: Path) -> tuple[bytes | None, dict[str, Packed]]:
    """From `docker save`'s stream, whatever its layout (engine 25's OCI one or the older
    one): the file whose sha256 is `image_id` (the config), and each file whose sha256 is
    one of `diff_ids` (a layer, uncompressed), zstd-compressed. Anything else is dropped."""
    config: bytes | None = None
    packed: dict[str, Packed] = {}
    reader = io.BufferedReader(_Chunks(iter(saved)), CHUNK)
    try:
        with tarfile.open(fileobj=reader, mode="r|") as archive:
            for member in archive:
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
    """zstd-compress `source` into `target`: (sha256 of what was read, the layer)."""
    import zstandard
    plain = hashlib.sha256()
    compressor = zstandard.ZstdCompressor(level=LEVEL, threads=-1)
    with open(target, "wb") as out, compressor.stream_writer(out, closefd=False) as stream:
        while chunk := source.read(CHUNK):
            plain.update(chunk)
            stream.write(chunk)
    packed = hashlib.sha256()
    with open(target, "rb") as written:
        while chunk := written.read(CHUNK):
            packed.update(chunk)
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
