"""Locks against the real engine: an image built from its lock holds exactly the locked
distributions, and rebuilt from nothing (image and cache gone) it holds the same again; a
lock the matrix no longer matches is refused, a tampered hash fails the build."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from .helpers import leftovers
from .helpers.images import MINI_FAMILY, ROOT

pytestmark = pytest.mark.docker

EXTENSION = """\
family: req
extends: {family: mini}
repository: NS/req
tag: "{parent_tag}"
pip: ["requests==2.32.3"]     # its dependencies are not pinned here: the lock pins them
"""


def imgkit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "imgkit", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def in_image(tag: str, *command: str) -> str:
    return subprocess.run(["docker", "run", "--rm", "--entrypoint", command[0], tag, *command[1:]],
                          capture_output=True, text=True, check=True).stdout


def freeze(tag: str) -> set[str]:
    return {line.strip() for line in in_image(tag, "/opt/venv/bin/pip", "freeze").splitlines()
            if "==" in line}


def locked(images: Path) -> set[str]:
    from imgkit.lock.files import parse_lock
    return {f"{p.name}=={p.version}" for path in (images / "locks").glob("*.txt")
            for p in parse_lock(str(path), path.read_text())[1]}


def sbom_components(tag: str, out: Path) -> set[tuple[str, str]]:
    done = imgkit("sbom", tag, "--out", str(out))
    assert done.returncode == 0, done.stderr
    return {(c["name"], c.get("version", "")) for c in json.loads(out.read_text())["components"]}


def test_an_image_built_from_its_lock_holds_it_and_a_rebuild_from_nothing_holds_the_same(
        engine, base_image, namespace, tmp_path):
    ns = namespace + "-lock"
    engine.tag(engine.image(base_image).id, f"{ns}/debian:bookworm")
    shutil.copytree(ROOT / "templates", tmp_path / "templates")
    images = tmp_path / "images"
    images.mkdir()
    (images / "mini.yaml").write_text(MINI_FAMILY)
    (images / "req.yaml").write_text(EXTENSION.replace("NS", ns))
    selection = ("--images", str(images), "--namespace", ns)
    req = f"{ns}/req:11.8-cudart-py3.11-bookworm"
    try:
        assert imgkit("lock", "--check", *selection).returncode == 1     # nothing locked yet
        done = imgkit("lock", *selection)
        assert done.returncode == 0, done.stderr
        assert imgkit("lock", "--check", *selection).returncode == 0
        pins = locked(images)
        assert {"requests==2.32.3", "nvidia-cuda-runtime-cu11==11.8.89"} <= pins
        assert any(p.startswith("urllib3==") for p in pins)               # a dependency, pinned

        done = imgkit("build", *selection)
        assert done.returncode == 0, done.stdout + done.stderr
        first = freeze(req)
        assert first == pins, first ^ pins                    # exactly the lock, nothing more
        dpkg = in_image(req, "dpkg-query", "-W")
        # the apt half: every package the python layer's lock pins, at that version (but the
        # distro's venv support, which the same step removes once the venv is made)
        from imgkit.lock.files import apt_pins, venv_support
        python_lock = next((images / "locks").glob("*python*")).read_text()
        installed = dict(line.split("\t", 1) for line in dpkg.splitlines() if "\t" in line)
        wanted = dict(pin.split("=", 1) for pin in apt_pins(python_lock))
        gone = {name: wanted.pop(name) for name in venv_support("3.11") if name in wanted}
        assert "python3-pip-whl" in gone and not set(gone) & {n.split(":")[0] for n in installed}
        assert "python3" in wanted and wanted.items() <= {
            (name.split(":")[0], v) for name, v in installed.items()}, wanted
        sbom = sbom_components(req, tmp_path / "a.json")
        # the SBOM names every locked distribution at its locked version
        assert {tuple(p.split("==")) for p in pins} <= {(n.lower(), v) for n, v in sbom} | {
            (n, v) for n, v in sbom}, {tuple(p.split("==")) for p in pins} - set(sbom)

        for tag in (req, f"{ns}/cuda:11.8-cudart-py3.11-bookworm", f"{ns}/python:3.11-bookworm"):
            engine.remove_image(tag)                         # the legacy builder's cache with it
        done = imgkit("build", *selection)
        assert done.returncode == 0, done.stdout + done.stderr
        assert freeze(req) == first
        assert in_image(req, "dpkg-query", "-W") == dpkg
        assert sbom_components(req, tmp_path / "b.json") == sbom

        # the matrix moves: the lock is stale, --check names it and the build refuses it
        (images / "req.yaml").write_text(EXTENSION.replace("NS", ns).replace("2.32.3", "2.32.2"))
        check = imgkit("lock", "--check", *selection)
        assert check.returncode == 1 and req in check.stderr and "stale" in check.stderr
        refused = imgkit("build", *selection)
        assert refused.returncode == 2 and "stale" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr

        # a lock whose hash is not the file's: pip refuses, the build fails on that step
        (images / "req.yaml").write_text(EXTENSION.replace("NS", ns))
        lock = next((images / "locks").glob("*req*"))
        text = lock.read_text()
        digest = text.split("requests==2.32.3 \\\n    --hash=sha256:")[1][:64]
        lock.write_text(text.replace(digest, "0" * 64))
        tampered = imgkit("build", *selection, "--force", "--keep-parents", "--only", req)
        assert tampered.returncode == 1, tampered.stdout + tampered.stderr
        assert "HASH" in tampered.stdout.upper() and req in tampered.stdout
    finally:
        leftovers.clear(engine, lambda name: name.startswith(ns))


def test_check_resolve_names_what_moved_on_the_index_and_writes_nothing(
        engine, base_image, namespace, tmp_path):
    """The gate a branch runs: the locks match the matrix, and resolving again (real pip
    against an index we move, real apt-get -s on the base) gives them back; a new release
    fails it, naming the distribution and both versions, with no lock rewritten."""
    from .helpers.pyindex import LocalIndex
    ns = namespace + "-relock"
    engine.tag(engine.image(base_image).id, f"{ns}/debian:bookworm")
    index = LocalIndex(tmp_path / "index")
    run = uuid.uuid4().hex[:8]                              # names nobody else publishes
    app, demo = f"imgkit-app-{run}", f"imgkit-moving-{run}"
    index.add_wheel(app, "1.0", requires=(f"{demo}>=1,<2",))   # the family pins the app only
    index.add_wheel(demo, "1.0.0")
    shutil.copytree(ROOT / "templates", tmp_path / "templates")
    images = tmp_path / "images"
    images.mkdir()
    (images / "mini.yaml").write_text(MINI_FAMILY)
    (images / "req.yaml").write_text(EXTENSION.replace("NS", ns)
                                     .replace('"requests==2.32.3"', f'"{app}==1.0"'))
    selection = ("--images", str(images), "--namespace", ns)
    env = {"PIP_EXTRA_INDEX_URL": index.file_url}   # PyPI for the CUDA wheel, ours beside it
    req = f"{ns}/req:11.8-cudart-py3.11-bookworm"
    try:
        assert imgkit("lock", *selection, env=env).returncode == 0
        assert f"{demo}==1.0.0" in locked(images)
        gate = imgkit("lock", "--check", "--resolve", *selection, env=env)
        assert gate.returncode == 0, gate.stderr
        assert "3 of 3 locks resolve as written" in gate.stderr

        index.add_wheel(demo, "1.0.1")                  # the index moves
        before = {p.name: p.read_bytes() for p in (images / "locks").iterdir()}
        gate = imgkit("lock", "--check", "--resolve", *selection, env=env)
        assert gate.returncode == 1, gate.stderr
        assert f"{req}: moved: {demo} 1.0.0 -> 1.0.1" in gate.stderr, gate.stderr
        assert "2 of 3 locks resolve as written" in gate.stderr and "Traceback" not in gate.stderr
        assert {p.name: p.read_bytes() for p in (images / "locks").iterdir()} == before

        assert imgkit("lock", *selection, env=env).returncode == 0      # relocked
        assert f"{demo}==1.0.1" in locked(images)
        assert imgkit("lock", "--check", "--resolve", *selection, env=env).returncode == 0
        # --resolve is a kind of --check
        alone = imgkit("lock", "--resolve", *selection)
        assert alone.returncode == 2 and "--check" in alone.stderr
        # a pin the index does not hold: said at its line, with what the index holds
        written = (images / "req.yaml").read_text()
        (images / "req.yaml").write_text(written.replace(f'"{app}==1.0"', f'"{app}==9.9"'))
        line = next(n for n, text in enumerate(written.splitlines(), 1) if f"{app}==1.0" in text)
        wrong = imgkit("lock", "--only", req, *selection, env=env)
        said = " ".join(wrong.stderr.split())
        assert wrong.returncode == 2 and (
            f"{images / 'req.yaml'}:{line}: pip[0]: {app}==9.9: the package index has no such "
            f"version for CPython 3.11 ({req})") in said, said
        assert f"hint: the newest release the index holds is 1.0; `pip index versions {app}`" \
            in said, said
        # a version a dependency needs and the index lacks: pip's words, and whose pins
        index.add_wheel(app, "2.0", requires=(f"{demo}>=5",))
        (images / "req.yaml").write_text(written.replace(f'"{app}==1.0"', f'"{app}==2.0"'))
        wrong = imgkit("lock", "--only", req, *selection, env=env)
        said = " ".join(wrong.stderr.split())
        assert wrong.returncode == 2 and f"pip cannot resolve {app}==2.0" in said, said
        assert "hint: the pins are family req's (its pip: list" in said
    finally:
        engine.remove_image(f"{ns}/debian:bookworm")
