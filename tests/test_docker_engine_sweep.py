""".ci/sweep-engine-leaks.sh against a real engine: a second dockerd on a data-root of its
own, where BuildKit builds a layer, the image is removed and the build cache emptied; with
that engine stopped, the sweep removes what no image or build record names, and the same
data-root starts again with its image whole and its builder working."""
from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from .helpers.second_engine import second_engine

pytestmark = pytest.mark.docker
SWEEP = Path(__file__).resolve().parent.parent / ".ci" / "sweep-engine-leaks.sh"


def docker(host: str, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(["docker", *args], input=stdin, capture_output=True, timeout=300,
                          env={**os.environ, "DOCKER_HOST": host})
    assert done.returncode == 0, done.stderr.decode()
    return done


def build(host: str, base: str, tag: str, context: Path, *flags: str) -> None:
    """A layer of its own through BuildKit: a megabyte file copied in, the same layer
    every time from the same context."""
    if not context.exists():
        context.mkdir()
        (context / "layer").write_bytes(os.urandom(1 << 20))
    (context / "Dockerfile").write_text(f"FROM {base}\nCOPY layer /{context.name}\n")
    docker(host, "buildx", "build", "--load", *flags, "-t", tag, str(context))


def layers_holding(data: Path, name: str) -> list[Path]:
    return [d for d in (data / "overlay2").iterdir() if (d / "diff" / name).exists()]


def test_the_sweep_removes_only_what_the_stopped_engine_no_longer_names(engine, base_image, tmp_path):
    data = Path(f"/var/lib/imgkit-engine-sweep-{uuid.uuid4().hex[:6]}")
    saved = subprocess.run(["docker", "save", base_image], capture_output=True, check=True).stdout
    try:
        with second_engine(data) as other:
            docker(other.unix, "load", stdin=saved)
            build(other.unix, base_image, "sweep/kept:1", tmp_path / "data")
            build(other.unix, base_image, "sweep/again:1", tmp_path / "data", "--no-cache")
            docker(other.unix, "rmi", "sweep/again:1")
            docker(other.unix, "buildx", "prune", "--all", "--force")
            # refused while that engine runs: nothing is built or removed under a live one
            refused = subprocess.run(["bash", str(SWEEP), str(data)], capture_output=True, text=True)
            assert refused.returncode == 0 and "nothing swept" in refused.stdout, refused.stdout
            named = docker(other.unix, "image", "inspect", "sweep/kept:1").stdout
        holding = layers_holding(data, "data")
        assert len(holding) == 2, holding        # the kept image's, and the rebuild's, leaked
        swept = subprocess.run(["bash", str(SWEEP), str(data)], capture_output=True, text=True)
        assert swept.returncode == 0 and "removed 1 layers" in swept.stdout, swept.stdout + swept.stderr
        assert len(layers_holding(data, "data")) == 1
        with second_engine(data) as again:
            assert docker(again.unix, "image", "inspect", "sweep/kept:1").stdout == named
            docker(again.unix, "run", "--rm", "sweep/kept:1", "test", "-s", "/data")
            build(again.unix, "sweep/kept:1", "sweep/next:1", tmp_path / "next")
            assert docker(again.unix, "buildx", "du").returncode == 0
    finally:
        shutil.rmtree(data, ignore_errors=True)
