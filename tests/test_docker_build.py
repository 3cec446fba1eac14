"""The builder against the real engine: a one-image matrix (Debian + python + cudart)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from imgkit.builder import noopcache
from imgkit.builder.buildenv import BuildEnv, SecretServer, default_ca_bundle
from imgkit.builder.buildx import why_not_buildkit
from imgkit.builder.hostlock import one_build_at_a_time
from imgkit.builder.outcome import BUILT, FAILED, SKIPPED, UP_TO_DATE
from imgkit.builder.scheduler import Builder
from imgkit.labels import INPUT_HASH as INPUT_HASH_LABEL
from imgkit.options import BuildOptions
from imgkit.render.command import render_contexts
from imgkit.selection import Selection

from .helpers.images import MINI_FAMILY, mini_project
from .helpers.leftovers import clear, our_containers
from .helpers.leftovers import images as listed_images

# the legacy builder's own tests
pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("legacy_builder")]


@pytest.fixture(scope="module")
def namespace(namespace, engine, base_image, tmp_path_factory) -> str:
    """The session's namespace as this module's own (`NS-legacy`), its mini chain built by
    the legacy builder first: a test that adds a step to the python layer then finds this
    builder's cache for every step before it. (The session's own chain is BuildKit's, whose
    cache the legacy builder does not read: each such test would build the layer afresh.)"""
    ns = f"{namespace}-legacy"
    engine.tag(engine.image(base_image).id, f"{ns}/debian:bookworm")
    project = mini_project(tmp_path_factory.mktemp("legacy"))
    done = subprocess.run([sys.executable, "-m", "imgkit", "build", "--engine", "docker",
                           "--images", str(project / "images"), "--namespace", ns],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return ns


def build(engine, project: Path, namespace: str, **kw):
    contexts = render_contexts(Selection(project / "images", namespace, templates=project / "templates"))
    env = BuildEnv(ca_bundle=default_ca_bundle(None))
    # the settings server's port is the host's: one legacy build at a time, as imgkit's
    with one_build_at_a_time(lambda _: None), SecretServer(env, engine.bridge_gateway()) as server:
        results = Builder(engine, BuildOptions(jobs=2, **kw), server.extra_hosts,
                          lambda *a: None).run(contexts)
    return contexts, {r.tag: r for r in results}


def test_build_skip_force_and_reproduce(engine, base_image, project, namespace, tmp_path):
    # a namespace of its own: the session's (the mini fixture's) may hold these images already
    namespace = f"{namespace}-fresh"
    engine.tag(engine.image(base_image).id, f"{namespace}/debian:bookworm")
    contexts, results = build(engine, project, namespace)
    assert {r.status for r in results.values()} == {BUILT}, results
    leaf = contexts[-1]
    info = engine.image(leaf.target.tag)
    assert info is not None and info.labels[INPUT_HASH_LABEL] == leaf.input_hash
    assert info.labels["org.imgkit.cudart"] == "11.8.89"

    # a second run builds nothing: every image up to date, the very same images, none new
    # (how fast that is, is the benchmark's to say: bench/build_bench.py)
    def named() -> set[str]:
        return {i.id for i in listed_images(engine) if any(namespace in t for t in i.tags)}
    before = named()
    _, again = build(engine, project, namespace)
    assert {r.status for r in again.values()} == {UP_TO_DATE}
    assert {r.image_id for r in again.values()} <= before
    assert named() == before

    # plain `docker build` (the legacy builder's, which built it) of the rendered context
    # gives the very same image (cache answers), whatever builder the host's CLI prefers
    out = tmp_path / "ctx"
    subprocess.run([sys.executable, "-m", "imgkit", "render", "--images", str(project / "images"),
                    "--namespace", namespace, "--engine", "docker", "--out", str(out)],
                   check=True, capture_output=True)
    ctx_dir = out / leaf.dirname
    # given the build date imgkit gave it: the base's (docs/reproducible.md)
    epoch = engine.image(f"{namespace}/debian:bookworm").created
    proc = subprocess.run(["docker", "build", "-q", "--build-arg", f"SOURCE_DATE_EPOCH={epoch}",
                           str(ctx_dir)], capture_output=True, text=True,
                          env={**os.environ, "DOCKER_BUILDKIT": "0"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == info.id

    # --force rebuilds without the layer cache (a new image: the legacy builder dates each
    # image with the time it built it), retags and leaves no dangling copy of the old image
    _, forced = build(engine, project, namespace, force=True)
    assert {r.status for r in forced.values()} == {BUILT}
    rebuilt = engine.image(leaf.target.tag)
    assert rebuilt is not None and rebuilt.id != info.id
    dangling = listed_images(engine, dangling=True)
    assert info.id not in {d.id for d in dangling}


def test_failed_step_is_reported_and_dependents_skipped(engine, base_image, project, namespace):
    template = project / "templates" / "python.Dockerfile.j2"
    template.write_text(template.read_text().replace(
        # what apt prints for a package its lists lack (a real apt-get needs the mirror)
        "WORKDIR /workspace", "RUN echo imgkit-test-marker && echo 'E: Unable to locate package "
        "imgkit-nope' && exit 7\nWORKDIR /workspace"))
    containers_before = our_containers(engine)
    contexts, results = build(engine, project, namespace)
    root, child = contexts[0].target.tag, contexts[1].target.tag
    assert results[root].status == FAILED and results[child].status == SKIPPED
    error = results[root].error
    assert error is not None and error.reason == "Unable to locate package imgkit-nope"  # apt's words
    assert "RUN echo imgkit-test-marker" in error.step
    assert any("imgkit-test-marker" in line for line in error.log_tail)
    assert "the OS's package lists have no imgkit-nope" in error.hint     # what it means
    assert engine.image(root) is None or engine.image(root).labels.get(INPUT_HASH_LABEL) != \
        contexts[0].input_hash  # no tag points at the failed build
    assert our_containers(engine) <= containers_before
    assert not leftovers(engine, root)


def leftovers(engine, tag: str) -> list[str]:
    """Untagged images a build of `tag` left (`<none>` in `docker images`)."""
    return [i.id for i in listed_images(engine, **{
        "dangling": True, "label": f"org.imgkit.tag={tag}"})]


def test_dry_run_builds_nothing(engine, base_image, project, namespace):
    contexts, results = build(engine, project, namespace + "-dry", dry_run=True)
    assert {r.status for r in results.values()} == {"would-build"}
    assert engine.image(contexts[0].target.tag) is None


def cli_build(project: Path, namespace: str) -> tuple[dict[str, str], str]:
    """`imgkit build` as a user runs it; returns {tag: status} from the summary, and stderr."""
    proc = subprocess.run([sys.executable, "-m", "imgkit", "build", "--images",
                           str(project / "images"), "--namespace", namespace],
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    rows = lines[lines.index(next(x for x in lines if x.startswith("---"))) + 1:]
    return {row.split()[0]: row.split()[1] for row in rows}, proc.stderr


def asked(project: Path, namespace: str) -> list[list[str]]:
    argv = ["build", "--images", str(project / "images"), "--namespace", namespace]
    found = noopcache.plain_build(argv)
    assert found is not None
    return found


def replayed(project: Path, namespace: str, capsys: pytest.CaptureFixture[str]) -> dict[str, str] | None:
    """{tag: status} when the no-op cache answers cli_build's command line here (as that
    imgkit would, in this process: the same folder, variables, Python and imgkit), else None."""
    answered = noopcache.replay(noopcache.entry_name(asked(project, namespace)), time.monotonic())
    out = capsys.readouterr().out
    if not answered:
        assert out == ""
        return None
    lines = out.splitlines()
    rows = lines[lines.index(next(x for x in lines if x.startswith("---"))) + 1:]
    return {row.split()[0]: row.split()[1] for row in rows}


def test_a_noop_answers_from_the_one_cache_yet_sees_every_change(
        engine, base_image, project, namespace, private_cache, capsys):
    statuses, _ = cli_build(project, namespace)
    assert set(statuses.values()) <= {BUILT, UP_TO_DATE} and len(statuses) == 2
    root, leaf = list(statuses)
    fresh = {root: UP_TO_DATE, leaf: UP_TO_DATE}
    # the build that ended up to date wrote down what that rested on: the next no-op is the
    # cache's, with the same summary the full path gives
    assert replayed(project, namespace, capsys) == fresh
    assert replayed(project, namespace, capsys) == fresh        # it holds while all else does
    assert cli_build(project, namespace)[0] == fresh

    engine.remove_image(leaf)                                   # the engine is always asked
    assert replayed(project, namespace, capsys) is None
    statuses, _ = cli_build(project, namespace)
    assert statuses == {root: UP_TO_DATE, leaf: BUILT}
    assert replayed(project, namespace, capsys) == fresh        # written again

    template = project / "templates" / "pip-layer.Dockerfile.j2"  # a changed input is seen
    template.write_text(template.read_text() + "# a comment changes the input hash\n")
    assert replayed(project, namespace, capsys) is None
    statuses, _ = cli_build(project, namespace)
    assert statuses == {root: UP_TO_DATE, leaf: BUILT}
    assert replayed(project, namespace, capsys) == fresh

    (project / "templates").rename(project / "templates.kept")  # the templates/ beside the
    assert replayed(project, namespace, capsys) is None         # matrix chose what renders
    (project / "templates.kept").rename(project / "templates")
    (project / "notes").mkdir()                                 # a folder that chooses nothing
    assert replayed(project, namespace, capsys) == fresh
    os.environ["IMGKIT_INDEX_URL"] = "http://127.0.0.1:9/simple"   # a variable the build reads
    try:
        assert replayed(project, namespace, capsys) is None
    finally:
        del os.environ["IMGKIT_INDEX_URL"]

    # a family that holds its base to an age: the entry keeps when the base was made and
    # the age allowed, and the replay judges the age itself; past it, the build does
    (project / "images" / "mini.yaml").write_text(MINI_FAMILY + "max_base_age: 30d\n")
    assert replayed(project, namespace, capsys) is None          # a changed family file
    statuses, stderr = cli_build(project, namespace)
    assert set(statuses.values()) == {UP_TO_DATE} and "base:" not in stderr, stderr
    assert replayed(project, namespace, capsys) == statuses
    [kept] = [p for p in (private_cache / "noop").glob("*.json")
              if json.loads(p.read_text())["name"] == noopcache.entry_name(asked(project, namespace))]
    body = json.loads(kept.read_text())
    [(base, (made, limit))] = body["bases"].items()
    assert made == engine.made_at(base) and limit == 30
    body["bases"][base][0] -= 31 * 86400
    kept.write_text(json.dumps(body))
    assert replayed(project, namespace, capsys) is None


def test_ctrl_c_stops_a_silent_step_promptly_and_leaves_nothing(
        engine, base_image, project, namespace):
    template = project / "templates" / "python.Dockerfile.j2"
    template.write_text(template.read_text().replace(
        "WORKDIR /workspace", "RUN sleep 600\nWORKDIR /workspace"))
    root = f"{namespace}/python:3.11-bookworm"
    root_before = engine.image(root)
    containers_before = our_containers(engine)
    proc = subprocess.Popen([sys.executable, "-m", "imgkit", "build", "--images",
                             str(project / "images"), "--namespace", namespace],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    try:
        deadline = time.monotonic() + 600
        while not [c for c in our_containers(engine, status="running") - containers_before
                   if "sleep" in str(engine.api.inspect_container(c)["Args"])]:  # the `sleep` step runs
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.5)
        stopped_at = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            _, stderr = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # faulthandler prints every thread's stack
            pytest.fail("Ctrl-C did not stop the build:\n" + proc.communicate(timeout=30)[1])
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert time.monotonic() - stopped_at < 30, "Ctrl-C waited for the step to finish"
    assert "Traceback" not in stderr and "interrupted" in stderr
    assert our_containers(engine) <= containers_before
    assert not leftovers(engine, root)
    after = engine.image(root)  # the tag still points where it did: never at a half-built image
    assert (after.id if after else None) == (root_before.id if root_before else None)


def test_stop_requested_between_steps_still_kills_the_step_that_starts_next(
        engine, base_image, project, namespace):
    # The stop comes while no step container runs (a quick step just printed); the silent
    # step after it starts only then. The build must end with it killed, not running on.
    template = project / "templates" / "python.Dockerfile.j2"
    template.write_text(template.read_text().replace(
        "WORKDIR /workspace", "RUN echo imgkit-stop-here\nRUN sleep 600\nWORKDIR /workspace"))
    contexts = render_contexts(Selection(project / "images", namespace, templates=project / "templates"))
    root = contexts[0].target.tag
    root_before = engine.image(root)
    containers_before = our_containers(engine)

    def listener(tag: str, event: str, text: str) -> None:
        if event == "log" and text.strip() == "imgkit-stop-here":
            builder.cancel.set()  # what Ctrl-C does, from a build's own log line

    builder = Builder(engine, BuildOptions(jobs=2), {}, listener)
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        builder.run(contexts)
    assert time.monotonic() - start < 120, "the silent step ran on after the stop"
    assert our_containers(engine) <= containers_before
    assert not leftovers(engine, root)
    after = engine.image(root)
    assert (after.id if after else None) == (root_before.id if root_before else None)


def test_the_os_axis_is_real_a_trixie_image_builds_and_loads_cuda(
        engine, base_image, project, namespace):
    """Another OS than the bundled bookworm: its own base (mmdebstrap when no registry),
    its own python (3.13), the same templates; the CUDA runtime loads as the non-root user."""
    from imgkit.builder.base import ensure_base
    from imgkit.matrix import compat
    from imgkit.matrix.plan import Settings, base_ref
    trixie = compat.load().os_release("trixie")
    shared = base_ref(trixie, Settings())  # made once per machine, like the bookworm base
    ensure_base(engine, shared, trixie)
    engine.tag(engine.image(shared).id, base_ref(trixie, Settings(namespace)))
    (project / "images" / "mini.yaml").write_text(
        (project / "images" / "mini.yaml").read_text() + '  os: ["trixie"]\n')
    statuses, _ = cli_build(project, namespace)
    assert statuses == {f"{namespace}/python:3.13-trixie": BUILT,
                        f"{namespace}/cuda:11.8-cudart-py3.13-trixie": BUILT}
    code = ("import ctypes, os, sys; ctypes.CDLL('libcudart.so'); "
            "print(os.getuid(), '%d.%d' % sys.version_info[:2], open('/etc/debian_version').read())")
    out = engine.client.containers.run(f"{namespace}/cuda:11.8-cudart-py3.13-trixie",
                                       ["python3", "-c", code], remove=True).decode().split()
    assert out[0] != "0" and out[1] == "3.13" and out[2].startswith("13")
    sources = engine.client.containers.run(base_ref(trixie, Settings()),
                                           ["cat", "/etc/apt/sources.list"], remove=True).decode()
    assert "trixie-updates" in sources


def test_a_pulled_base_that_already_has_uid_1000_still_gets_our_user(
        engine, base_image, project, namespace):
    """ubuntu:24.04 from a registry ships user `ubuntu` with uid 1000; the python layer
    replaces it. Simulated on the local base: no registry is needed for the test."""
    ns = namespace + "-uid"
    base = engine.client.containers.run(base_image, ["useradd", "--uid", "1000", "ubuntu"],
                                        detach=True)
    try:
        base.wait(timeout=60)
        base.commit(f"{ns}/debian", "bookworm")
    finally:
        base.remove(force=True)
    try:
        statuses, _ = cli_build(project, ns)
        assert set(statuses.values()) == {BUILT}
        leaf = [t for t in statuses if "/cuda:" in t][0]
        out = engine.client.containers.run(leaf, ["id"], remove=True).decode()
        assert out.startswith("uid=1000(imgkit)"), out
    finally:
        clear(engine, lambda name: name.startswith(ns + "/"))


def test_ctrl_c_as_two_builds_end_together_leaves_no_untagged_image(
        engine, base_image, project, namespace):
    """Two sibling images finish, then the stop comes: both workers clean up at once. With an
    engine-wide prune the second was refused and a finished image stayed <none>."""
    two = MINI_FAMILY.replace('cuda: ["11.8"]', 'cuda: ["12.1", "12.4"]')  # siblings built nowhere else
    (project / "images" / "mini.yaml").write_text(two)
    contexts = render_contexts(Selection(project / "images", namespace, templates=project / "templates"))
    siblings = [c.target.tag for c in contexts if c.target.layer == "cuda"]
    assert len(siblings) == 2
    finished: set[str] = set()
    # Each build, once its image exists, waits for the other; the stop (what Ctrl-C does)
    # comes before either goes on, so both clean up at the same moment.
    both_built = threading.Barrier(2, action=lambda: builder.cancel.set(), timeout=600)

    def listener(tag: str, event: str, text: str) -> None:
        if event == "log" and text.startswith("Successfully built") and tag in siblings:
            finished.add(tag)
            both_built.wait()

    with one_build_at_a_time(lambda _: None), \
            SecretServer(BuildEnv(ca_bundle=default_ca_bundle(None)), engine.bridge_gateway()) as server:
        builder = Builder(engine, BuildOptions(jobs=2), server.extra_hosts, listener)
        with pytest.raises(KeyboardInterrupt):
            builder.run(contexts)
    assert finished == set(siblings)
    for tag in siblings:
        assert engine.image(tag) is None
        assert leftovers(engine, tag) == [], tag


class CuttableProxy:
    """A unix socket in front of the engine's, whose connections can be cut at once, as
    when dockerd restarts in the middle of a build."""

    def __init__(self, path: Path, upstream: str = "/var/run/docker.sock") -> None:
        import socket
        import threading
        self.path, self.upstream = path, upstream
        self.seen = b""
        self.pairs: list[tuple[socket.socket, socket.socket]] = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            engine_side = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            engine_side.connect(self.upstream)
            self.pairs.append((client, engine_side))
            threading.Thread(target=self._pump, args=(client, engine_side, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(engine_side, client, True), daemon=True).start()

    def _pump(self, source, sink, record: bool) -> None:
        import socket
        try:
            while chunk := source.recv(65536):
                if record:
                    self.seen = (self.seen + chunk)[-65536:]
                sink.sendall(chunk)
            sink.shutdown(socket.SHUT_WR)  # pass the end of a reply on, as HTTP/1.0 needs
        except OSError:
            pass

    def cut(self) -> None:
        import socket
        self.server.close()
        for pair in self.pairs:
            for sock in pair:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                    sock.close()
                except OSError:
                    pass


def test_an_engine_lost_mid_build_is_exit_3_with_a_clear_message(
        engine, base_image, project, namespace, tmp_path):
    template = project / "templates" / "python.Dockerfile.j2"
    template.write_text(template.read_text().replace(
        "WORKDIR /workspace", "RUN echo imgkit-cut-here && sleep 20\nWORKDIR /workspace"))
    # a short path (a unix socket's is limited), removed after: not under tmp_path
    folder = Path(tempfile.mkdtemp(prefix="imgkit-proxy-"))
    proxy = CuttableProxy(folder / "docker.sock")
    proc = subprocess.Popen([sys.executable, "-m", "imgkit", "build", "--images", str(project / "images"),
                             "--namespace", namespace], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "DOCKER_HOST": f"unix://{proxy.path}"})
    try:
        deadline = time.monotonic() + 600
        while b"imgkit-cut-here" not in proxy.seen:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.2)
        proxy.cut()
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(folder, ignore_errors=True)
    assert proc.returncode == 3, stderr
    assert "Traceback" not in stderr
    assert "the Docker engine stopped answering while building" in stderr and "dockerd" in stderr


def test_the_next_build_removes_step_containers_an_interrupted_one_left(
        engine, base_image, project, namespace):
    contexts = render_contexts(Selection(project / "images", namespace, templates=project / "templates"))
    root = contexts[0].target.tag
    # what a daemon restart in the middle of a step leaves: a stopped container of the step,
    # made from an untagged image, with the build's labels
    left = engine.api.create_container(engine.image(base_image).id, command=["true"],
                                       labels={"org.imgkit.tag": root})["Id"]
    engine.api.start(left)
    engine.api.wait(left, timeout=60)
    try:
        result = subprocess.run([sys.executable, "-m", "imgkit", "build", "--images", str(project / "images"),
                                 "--namespace", namespace, "--force", "--only", root],
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr
        assert "removed 1 stopped build step container" in result.stderr
        assert engine.api.containers(all=True, filters={"id": left}) == []
    finally:
        engine.remove_container(left)



def test_an_image_over_its_size_budget_fails_the_build_naming_budget_and_layers(
        engine, base_image, project, namespace, tmp_path):
    """Built or up to date, an image heavier than its family allows fails the build (exit 1)
    with the budget, its file and the heaviest steps; within budget, the no-op path answers
    and the summary says what each image adds. `imgkit size` lists the steps that weigh most."""
    statuses, _ = cli_build(project, namespace)
    root, leaf = list(statuses)
    family = project / "images" / "mini.yaml"

    def build_with_budget(budget: str) -> subprocess.CompletedProcess[str]:
        family.write_text(MINI_FAMILY + f"size_budget: {budget}\n")
        return subprocess.run([sys.executable, "-m", "imgkit", "build", "--images",
                               str(project / "images"), "--namespace", namespace,
                               "--json", str(tmp_path / "b.json")],
                              capture_output=True, text=True, timeout=1200)

    out = build_with_budget("10MB")
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"{leaf} is " in out.stderr and f"over its size_budget of 10.0 MB ({family})" in out.stderr
    assert "heaviest layers" in out.stderr and "RUN " in out.stderr
    assert f"{root} is " not in out.stderr                      # the budget binds the named image

    out = build_with_budget("5GB")
    assert out.returncode == 0, out.stdout + out.stderr
    again = build_with_budget("5GB")                            # the no-op fast path
    assert again.returncode == 0 and "building" not in again.stderr
    images = {i["tag"]: i for i in json.loads((tmp_path / "b.json").read_text())["images"]}
    root_info, leaf_info = engine.image(root), engine.image(leaf)
    assert images[leaf]["added"] == leaf_info.size - root_info.size > 1 << 20   # the CUDA runtime

    out = subprocess.run([sys.executable, "-m", "imgkit", "size", leaf, "--top", "3", "--json",
                          str(tmp_path / "s.json")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "its own layers add" in out.stdout and root in out.stdout
    steps = json.loads((tmp_path / "s.json").read_text())["steps"]
    assert sum(s["size"] for s in steps) == leaf_info.size
    assert sum(s["size"] for s in steps if s["own"]) == leaf_info.size - root_info.size
    out = subprocess.run([sys.executable, "-m", "imgkit", "size", f"{namespace}/none:1"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "not found in the local engine" in out.stderr


def test_an_extension_family_builds_on_its_parent_and_keeps_its_stack(
        engine, base_image, project, namespace, tmp_path):
    """A child layer of every image it extends: pinned pip packages, a file from beside the
    matrix, environment, a port and the default command, as the non-root user; verify
    compares its libraries with the parent's recorded verdict and runs pip check."""
    images = project / "images"
    (images / "hello.txt").write_text("hi from beside the matrix\n")
    (images / "ext.yaml").write_text(json.dumps({
        "family": "ext", "extends": {"family": "mini"}, "repository": f"{namespace}/ext",
        "pip": ["six==1.16.0"], "files": {"hello.txt": "/etc/imgkit-ext/hello.txt"},
        "env": {"GREETING": "hello world"}, "ports": [8080],
        "cmd": ["python3", "-c", "import os, six; print(six.__version__, os.getuid(), "
                "os.environ['GREETING'], open('/etc/imgkit-ext/hello.txt').read().strip())"]}))
    statuses, _ = cli_build(project, namespace)
    parent = f"{namespace}/cuda:11.8-cudart-py3.11-bookworm"
    ext = f"{namespace}/ext:11.8-cudart-py3.11-bookworm"
    assert list(statuses)[-1] == ext and statuses[ext] == BUILT
    out = engine.client.containers.run(ext, remove=True).decode().strip()
    assert out == "1.16.0 1000 hello world hi from beside the matrix"
    info = engine.image(ext)
    assert info.layers[: len(engine.image(parent).layers)] == engine.image(parent).layers
    assert info.labels["org.imgkit.pip.six"] == "1.16.0" and info.labels["org.imgkit.layer"] == "extension"
    assert "8080/tcp" in engine.client.images.get(ext).attrs["Config"]["ExposedPorts"]

    def verify(ref: str) -> dict[str, str]:
        proc = subprocess.run([sys.executable, "-m", "imgkit", "verify", ref, "--gpus", "none",
                               "--json", str(tmp_path / "v.json")], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return {c["name"]: c["verdict"] for c in json.loads((tmp_path / "v.json").read_text())["checks"]}
    assert verify(ext)["parent-stack"] == "skip"         # the parent was never verified here
    verify(parent)
    checks = verify(ext)
    assert checks["parent-stack"] == "pass" and checks["pip.check"] == "pass"


def test_a_second_build_waits_for_the_first_instead_of_failing(
        engine, base_image, project, namespace):
    """Two builds on one host: the second says it waits, then builds once the first is done
    (here the first is this test, holding the host's build lock)."""
    contexts, _ = build(engine, project, namespace)
    root = contexts[0].target.tag
    engine.untag(root)          # out of date: the next build makes it again (from the layer cache)
    command = [sys.executable, "-m", "imgkit", "build", "--images", str(project / "images"),
               "--namespace", namespace, "--only", root]
    with one_build_at_a_time(lambda _: None):
        second = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert second.stderr is not None
            said = ""
            deadline = time.monotonic() + 120
            while "waiting" not in said and time.monotonic() < deadline and second.poll() is None:
                said += second.stderr.readline()
            assert "another imgkit build is building on this host" in said, said
            time.sleep(1)
            assert second.poll() is None and engine.image(root) is None   # still waiting
        except BaseException:
            second.kill()
            raise
    out, err = second.communicate(timeout=600)
    assert second.returncode == 0, said + err
    assert engine.image(root) is not None


@pytest.mark.parametrize("cuda, cudart", [("13.0", "13.0.96"), ("13.5", "13.5.37")])
def test_a_cuda_13_layer_builds_from_the_unsuffixed_wheels_and_verifies(
        engine, base_image, project, namespace, cuda, cudart):
    """CUDA 13's wheels drop the -cuXX suffix and keep their libraries in nvidia/cu13/lib:
    the layer must pin the right name and the image must still verify as its release (13.0,
    and today's newest, 13.5)."""
    from imgkit.verify.run import VerifyOptions, verify
    (project / "images" / "mini.yaml").write_text(MINI_FAMILY.replace('"11.8"', f'"{cuda}"'))
    contexts, results = build(engine, project, namespace)
    tag = contexts[-1].target.tag
    assert results[tag].status == BUILT, results[tag]
    assert f"nvidia-cuda-runtime=={cudart}" in contexts[-1].target.packages
    verdict = verify(engine, tag, VerifyOptions(gpus="none"))
    assert not verdict.failed, verdict.failed
    checks = {c.name: c for c in verdict.checks}
    assert checks["cudart.version"].measured == cuda, checks["cudart.version"]
    assert verdict.facts is not None
    paths = [c.realpath for c in verdict.facts.libraries.copies("cudart")]
    assert paths and all("/nvidia/cu13/lib/" in p for p in paths), paths


def test_refresh_base_makes_the_base_again_and_the_chain_rebuilds_on_it(
        engine, base_image, project, namespace):
    """--refresh-base: the base is made again (mmdebstrap here, with the Date: of the
    Release it came from), the python layer and what stands on it rebuild when it is a new
    base, and the next plain build finds everything up to date."""
    ns = namespace + "-fresh"
    base = f"{ns}/debian:bookworm"
    engine.tag(engine.image(base_image).id, base)
    args = [sys.executable, "-m", "imgkit", "build", "--images", str(project / "images"),
            "--templates", str(project / "templates"), "--namespace", ns]
    try:
        first = subprocess.run(args, capture_output=True, text=True)
        assert first.returncode == 0, first.stdout + first.stderr
        old = engine.image(base)
        refreshed = subprocess.run([*args, "--refresh-base", "--json", str(project / "r.json"),
                                    "--engine", "auto"], capture_output=True, text=True)
        assert refreshed.returncode == 0, refreshed.stdout + refreshed.stderr
        assert f"making {base} again (--refresh-base)" in refreshed.stderr
        new = engine.image(base)
        assert new is not None and old is not None
        assert new.labels.get("org.imgkit.base.release-date", "unknown") != "unknown"
        rows = json.loads((project / "r.json").read_text())["images"]
        # made from the same mirror state as the session's, it is the same image
        # (docs/reproducible.md) and nothing above it is out of date; from a mirror that moved
        # since, a new one, and the chain rebuilds on it
        same = new.id == old.id
        assert {r["status"] for r in rows} == ({UP_TO_DATE} if same else {BUILT}), (same, rows)
        # --engine auto: BuildKit where it can build here, else the legacy builder, saying why
        builder = json.loads((project / "r.json").read_text())["builder"]
        assert builder == ("docker" if why_not_buildkit(engine, None) else "buildx")
        if not same:
            assert ("legacy builder builds: " in refreshed.stderr) == (builder == "docker")
        again = subprocess.run(args, capture_output=True, text=True)
        assert again.returncode == 0 and "up-to-date" in again.stdout, again.stdout
        assert engine.image(base_image) is not None          # the shared base is still there
    finally:
        clear(engine, lambda name: name.startswith(ns))
