"""A killed session's images (and containers) are cleared by the next one; a live session's, and the shared
base's own name, are not."""
from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from .helpers import leftovers
from .helpers.images import ROOT, build_from_files
from .helpers.registry import USER

pytestmark = pytest.mark.docker

HOLD = ("import sys, time; sys.path.insert(0, sys.argv[1]); from tests.helpers import leftovers; "
        "print(leftovers.claim('imgkit-test'), flush=True); time.sleep(600)")


def test_a_dead_sessions_namespace_is_cleared_and_a_live_ones_kept(engine, base_image, registry):
    dead = f"imgkit-test-{uuid.uuid4().hex[:8]}"          # claimed by nobody: a killed session's
    live = subprocess.Popen([sys.executable, "-c", HOLD, str(ROOT)], stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout is not None
        alive = live.stdout.readline().strip()
        base = engine.image(base_image).id
        for ns in (dead, alive):
            engine.tag(base, f"{ns}/debian:bookworm")
            build_from_files(engine, f"{ns}/child:1", {"Dockerfile": (     # two steps
                f"FROM {ns}/debian:bookworm\nLABEL made-by={ns}\nLABEL step=2\n").encode()})
            engine.tag(engine.image(f"{ns}/child:1").id, f"127.0.0.1:9/prod/{ns}/child:1")
        child = engine.image(f"{dead}/child:1").id
        step = engine.client.images.get(child).attrs["Parent"]     # its first step, untagged
        assert step and not engine.client.images.get(step).tags
        # pulled by digest from two repositories, as the pipeline and arm64 tests leave
        # theirs: no tag, named only by two HOST/REPO@sha256:… (which the engine will not
        # remove by its id alone)
        build_from_files(engine, f"{dead}/pushed:1", {"Dockerfile": (
            f"FROM {dead}/child:1\nLABEL pushed=1\n").encode()})
        pushed = engine.image(f"{dead}/pushed:1").id
        names = [f"{registry.address}/{where}/{dead}/pushed" for where in ("prod", "staging")]
        digests = []
        for name in names:
            engine.tag(pushed, f"{name}:1")
            digests.append(engine.push(f"{name}:1", credentials=(USER, registry.password)))
        for name in (f"{dead}/pushed:1", *(f"{n}:1" for n in names)):
            engine.client.images.remove(name, noprune=True)
        for name, digest in zip(names, digests):
            engine.pull_checked(f"{name}@{digest}", (USER, registry.password))
        assert not engine.image(pushed).tags
        assert len(engine.client.images.get(pushed).attrs["RepoDigests"]) == 2
        # a container the killed session left, stopped, holds its image in use
        held = engine.api.create_container(f"{dead}/child:1", command=["true"])["Id"]

        cleared = leftovers.sweep(engine)

        assert dead in cleared and alive not in cleared
        names = {t for i in leftovers.images(engine) for t in i.tags}
        assert not [n for n in names if dead in n], sorted(n for n in names if dead in n)
        assert {f"{alive}/child:1", f"127.0.0.1:9/prod/{alive}/child:1"} <= names
        assert engine.image(base_image).id == base                 # the shared base keeps its name
        assert engine.image(child) is None and engine.image(pushed) is None   # the images too
        assert engine.image(step) is None           # and the steps they were built from
        assert engine.api.containers(all=True, filters={"id": held}) == []   # its container first
    finally:
        live.kill()
        live.wait()
    assert alive in leftovers.sweep(engine)                         # dead now: cleared in turn
