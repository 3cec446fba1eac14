"""`publish --compression zstd` reads `docker save`'s stream whatever its layout: the config
by its sha256 (the image id), each layer by its sha256 (a diff_id), zstd-compressed so that
it decompresses to the very bytes; anything else is dropped. (The push itself, to a real
registry and pulled back by a real engine: tests/test_docker_publish.py.)"""
from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path

import pytest
import zstandard

from imgkit.publish.zstd import SMALL, _pack

from .helpers.images import tar_of


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def archive(files: dict[str, bytes]) -> list[bytes]:
    """A tar of `files`, cut into uneven chunks as the engine's stream comes."""
    whole = tar_of(files)
    return [whole[i:i + 70001] for i in range(0, len(whole), 70001)]


@pytest.mark.parametrize("layout", ["oci", "legacy"])
def test_the_config_and_each_layer_are_found_by_their_digests(layout: str, tmp_path: Path) -> None:
    small, large = b"a small layer" * 100, os.urandom(SMALL + 12345)   # read whole / streamed
    config = json.dumps({"rootfs": {"diff_ids": [sha(small), sha(large)]}}).encode()
    image_id = sha(config)
    if layout == "oci":
        files = {f"blobs/sha256/{sha(d)[7:]}": d for d in (small, large, config)}
        files["index.json"] = b"{}"
    else:
        files = {"1/layer.tar": small, "2/layer.tar": large, f"{image_id[7:]}.json": config}
    files["manifest.json"] = b"[]"
    found, packed = _pack(archive(files), image_id, {sha(small), sha(large)}, tmp_path)
    assert found == config
    assert set(packed) == {sha(small), sha(large)}
    for data in (small, large):
        layer = packed[sha(data)]
        compressed = layer.path.read_bytes()  # type: ignore[union-attr]
        assert (layer.digest, layer.size) == (sha(compressed), len(compressed))
        assert zstandard.ZstdDecompressor().stream_reader(io.BytesIO(compressed)).read() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.path.name for p in packed.values())  # type: ignore[union-attr]


def test_an_archive_without_the_config_or_a_layer_says_so(tmp_path: Path) -> None:
    layer = b"layer"
    found, packed = _pack(archive({"blobs/sha256/x": layer}), sha(b"config"), {sha(layer), sha(b"other")},
                          tmp_path)
    assert found is None and set(packed) == {sha(layer)}


def test_a_cut_archive_is_an_error_naming_the_image(tmp_path: Path) -> None:
    from imgkit.errors import Inconsistent
    chunks = archive({"blobs/sha256/x": os.urandom(SMALL + 1)})
    with pytest.raises(Inconsistent, match="sha256:abc"):
        _pack(chunks[:len(chunks) // 2], "sha256:abc", {"sha256:none"}, tmp_path)


def test_a_layer_held_already_is_not_compressed_again(tmp_path: Path) -> None:
    """The OCI layout names each layer by its diff_id: one this machine compressed before,
    which the registry holds, is taken as recorded; the others are compressed."""
    from imgkit.publish.zstd import Packed
    old, new = b"the shared CUDA layer" * 50, b"the framework's own layer" * 50
    config = json.dumps({"rootfs": {"diff_ids": [sha(old), sha(new)]}}).encode()
    files = {f"blobs/sha256/{sha(d)[7:]}": d for d in (old, new, config)}
    recorded = Packed(None, "sha256:" + "e" * 64, 99)
    asked: list[str] = []

    def held(diff_id: str) -> Packed | None:
        asked.append(diff_id)
        return recorded if diff_id == sha(old) else None
    found, packed = _pack(archive(files), sha(config), {sha(old), sha(new)}, tmp_path, held)
    assert found == config and sorted(asked) == sorted([sha(old), sha(new)])
    assert packed[sha(old)] == recorded
    assert packed[sha(new)].path is not None and packed[sha(new)].path.is_file()  # type: ignore[union-attr]
