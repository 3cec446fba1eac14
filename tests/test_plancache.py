"""The plan cache: keyed by every byte that shapes a plan, and never trusted blindly."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from imgkit.budget import Budget
from imgkit.builder import plancache
from imgkit.cache import cache_dir
from imgkit.render.stamp import Stamp

ROOT = Path(__file__).resolve().parent.parent
SELECTION = {"namespace": "imgkit", "cuda": "11.8", "only": None}


@pytest.fixture(autouse=True)
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IMGKIT_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "images", tmp_path / "images")
    shutil.copytree(ROOT / "templates", tmp_path / "templates")
    return tmp_path


def key(tree: Path, **selection: object) -> str:
    return plancache.fingerprint(tree / "images", tree / "templates", {**SELECTION, **selection})


def test_fingerprint_follows_every_input(tree: Path) -> None:
    first = key(tree)
    assert key(tree) == first
    assert key(tree, cuda="12.4") != first
    assert key(tree, namespace="other") != first
    template = tree / "templates" / "python.Dockerfile.j2"
    template.write_text(template.read_text() + "# changed\n")
    second = key(tree)
    assert second != first
    (tree / "images" / "extra.yaml").write_text("family: extra\n")
    assert key(tree) != second


def test_store_then_lookup(tree: Path) -> None:
    stamps = [Stamp("ns/python:3.11", None, "ns/debian:bookworm", "a" * 32),
              Stamp("ns/cuda:11.8", "ns/python:3.11", None, "b" * 32,
                    Budget(7_500_000_000, "images/cuda.yaml"))]
    k = key(tree)
    assert plancache.lookup(k) is None
    plancache.store(k, stamps)
    assert plancache.lookup(k) == stamps
    assert plancache.lookup(key(tree, cuda="12.4")) is None


def test_a_damaged_entry_is_a_miss(tree: Path) -> None:
    k = key(tree)
    plancache.store(k, [Stamp("t:1", None, "b:1", "c" * 32)])
    entry = next((cache_dir() / "plans").glob(f"{k[:40]}.json"))
    entry.write_text('{"format": 1, "key": "' + k + '", "stamps": [{"tag": 1}]}')
    assert plancache.lookup(k) is None
    entry.write_text("not json")
    assert plancache.lookup(k) is None


def test_an_unwritable_cache_is_ignored(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tree / "file"
    blocker.write_text("")
    monkeypatch.setenv("IMGKIT_CACHE_DIR", str(blocker / "sub"))
    plancache.store(key(tree), [])
    assert plancache.lookup(key(tree)) is None
