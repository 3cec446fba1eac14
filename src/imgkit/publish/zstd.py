"""`publish --compression zstd`: the verified image put in a registry with zstd layers,
under an OCI manifest whose config is the engine's own config, byte for byte.

The engine's `docker push` sends gzip only. `skopeo copy --dest-compress-format zstd`
converts the image to OCI and rewrites its config on the way, so the image a runner pulls
would have another id than the one verified. Here the config blob is the one `docker save`
gives (its sha256 is the verified id, checked); each layer is the saved, uncompressed tar
compressed with zstd (its sha256 before compression must be the config's diff_id, checked),
uploaded unless the registry holds it, and the manifest names them. Engines from Docker
23.0 pull zstd layers; older ones cannot, which is why gzip stays the default."""
from __future__ import annotations

import hashlib
import json
import tarfile
import tempfile
from pathlib import Path
from typing import IO, Callable

from ..engine import Engine
from ..errors import Inconsistent
from ..registry.client import RegistryClient

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
ZSTD_LAYER = "application/vnd.oci.image.layer.v1.tar+zstd"
LEVEL = 3              # zstd's own default: most of the gain at a fraction of the time
CHUNK = 1 << 20


def push(engine: Engine, client: RegistryClient, repository: str, tag: str, image_id: str,
         progress: Callable[[str, int, int], None] = lambda *_: None) -> str:
    """Put the engine's image `image_id` in `repository:tag` with zstd layers; returns the
    manifest's digest. `progress(layer, bytes sent, layer size)` follows each upload."""
    with tempfile.TemporaryDirectory(prefix="imgkit-zstd-") as scratch:
        saved = Path(scratch) / "image.tar"
        with open(saved, "wb") as out:
            for chunk in engine.api.get_image(image_id, chunk_size=CHUNK):
                out.write(chunk)
        with tarfile.open(saved) as archive:
            config, layers = _read(archive, image_id)
            diff_ids = json.loads(config)["rootfs"]["diff_ids"]
            if len(diff_ids) != len(layers):
                raise Inconsistent(f"{image_id}: the saved image has {len(layers)} layers, its "
                                   f"config names {len(diff_ids)}")
            described = []
            for member, diff_id in zip(layers, diff_ids):
                packed = Path(scratch) / "layer.zst"
                source = archive.extractfile(member)
                if source is None:                 # _read saw a regular file there
                    raise Inconsistent(f"the engine saved {image_id} without {member.name}")
                digest, size = _compress(source, packed, diff_id, image_id)

                def sent(count: int, layer: str = digest, total: int = size) -> None:
                    progress(layer, count, total)
                client.put_blob_file(repository, packed, digest, sent)
                packed.unlink()
                described.append({"mediaType": ZSTD_LAYER, "digest": digest, "size": size})
        client.put_blob(repository, config)
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, "digest": image_id, "size": len(config)},
            "layers": described}, separators=(",", ":")).encode()
        return client.put_manifest(repository, tag, manifest, OCI_MANIFEST)


def _read(archive: tarfile.TarFile, image_id: str) -> tuple[bytes, list[tarfile.TarInfo]]:
    """The config's bytes and the layers' members of a `docker save` archive of one image."""
    handle = archive.extractfile("manifest.json")
    if handle is None:
        raise Inconsistent(f"the engine saved {image_id} without a manifest.json")
    [entry] = json.loads(handle.read())
    config_file = archive.extractfile(entry["Config"])
    config = config_file.read() if config_file is not None else b""
    if "sha256:" + hashlib.sha256(config).hexdigest() != image_id:
        raise Inconsistent(f"the engine saved another config than {image_id}'s")
    layers = [archive.getmember(name) for name in entry["Layers"]]
    if not all(m.isfile() for m in layers):
        raise Inconsistent(f"the engine saved {image_id} with a layer that is not a file")
    return config, layers


def _compress(source: IO[bytes], target: Path, diff_id: str, image_id: str) -> tuple[str, int]:
    """zstd-compress `source` into `target`; (sha256 of the compressed file, its size). The
    uncompressed bytes must hash to `diff_id`."""
    import zstandard
    plain = hashlib.sha256()
    compressor = zstandard.ZstdCompressor(level=LEVEL, threads=-1)
    with open(target, "wb") as out, compressor.stream_writer(out, closefd=False) as stream:
        while chunk := source.read(CHUNK):
            plain.update(chunk)
            stream.write(chunk)
    if "sha256:" + plain.hexdigest() != diff_id:
        raise Inconsistent(f"a layer the engine saved of {image_id} is not {diff_id}")
    packed = hashlib.sha256()
    with open(target, "rb") as written:
        while chunk := written.read(CHUNK):
            packed.update(chunk)
    return "sha256:" + packed.hexdigest(), target.stat().st_size
