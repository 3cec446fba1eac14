"""Same inputs, same image, on the real engine: the mini chain (python, the CUDA runtime)
built again from nothing by `imgkit reproduce` is the same image; a step that writes the
build time is named, its file and what differs; a base made twice by mmdebstrap is the
same image; an input that moved is exit 3 before anything is built. Nothing is left."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Iterator

import pytest

from imgkit import labels, reproduction

from .helpers.images import MiniStack, mini_project

pytestmark = pytest.mark.docker

LEAK = """\
family: leak
extends: {family: mini}
repository: NAMESPACE/leak
tag: "{parent_tag}"
files: {marker.txt: /opt/team/marker.txt}
run: ["date +%s%N > /opt/built-at"]
"""


@pytest.fixture(autouse=True)
def no_records_left() -> Iterator[None]:
    """What `imgkit reproduce` records of an image (by its id) goes with the test: the mini
    chain is the worker's, and a later test's verdict of it would carry a `reproduced` check
    it did not earn (the bake test, which compares its verdict with the mini image's, met
    one when this module ran first)."""
    yield
    shutil.rmtree(reproduction.records(), ignore_errors=True)    # the tests' own cache


def reproduce(project: Path, namespace: str, image: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "imgkit", "reproduce", image, "--images",
                           str(project / "images"), "--namespace", namespace],
                          capture_output=True, text=True, timeout=900, cwd=project)


def reproduced_check(image: str, tmp_path: Path) -> dict:
    """The `reproduced` check of a verdict of `image` made now."""
    out = tmp_path / "verdict.json"
    verified = subprocess.run([sys.executable, "-m", "imgkit", "verify", image, "--gpus", "none",
                               "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    [check] = [c for c in json.loads(out.read_text())["checks"] if c["name"] == "reproduced"]
    return check


def throwaways(engine) -> list[str]:
    return [t for image in engine.client.images.list() for t in image.tags
            if t.startswith("imgkit-reproduce/")]


def test_the_mini_chain_built_again_from_nothing_is_the_same_image(engine, mini_stack: MiniStack,
                                                                  namespace, tmp_path):
    project = mini_project(tmp_path)
    before = {tag: engine.image(tag).id for tag in (mini_stack.python, mini_stack.mini)}
    done = reproduce(project, namespace, mini_stack.mini)
    assert done.returncode == 0, done.stdout + done.stderr
    for tag, image_id in before.items():
        assert f"{tag}: the same image ({image_id[:19]})" in done.stdout
        assert engine.image(tag).id == image_id            # the user's tags are untouched
    assert "no lock" in done.stderr                        # what floats is said
    assert throwaways(engine) == []
    # the verdict records it, saying what floats, and promote can require it
    check = reproduced_check(mini_stack.mini, tmp_path)
    assert check["verdict"] == "pass" and "built again with no cache" in check["measured"]
    assert "unlocked" in check["measured"], check


def test_a_step_that_writes_the_build_time_is_named_with_its_file(engine, mini, namespace,
                                                                  tmp_path):
    project = mini_project(tmp_path)
    (project / "images" / "leak.yaml").write_text(LEAK.replace("NAMESPACE", namespace))
    (project / "images" / "marker.txt").write_text("the team's file\n")
    built = subprocess.run([sys.executable, "-m", "imgkit", "build", "--images",
                            str(project / "images"), "--namespace", namespace],
                           capture_output=True, text=True, timeout=900, cwd=project)
    assert built.returncode == 0, built.stdout + built.stderr
    leak = f"{namespace}/leak:11.8-cudart-py3.11-bookworm"
    done = reproduce(project, namespace, leak)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{mini}: the same image" in done.stdout          # the file the team copies in too
    assert f"{leak}: differs" in done.stdout
    named = [line.strip() for line in done.stdout.splitlines() if line.startswith("    ")]
    assert named == ["opt/built-at: content"], done.stdout   # same size, same time: content
    assert throwaways(engine) == []
    from imgkit.reproduction import lookup
    assert lookup(engine.image(leak).id) is None             # nothing for verify to record


def test_an_image_built_from_other_inputs_is_the_hosts_exit_3_before_any_build(
        engine, mini, namespace, tmp_path):
    project = mini_project(tmp_path)
    python = project / "templates" / "python.Dockerfile.j2"
    python.write_text(python.read_text().replace("chown imgkit:imgkit /workspace",
                                                 "chown imgkit:imgkit /workspace && true"))
    done = reproduce(project, namespace, mini)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "was built from other inputs" in done.stderr and "Traceback" not in done.stderr
    other = reproduce(project, namespace, "nothing:1")
    assert other.returncode == 2 and "is not an image of this matrix" in other.stderr


def test_a_base_made_twice_by_mmdebstrap_is_the_same_image(engine, base_image, namespace):
    from imgkit.builder.base import make_base, pick_mirror, pick_security_mirror
    from imgkit.matrix import compat
    bookworm = compat.load().os_release("bookworm")
    mirror = pick_mirror("debian", {})
    if mirror is None:
        pytest.fail("no Debian mirror in the host's apt sources (the session's base needs one too)")
    security = pick_security_mirror("debian", mirror, {})
    refs = [f"{namespace}/made:{n}" for n in (1, 2)]
    errors: list[BaseException] = []

    def make(ref: str) -> None:
        try:
            make_base(engine, ref, bookworm, mirror, lambda _: None, security=security)
        except BaseException as exc:       # noqa: BLE001 - handed to the test's thread
            errors.append(exc)
    threads = [threading.Thread(target=make, args=(ref,)) for ref in refs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    first, second = (engine.image(ref) for ref in refs)
    assert first.id == second.id and first.layers == second.layers
    # the tool and its version: another version may make other bytes
    made_by = subprocess.run(["mmdebstrap", "--version"], capture_output=True, text=True).stdout.split()
    assert first.labels[labels.BASE_SOURCE] == f"mmdebstrap {made_by[1]} bookworm {mirror}, " \
        f"bookworm-updates {mirror}" + (f", bookworm-security {security}" if security else "")
    # every pocket went into it: apt finds nothing newer (the python layer's upgrade is empty)
    upgradable = subprocess.run(["docker", "run", "--rm", refs[0], "sh", "-c",
                                 "apt-get update -qq && apt list --upgradable 2>/dev/null"],
                                capture_output=True, text=True, timeout=300)
    assert upgradable.returncode == 0, upgradable.stderr
    assert upgradable.stdout.strip() == "Listing...", upgradable.stdout


def test_reproduce_on_a_second_engine_gives_the_same_mini_chain(engine, mini_stack: MiniStack,
                                                                namespace, tmp_path):
    """The second machine, as near as one host gets: `imgkit reproduce --on` another Docker
    engine with its own data-root, BuildKit cache and bridge, reached as another machine's
    is, over ssh (imgkit's ssh bridge and buildx both through the ssh client; the far
    side's sshd runs `docker system dial-stdio`). The base (an input; made by mmdebstrap it is the same
    image, above) is copied there under a throwaway name, the chain is built there from
    nothing, and each image is the same id as this engine's (built without the layer cache,
    conftest's mini_stack). Nothing is left on either engine; the verdict names the other
    engine as the builder. A key sshd refuses is exit 3 in ssh's words, and so is an
    address that does not answer, over TCP."""
    from .helpers.second_engine import free_port, second_engine
    from .helpers.ssh_route import ssh_route
    project = mini_project(tmp_path)
    ours = {tag: engine.image(tag).id for tag in (mini_stack.python, mini_stack.mini)}
    with second_engine() as other, ssh_route(other.unix, tmp_path / "ssh") as route:
        done = subprocess.run([sys.executable, "-m", "imgkit", "reproduce", mini_stack.mini,
                               "--images", str(project / "images"), "--namespace", namespace,
                               "--on", route.address], capture_output=True, text=True, timeout=900,
                              cwd=project, env=route.environ)
        left = subprocess.run(["docker", "-H", other.tcp, "image", "ls", "-aq"], capture_output=True,
                              text=True).stdout.split()
        refused = subprocess.run([sys.executable, "-m", "imgkit", "reproduce", mini_stack.mini,
                                  "--images", str(project / "images"), "--namespace", namespace,
                                  "--on", route.refused], capture_output=True, text=True,
                                 timeout=120, cwd=project, env=route.environ)
    assert done.returncode == 0, done.stdout + done.stderr
    for tag, image_id in ours.items():
        assert f"{tag}: the same image ({image_id[:19]})" in done.stdout
        assert engine.image(tag).id == image_id            # the user's tags are untouched
    assert f"on the engine at {route.address}" in done.stderr and left == [], left
    assert throwaways(engine) == []
    assert f"at {route.address}" in reproduced_check(mini_stack.mini, tmp_path)["measured"]
    # ssh's own words, not a broken pipe
    assert refused.returncode == 3 and "Permission denied (publickey" in refused.stderr, refused.stderr
    closed = f"tcp://127.0.0.1:{free_port()}"
    gone = subprocess.run([sys.executable, "-m", "imgkit", "reproduce", mini_stack.mini, "--images",
                           str(project / "images"), "--namespace", namespace, "--on", closed],
                          capture_output=True, text=True, timeout=120, cwd=project)
    assert gone.returncode == 3 and closed in gone.stderr, gone.stderr
