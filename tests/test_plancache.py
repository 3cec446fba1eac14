"""The plan cache: keyed by every byte that shapes a plan, and never trusted blindly."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from imgkit.budget import Budget
from imgkit.builder import plancache
from imgkit.builder.noop import base_dates, too_old
from imgkit.builder.plankey import fingerprint
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
    return fingerprint(plancache.inputs_for(tree / "images", tree / "templates",
                                            {**SELECTION, **selection}))


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
    plancache.store(k, stamps, {"ns/debian:bookworm": 30})
    assert plancache.lookup(k) == plancache.Known(stamps, {"ns/debian:bookworm": 30})
    assert plancache.lookup(key(tree, cuda="12.4")) is None


class DatedBases:
    """An engine that knows when each base's filesystem was made (the first history step)."""
    def __init__(self, made: dict[str, int]) -> None:
        self.made = made

    def made_at(self, ref: str) -> int | None:
        return self.made.get(ref)


def test_a_base_past_its_max_base_age_sends_the_no_op_down_the_full_path() -> None:
    """The fast path answers families with max_base_age too: it looks at each base's age
    (one engine call per base) and leaves a base past its limit, or one the engine cannot
    date, to the full path, which makes it again."""
    now, day = 1_000_000_000, 86400
    engine = DatedBases({"ns/debian:bookworm": now - 10 * day, "ns/ubuntu:24.04": now - 31 * day})

    def old(ages: dict[str, int]) -> bool:
        return too_old(base_dates(engine, ages), ages, now)  # type: ignore[arg-type]

    assert not old({})
    assert not old({"ns/debian:bookworm": 30})
    assert not old({"ns/debian:bookworm": 10})
    assert old({"ns/debian:bookworm": 9})
    assert old({"ns/ubuntu:24.04": 30})
    assert old({"ns/gone:1": 30})


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
