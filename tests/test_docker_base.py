"""A family on its own base (`base:`), against the real engine: an NVIDIA-style base made in
the test (a CUDA runtime tree and its ENV on Debian) and pushed to a real registry, so it has
a digest; imgkit reads what it holds from the image, builds the family on it by digest, and
verify holds the image's CUDA claim; a family asking for another CUDA, and a base that is
not Debian based, are refused before anything is built."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from .helpers.images import build_from_files
from .helpers.registry import USER

pytestmark = pytest.mark.docker


def imgkit(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "imgkit", *args], capture_output=True, text=True,
                          timeout=900, env={**os.environ, "IMGKIT_CACHE_DIR": str(cache)})


def family(images: Path, ref: str, cuda: str, name: str = "golden") -> None:
    images.mkdir(exist_ok=True)
    (images / f"{name}.yaml").write_text(f"family: {name}\ncuda_libs: [cudart]\nbase: {ref}\n"
                                         f"axes:\n  cuda: [\"{cuda}\"]\n")


def nvidia_style_base(engine, base_image: str, mini: str, ref: str) -> None:
    """Debian with a CUDA 11.8 runtime as NVIDIA's images lay it out: the real libcudart
    (taken from the mini image's wheel) in /usr/local/cuda-11.8/lib64 under its full
    version, the soname link, the toolkit's version.json, /usr/local/cuda pointing at it,
    the loader told of the folder, and the ENV NVIDIA writes."""
    wheel = "/opt/venv/lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libcudart.so.11.0"
    tree = "/usr/local/cuda-11.8"
    build_from_files(engine, ref, {
        "version.json": b'{"cuda": {"version": "11.8.0"}, "cuda_cudart": {"version": "11.8.89"}}',
        "Dockerfile": (
            f"FROM {mini} AS wheel\n"
            f"FROM {base_image}\n"
            f"COPY --from=wheel {wheel} {tree}/lib64/libcudart.so.11.8.89\n"
            f"COPY version.json {tree}/version.json\n"
            f"RUN ln -s libcudart.so.11.8.89 {tree}/lib64/libcudart.so.11.0 \\\n"
            f" && ln -s {tree} /usr/local/cuda \\\n"
            " && echo /usr/local/cuda/lib64 > /etc/ld.so.conf.d/000_cuda.conf && ldconfig\n"
            "ENV CUDA_VERSION=11.8.0 NVIDIA_REQUIRE_CUDA=cuda>=11.8\n").encode()})


def test_a_family_builds_on_its_own_base_by_digest(engine, base_image, mini, namespace,
                                                  registry, tmp_path):
    run = uuid.uuid4().hex[:8]
    ref = f"{registry.address}/golden/cuda:11.8-runtime-{run}"
    nvidia_style_base(engine, base_image, mini, ref)
    try:
        digest = engine.push(ref, credentials=(USER, registry.password))
        pinned = f"{registry.address}/golden/cuda@{digest}"
        images, cache = tmp_path / "images", tmp_path / "cache"
        family(images, ref, "11.8")
        listed = imgkit("list", "--images", str(images), "--namespace", namespace, "--json",
                        str(tmp_path / "plan.json"), cache=cache)
        assert listed.returncode == 0, listed.stderr
        root, cuda = json.loads((tmp_path / "plan.json").read_text())["images"]
        name = f"cuda-11.8-runtime-{run}"
        assert root["tag"] == f"{namespace}/python:3.11-{name}" and root["base"] == pinned
        # the base's own cudart is the layer's: pinned as the base holds it, not installed
        assert cuda["packages"] == [] and cuda["components"]["cudart"] == "11.8.89"
        assert list((cache / "bases").glob("*.json"))      # what it read is kept

        built = imgkit("build", "--images", str(images), "--namespace", namespace, cache=cache)
        assert built.returncode == 0, built.stdout + built.stderr
        base, made = engine.image(ref), engine.image(cuda["tag"])
        assert made is not None and made.layers[:len(base.layers)] == base.layers   # on the base
        labels = engine.image(root["tag"]).labels
        assert labels["org.opencontainers.image.base.name"] == pinned
        said = engine.client.containers.run(cuda["tag"], ["-c", "python3 --version; id -un"],
                                            entrypoint="/bin/sh", remove=True).decode().split()
        assert said[0] == "Python" and said[1].startswith("3.11.") and said[2] == "imgkit"
        verified = imgkit("verify", cuda["tag"], "--gpus", "none", cache=cache)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        # one copy, the base's, read through its toolkit's version.json; none of imgkit's
        assert "pass  cudart.version  expected: 11.8" in verified.stdout
        assert "single-copy" not in verified.stdout

        # the same base under a family that asks for CUDA 12.8: refused, nothing built
        other = tmp_path / "other"
        family(other, ref, "12.8", name="wrong")
        refused = imgkit("build", "--images", str(other), "--namespace", namespace, cache=cache)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "holds the CUDA 11.8.0 runtime; the family asks for CUDA 12.8" in refused.stderr
        assert "Traceback" not in refused.stderr
    finally:
        engine.remove_image(ref)


def test_a_base_imgkit_cannot_build_on_is_refused_with_what_it_is(engine, base_image, namespace,
                                                                  tmp_path):
    ref = f"{namespace}/alpine-like:1"
    build_from_files(engine, ref, {"Dockerfile": (
        f"FROM {base_image}\nRUN rm /etc/os-release && printf '%s\\n' ID=alpine "
        "'PRETTY_NAME=\"Alpine Linux v3.20\"' > /etc/os-release\n").encode()})
    images = tmp_path / "images"
    family(images, ref, "12.4")
    listed = imgkit("list", "--images", str(images), "--namespace", namespace,
                    cache=tmp_path / "cache")
    assert listed.returncode == 2, listed.stdout + listed.stderr
    assert "golden.yaml" in listed.stderr and "base" in listed.stderr
    assert "is Alpine Linux v3.20, not Debian or Ubuntu based" in listed.stderr
    family(images, "127.0.0.1:1/never-made:1", "12.4")     # nothing answers there
    missing = imgkit("list", "--images", str(images), "--namespace", namespace,
                     cache=tmp_path / "cache")
    assert missing.returncode == 2 and "could not be pulled" in missing.stderr
