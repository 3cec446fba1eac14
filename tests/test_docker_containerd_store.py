"""An engine that keeps its images in the containerd image store (Docker 29's default for a
new install): a second engine of this host with the store on, and a small image made there
as imgkit's are, a base loaded as imgkit loads one (a plain layer in that store) and a
layer built on it (gzipped). What works there (scan, size) is proven there; what does not
yet (publish, reproduce, a registry image pulled to judge) is refused before any work,
saying how to turn the store off."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from imgkit.engine import Engine

from .helpers.cli import imgkit
from .helpers.images import tar_of
from .helpers.scanner import advisory_database, metadata, osv_scanner, outside_the_tests_project
from .helpers.second_engine import second_engine

pytestmark = pytest.mark.docker
SITE = "/opt/venv/lib/python3.11/site-packages"
IMAGE = "imgkit-test/containerd-store:1"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment that points imgkit at the store's engine, which holds IMAGE: py 1.11.0
    in its imported base, requests 2.30.0 and 2 MB of zeros in the layer built on it."""
    work = tmp_path_factory.mktemp("containerd-store")
    with second_engine(features=("containerd-snapshotter",)) as engine:
        env = {**os.environ, "DOCKER_HOST": engine.unix}
        info = subprocess.run(["docker", "info", "--format", "{{json .DriverStatus}}"], env=env,
                              capture_output=True, text=True, check=True).stdout
        assert "io.containerd.snapshotter.v1" in info, info
        rootfs = work / "rootfs.tar"          # the base as imgkit loads one (plain, as is)
        rootfs.write_bytes(tar_of(metadata(SITE, "py", "1.11.0")))
        Engine(docker_host=engine.unix).load_rootfs(
            rootfs, "imgkit-test/containerd-base:1", platform="linux/amd64", labels={},
            env=[], cmd=["sh"], created=0)
        context = work / "context"
        for name, data in {**metadata(SITE, "requests", "2.30.0"),
                           "zeros": bytes(2_000_000)}.items():
            (context / name).parent.mkdir(parents=True, exist_ok=True)
            (context / name).write_bytes(data)
        (context / "Dockerfile").write_text("FROM imgkit-test/containerd-base:1\nCOPY . /\n")
        subprocess.run(["docker", "build", "-q", "-t", IMAGE, str(context)], env=env,
                       check=True, capture_output=True)
        yield {**outside_the_tests_project(), "DOCKER_HOST": engine.unix}


def test_a_scan_reads_the_imported_plain_layer_and_the_gzipped_one(store: dict[str, str],
                                                                    tmp_path: Path) -> None:
    """Saved as is, the two layers differ in kind and both scanners' reader fails on the
    second ("archive/tar: invalid tar header")."""
    database = advisory_database(tmp_path / "db")
    env = {**store, "IMGKIT_OSV_SCANNER": str(osv_scanner())}
    done = imgkit("scan", IMAGE, "--db", str(database), "--json", "-", env=env)
    assert done.returncode == 0, done.stderr        # unscored records: under fail_on high
    found = {(f["package"], f["layer"]) for f in json.loads(done.stdout)["findings"]}
    assert ("py", 0) in found and ("requests", 1) in found, found


def test_size_is_the_unpacked_size_as_the_step_table_counts_it(store: dict[str, str]) -> None:
    """The store's own Size is what it holds packed (the 2 MB of zeros gzip to kilobytes)."""
    done = imgkit("size", IMAGE, "--json", "-", env=store)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert said["size"] >= 2_000_000, said
    assert said["size"] == sum(step["size"] for step in said["steps"]), said


@pytest.mark.parametrize("command, what", [
    (("publish", IMAGE, "--to", "127.0.0.1:5000/team"), "imgkit publish"),
    (("verify", "127.0.0.1:1/team/app:1", "--gpus", "none"), "pulling a registry image"),
    (("reproduce", "paddle:2.6.2-gpu-cuda11.8-cudnn8"), "imgkit reproduce"),
])
def test_what_names_images_by_their_config_digest_is_refused_first(
        store: dict[str, str], command: tuple[str, ...], what: str) -> None:
    done = imgkit(*command, env=store)
    assert done.returncode == 3, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert f"{what}" in said and "containerd image store" in said, said
    assert '"containerd-snapshotter": false' in said
