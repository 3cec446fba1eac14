"""Same inputs, same image: the build date comes from the base (never the clock) and reaches
every build; imgkit-normalise, run for real on a tree, leaves what a step wrote the same on
any machine. The engine-backed half is tests/test_docker_reproducible.py."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from imgkit.builder.bakeplan import plan_bake
from imgkit.builder.base import NORMALISE, mirror_epoch, tar_root
from imgkit.builder.epoch import ARG, build_epochs
from imgkit.builder.freshness import Freshness
from imgkit.builder.scheduler import Builder
from imgkit.options import BuildOptions
from imgkit.render.command import render_contexts
from imgkit.selection import Selection

from .helpers.fakes import FakeEngine

ROOT = Path(__file__).resolve().parent.parent
EPOCH = 1731542400          # 2024-11-14: what FakeEngine says every base was made on


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IMGKIT_CACHE_DIR", str(tmp_path / "cache"))


def test_every_image_of_a_chain_is_built_with_its_bases_date_by_either_builder() -> None:
    contexts = render_contexts(Selection(ROOT / "images", cuda="11.8"))
    engine = FakeEngine()
    engine.add(contexts[0].target.base or "")
    # the legacy builder: each build gets it as a build argument
    Builder(engine, BuildOptions(jobs=2), {}, lambda *_: None).run(contexts)  # type: ignore[arg-type]
    assert engine.buildargs == {c.target.tag: {ARG: str(EPOCH)} for c in contexts}
    # BuildKit: each bake target (a parent built in the same bake has the base's date too)
    stale = {c.target.tag: Freshness("never built", None) for c in contexts}
    plan = plan_bake(contexts, stale, local_store=True, context_dir=Path("/ctx"), secrets=[],
                     force=lambda _: False, epochs=build_epochs(engine, contexts))  # type: ignore[arg-type]
    targets = plan.document["target"]
    assert isinstance(targets, dict) and len(targets) == len(contexts)
    assert {t["args"][ARG] for t in targets.values()} == {str(EPOCH)}


def test_a_chain_whose_base_the_engine_lacks_builds_undated() -> None:
    contexts = render_contexts(Selection(ROOT / "images", cuda="11.8"))
    assert build_epochs(FakeEngine(), contexts) == {}  # type: ignore[arg-type]


def test_the_mirror_state_is_the_newest_release_file_date() -> None:
    assert mirror_epoch(["Sat, 09 Nov 2024 10:00:00 UTC", "Thu, 14 Nov 2024 00:00:00 UTC",
                         "unknown"]) == EPOCH
    assert mirror_epoch(["unknown"]) is None


def normalise(root: Path, epoch: int | None) -> None:
    env = {k: v for k, v in os.environ.items() if k != ARG}
    if epoch is not None:
        env[ARG] = str(epoch)
    subprocess.run(["sh", str(NORMALISE), str(root)], check=True, env=env)


def a_step_wrote(root: Path) -> None:
    """What an apt step and a useradd leave, written now."""
    for name, text in (("var/log/dpkg.log", "2026-11-27 12:00:01 install x\n"),
                       ("var/log/apt/history.log", "Start-Date: 2026-11-27\n"),
                       ("var/cache/ldconfig/aux-cache", "\x01inode 123 ctime 1795800000"),
                       ("var/lib/dpkg/status-old", "Package: x\n"),
                       ("etc/shadow-", "root:*:20419:0:99999:7:::\n"),
                       ("etc/shadow", "root:*:19000:0:99999:7:::\nimgkit:!:20419:0:99999:7:::\n"
                                      "nobody:*::0:99999:7:::\n"),
                       ("opt/venv/lib/x.py", "x = 1\n"), ("etc/hostname", "builder-42\n")):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "opt/link").symlink_to("venv/lib/x.py")


def test_what_a_step_leaves_is_emptied_dated_and_stamped_with_the_build_date(tmp_path: Path) -> None:
    a_step_wrote(tmp_path)
    os.utime(tmp_path / "opt/venv/lib/x.py", (EPOCH - 86400, EPOCH - 86400))   # older: kept
    normalise(tmp_path, EPOCH)
    for name in ("var/log/dpkg.log", "var/log/apt/history.log", "var/cache/ldconfig/aux-cache",
                 "var/lib/dpkg/status-old", "etc/shadow-"):
        assert (tmp_path / name).read_text() == "", name       # emptied, never removed
    day = EPOCH // 86400
    assert (tmp_path / "etc/shadow").read_text() == (
        f"root:*:{day}:0:99999:7:::\nimgkit:!:{day}:0:99999:7:::\nnobody:*::0:99999:7:::\n")
    assert (tmp_path / "etc/hostname").read_text() == "builder-42\n"   # the engine's: untouched
    stamped = {p.relative_to(tmp_path).as_posix(): p.lstat().st_mtime
               for p in tmp_path.rglob("*")}
    assert stamped.pop("opt/venv/lib/x.py") == EPOCH - 86400
    assert stamped.pop("etc/hostname") > EPOCH
    assert set(stamped.values()) == {EPOCH}, stamped           # the symlink itself included


def test_without_a_build_date_only_the_logs_are_emptied(tmp_path: Path) -> None:
    a_step_wrote(tmp_path)
    normalise(tmp_path, None)
    assert (tmp_path / "var/log/dpkg.log").read_text() == ""
    assert "19000" in (tmp_path / "etc/shadow").read_text()
    assert (tmp_path / "opt/venv/lib/x.py").stat().st_mtime > EPOCH


def test_two_trees_made_apart_tar_to_the_same_bytes(tmp_path: Path) -> None:
    tarballs = []
    for name in ("one", "two"):
        root = tmp_path / name
        a_step_wrote(root)
        os.utime(root / "opt/venv/lib/x.py", (EPOCH - 5, EPOCH - 5))
        normalise(root, EPOCH)
        tarball = tmp_path / f"{name}.tar"
        tar_root(root, tarball, EPOCH)
        tarballs.append(tarball.read_bytes())
    assert tarballs[0] == tarballs[1]


def test_the_first_layer_that_differs_and_what_differs_in_it() -> None:
    from imgkit.builder.layerdiff import Entry, differences, first_difference
    assert first_difference(["a", "b", "c"], ["a", "b", "c"]) is None
    assert first_difference(["a", "b", "c"], ["a", "x", "c"]) == 1
    assert first_difference(["a", "b"], ["a", "b", "c"]) == 2      # a layer more: where it ends
    made = Entry("file", 0o644, "0:0", 6, EPOCH, "", "aa")
    ours = {"opt/built-at": made, "opt": Entry("dir", 0o755, "0:0", 0, EPOCH, "", ""),
            "etc/.wh.old": Entry("whiteout", 0o600, "0:0", 0, 1795800000, "", ""),
            "usr/bin/tool": Entry("symlink", 0o777, "0:0", 0, EPOCH, "tool-1", "")}
    theirs = {"opt/built-at": Entry("file", 0o600, "1000:1000", 6, EPOCH + 60, "", "bb"),
              "opt": ours["opt"],
              "etc/.wh.old": Entry("whiteout", 0o600, "0:0", 0, 1795800060, "", ""),
              "usr/bin/tool": Entry("symlink", 0o777, "0:0", 0, EPOCH, "tool-2", ""),
              "tmp/x": made}
    assert differences(ours, theirs) == [
        "etc/.wh.old: time 2026-11-27 17:20:00 vs 2026-11-27 17:21:00 (a whiteout: a file "
        "a lower layer holds, removed)",
        "opt/built-at: mode 644 vs 600, owner 0:0 vs 1000:1000, time 2024-11-14 00:00:00 vs "
        "2024-11-14 00:01:00, content",
        "tmp/x: only in the rebuilt image",
        "usr/bin/tool: link tool-1 vs tool-2"]


def test_an_image_without_locks_says_what_floats() -> None:
    from imgkit.builder.reproduce import floating_inputs
    from imgkit.lock.files import requirements
    from imgkit.matrix.compat import load
    from imgkit.matrix.plan import make_plan, select
    from imgkit.matrix.spec import load_spec
    plan = select(make_plan(load_spec(ROOT / "images"), load()), cuda="11.8")
    chain = [t for t in plan.targets if t.tag.startswith(("imgkit/python", "imgkit/cuda:11.8-runtime-py"))]
    floats = floating_inputs(chain, {})
    assert floats[0].startswith("imgkit/python:3.11-bookworm: apt installs what the mirror holds")
    assert requirements(chain[1])[0] in floats[1] and floats[1].endswith("on the index that day (no lock)")
    assert floating_inputs(chain, {t.tag: b"locked" for t in chain}) == []


def test_an_input_gone_or_moved_is_named_before_anything_is_built() -> None:
    from imgkit.builder.reproduce import check_inputs
    from imgkit.engine import ImageInfo
    from imgkit.errors import HostError
    contexts = [c for c in render_contexts(Selection(ROOT / "images", cuda="11.8"))
                if c.target.tag.startswith(("imgkit/python", "imgkit/cuda:11.8-runtime-py"))]
    python, cuda = contexts
    engine = FakeEngine()

    def put(context: object, layers: tuple[str, ...], built_from: str | None = None) -> None:
        tag, wanted = context.target.tag, context.input_hash  # type: ignore[attr-defined]
        engine.images[tag] = ImageInfo(id=f"sha256:{tag}", tags=(tag,), layers=layers, size=1,
                                       labels={"org.imgkit.input-hash": built_from or wanted})
    with pytest.raises(HostError, match="the base imgkit/debian:bookworm is gone"):
        check_inputs(engine, contexts)  # type: ignore[arg-type]
    engine.images["imgkit/debian:bookworm"] = ImageInfo(
        id="sha256:base", tags=(), labels={}, layers=("b",), size=1)
    put(python, ("b", "p"))
    with pytest.raises(HostError, match=f"{cuda.target.tag} is not in the engine"):
        check_inputs(engine, contexts)  # type: ignore[arg-type]
    put(cuda, ("b", "p", "c"), built_from="0" * 32)
    with pytest.raises(HostError, match="was built from other inputs"):
        check_inputs(engine, contexts)  # type: ignore[arg-type]
    put(cuda, ("b", "p-old", "c"))                       # on a python layer rebuilt since
    with pytest.raises(HostError, match=f"not built on the {python.target.tag} the engine holds"):
        check_inputs(engine, contexts)  # type: ignore[arg-type]
    put(cuda, ("b", "p", "c"))
    assert check_inputs(engine, contexts) == "imgkit/debian:bookworm"  # type: ignore[arg-type]


def test_a_host_name_alone_for_on_is_the_users_mistake_with_the_addresses_it_may_mean() -> None:
    """`--on gpu-box` named no way to reach an engine; docker-py's 'Invalid bind address'
    came back as the host's fault (exit 3)."""
    from imgkit.builder.reproduce import elsewhere
    from imgkit.errors import UsageError
    with pytest.raises(UsageError) as info:
        elsewhere("gpu-box", None)
    assert info.value.hint.startswith("--on ssh://gpu-box (its engine over ssh), or "
                                      "tcp://gpu-box:2376"), info.value.hint
