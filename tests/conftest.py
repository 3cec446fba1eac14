"""Shared fixtures. Docker tests use the real engine, real images and real containers;
every image they make lives under a per-session namespace and is removed afterwards."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pytest

from .helpers import leftovers
from .helpers.buildkit import CONFIG, SOCKET, BuildKit
from .helpers.images import MINI_FAMILY, MiniStack, mini_project
from .helpers.pipelines import forget
from .helpers.registry import Registry, start_registry
from .helpers.scanner import ScanImages, make_scan_images

# A run started in the background by a shell without job control (`cmd &` in a script, as
# CI launchers do) inherits Ctrl-C as ignored, and so would every imgkit the tests start:
# the Ctrl-C tests would then interrupt nothing. Python's own handler is put back here;
# across exec a handled signal becomes the default again, and a child Python handles it.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# The files that take longest (CI's `--durations=0`, summed per file), longest first. Each
# worker takes a whole file as it runs short (`--dist loadfile`), in collection order
# (`--no-loadscope-reorder`; xdist's own order is by number of tests, which put these few-test
# files last): a long file taken last runs alone while the other worker has nothing left.
# Those that wait for a tool `make test` sets up in the background (Podman, osv-scanner,
# gitlab-ci-local: minutes on a fresh machine) come after the first few, not first.
LONGEST_FIRST = (
    "test_docker_arm64.py", "test_docker_build.py", "test_docker_reproducible.py",
    "test_docker_buildkit.py", "test_docker_gitlab_runner.py", "test_podman.py",
    "test_docker_declared.py", "test_docker_lock.py", "test_docker_pipeline.py",
    "test_docker_publish.py", "test_docker_reuse.py", "test_docker_scan.py",
    "test_docker_base.py", "test_docker_verify.py",
)


def file_rank(item: pytest.Item, engine_files: set[Path]) -> tuple[int, int]:
    """Where `item`'s file goes: the longest files in their order, then the other files
    with engine tests, then the files without (short: they fill the end)."""
    if item.path.name in LONGEST_FIRST:
        return (0, LONGEST_FIRST.index(item.path.name))
    return (1, 0) if item.path in engine_files else (2, 0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    engine_files = {item.path for item in items if item.get_closest_marker("docker")}
    items.sort(key=lambda item: file_rank(item, engine_files))    # stable: a file stays whole
    if os.environ.get("IMGKIT_SKIP_SLOW") == "1":
        skip = pytest.mark.skip(reason="IMGKIT_SKIP_SLOW=1")
        for item in items:
            if "slow" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Tests (and the imgkit processes they start) keep their caches to themselves."""
    path = tmp_path_factory.mktemp("cache")
    old = os.environ.get("IMGKIT_CACHE_DIR")
    os.environ["IMGKIT_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        del os.environ["IMGKIT_CACHE_DIR"]
    else:
        os.environ["IMGKIT_CACHE_DIR"] = old


@pytest.fixture(scope="session", autouse=True)
def the_users_builder() -> Iterator[None]:
    """`imgkit build` in the tests builds as a user's does: `--engine auto`, BuildKit where
    the engine has buildx (CI's has). BuildKit's cache is the engine's, shared by every
    namespace: a test's own namespace gets the mini chain in about a second from cached
    steps, where the legacy builder (whose steps start with each namespace's labels) spent
    17 s. The legacy builder's own tests (its scheduler and step containers, Ctrl-C, the
    settings server, the host lock, a plain `docker build` of a rendered context) ask for
    it with the `legacy_builder` fixture; the BuildKit tests say --engine themselves."""
    old = os.environ.pop("IMGKIT_ENGINE", None)
    yield
    if old is not None:
        os.environ["IMGKIT_ENGINE"] = old


@pytest.fixture()
def legacy_builder(monkeypatch: pytest.MonkeyPatch) -> None:
    """This test's `imgkit build` runs drive the engine's legacy builder."""
    monkeypatch.setenv("IMGKIT_ENGINE", "docker")


@pytest.fixture()
def registry(tmp_path: Path) -> Iterator[Registry]:
    """A real registry (Debian's docker-registry, htpasswd auth) on a free loopback port,
    removed with its storage afterwards."""
    running = start_registry(tmp_path / "registry-a")
    yield running
    running.remove()


@pytest.fixture(scope="session")
def engine():
    from imgkit.engine import connect
    from imgkit.errors import EngineUnavailable
    try:
        engine = connect()
    except EngineUnavailable as exc:
        if os.environ.get("CI"):
            raise  # CI must run the real-engine tests, never skip them
        pytest.skip(f"no Docker engine: {exc}")
    leftovers.sweep(engine)        # what killed sessions left, before anything is judged
    return engine


def current_base(engine, ref: str, os_release, platform: str | None = None) -> None:
    """ensure_base, but a base this machine kept from before imgkit took every pocket (its
    source label names the release alone) is made again once: each python layer on it would
    first upgrade what -updates and -security replaced (6 s natively, 39 s under QEMU)."""
    from imgkit import labels
    from imgkit.builder.base import ensure_base
    info = engine.image(ref)
    source = info.labels.get(labels.BASE_SOURCE, "") if info is not None else ""
    if source.startswith("mmdebstrap") and f"{os_release.name}-security" not in source:
        engine.untag(ref)
    ensure_base(engine, ref, os_release, platform=platform)


@pytest.fixture(scope="session")
def base_image(engine) -> str:
    """The real Debian base every layer starts from (mmdebstrap when no registry)."""
    from imgkit.matrix import compat
    from imgkit.matrix.plan import Settings, base_ref
    bookworm = compat.load().os_release("bookworm")
    ref = base_ref(bookworm, Settings())
    current_base(engine, ref, bookworm)
    return ref


@pytest.fixture(scope="session")
def namespace(engine, base_image) -> Iterator[str]:
    """A unique repository prefix (its base is the shared Debian base, tagged again);
    every image under it (its own `NS-…` namespaces and its pushes' `HOST/…/NS…` names
    included) is removed at the end."""
    ns = leftovers.claim("imgkit-test")
    engine.tag(engine.image(base_image).id, f"{ns}/debian:bookworm")
    yield ns
    # only ours, by name: the shared base keeps its own
    leftovers.clear(engine, lambda name: name.startswith(ns) or f"/{ns}" in name)


@pytest.fixture(scope="session")
def arm64_base(engine, namespace) -> str:
    """Debian 12 arm64 from mmdebstrap (its packages' scripts under QEMU, ~1 min the first time:
    the base is kept, as the amd64 one is), also tagged as the test namespace's."""
    from imgkit.matrix import compat
    from imgkit.matrix.plan import Settings, base_ref
    from imgkit.platforms import local_ref
    bookworm = compat.load().os_release("bookworm")
    base = local_ref(base_ref(bookworm, Settings()), "linux/arm64")
    current_base(engine, base, bookworm, platform="linux/arm64")
    info = engine.image(base)
    assert info is not None and info.platform == "linux/arm64"  # the config's, not the host's
    engine.tag(info.id, f"{namespace}/debian:bookworm-arm64")
    return base


@dataclass(frozen=True)
class TwoPlatforms:
    common: list[str]        # --images/--namespace of the family
    namespace: str           # where its images are (one of its own)
    cuda: str                # the host's image; the arm64 one is f"{cuda}-arm64"
    first: dict[str, str]    # tag -> status of the first build
    build: Callable[[], subprocess.CompletedProcess[str]]
    report: Path


@pytest.fixture(scope="session")
def two_platforms(engine, namespace, arm64_base, tmp_path_factory) -> TwoPlatforms:
    """`imgkit build` of a family for both platforms, once for the session: the arm64 tests
    stand on it, and the BuildKit one builds its own CUDA images on its python layers. (A
    namespace of its own: other modules expect the session's namespace to build its python
    layer themselves.)"""
    own = f"{namespace}-platforms"
    for ref in (f"{namespace}/debian:bookworm", arm64_base):
        engine.tag(engine.image(ref).id, f"{own}/debian:bookworm" + ("-arm64" if ref == arm64_base else ""))
    tmp_path = tmp_path_factory.mktemp("platforms")
    images = tmp_path / "images"
    images.mkdir()
    (images / "mini.yaml").write_text("family: mini\ncuda_libs: [cudart]\n"
                                      "platforms: [linux/amd64, linux/arm64]\n"
                                      "axes:\n  cuda: [\"12.8\"]\n")
    common = ["--images", str(images), "--namespace", own]
    report = tmp_path / "build.json"

    def build() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "imgkit", "build", *common, "--json", str(report)],
                              capture_output=True, text=True, timeout=1800)
    done = build()
    assert done.returncode == 0, done.stdout + done.stderr
    built = {i["tag"]: i["status"] for i in json.loads(report.read_text())["images"]}
    cuda = next(t for t in built if "/cuda:" in t and not t.endswith("-arm64"))
    return TwoPlatforms(common, own, cuda, built, build, report)


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    return mini_project(tmp_path)


@pytest.fixture(scope="session")
def mini_stack(engine, base_image, namespace, tmp_path_factory) -> MiniStack:
    """A real imgkit image: Debian + python3 + the CUDA 11.8 runtime wheel, and its parent,
    built by `imgkit build` as a user would, without the layer cache (`--force`): an unlocked
    python layer takes the day's security fixes, and one cached on an earlier day would hold
    fewer of them than its rebuild (`imgkit reproduce`) or `imgkit outdated` sees today."""
    project = tmp_path_factory.mktemp("mini")
    (project / "images").mkdir()
    (project / "images" / "mini.yaml").write_text(MINI_FAMILY)
    report = project / "build.json"
    done = subprocess.run([sys.executable, "-m", "imgkit", "build", "--images", str(project / "images"),
                           "--namespace", namespace, "--json", str(report), "--force"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    tags = [i["tag"] for i in json.loads(report.read_text())["images"]]
    return MiniStack(python=next(t for t in tags if "/python:" in t),
                     mini=next(t for t in tags if "/cuda:" in t))


@pytest.fixture(scope="session")
def mini(mini_stack: MiniStack) -> str:
    return mini_stack.mini


@pytest.fixture(scope="session")
def scan_images(engine, mini_stack: MiniStack, namespace) -> ScanImages:
    """Images whose Python packages and Debian package database sit on each side of every
    range of tests/data/advisories, for either scanner."""
    return make_scan_images(engine, mini_stack.python, namespace)


@pytest.fixture()
def pipeline_ns(engine, base_image) -> Iterator[str]:
    """A namespace of its own (its images are removed between jobs), on the shared base."""
    ns = leftovers.claim("imgkit-pipe")
    engine.tag(engine.image(base_image).id, f"{ns}/debian:bookworm")
    yield ns
    engine.remove_image(f"{ns}/debian:bookworm")    # the tag only: the base is shared
    forget(engine, ns, "")


@pytest.fixture(scope="session")
def buildkit(base_image: str) -> Iterator[BuildKit]:
    """The BuildKit engine, with the session's Debian base loaded under our namespace and as
    the registry name the bake export points at; every image of the namespace removed after."""
    env = dict(os.environ)
    env.update({k: v for k, v in (("DOCKER_HOST", SOCKET), ("DOCKER_CONFIG", CONFIG)) if v})
    where = SOCKET or "the host's engine"
    probe = subprocess.run(["docker", "buildx", "inspect"], env=env, capture_output=True, text=True)
    if probe.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"no BuildKit at {where} (.ci/setup-host.sh installs it): "
                        f"{probe.stderr.strip()}")
        pytest.skip(f"no BuildKit at {where}: run .ci/setup-host.sh, or name an engine with "
                    "IMGKIT_BUILDKIT_HOST")
    kit = BuildKit(env, leftovers.claim("imgkit-bk"))
    if SOCKET:                                   # another engine: the session's base into it
        save = subprocess.Popen(["docker", "save", base_image], stdout=subprocess.PIPE)
        kit.run("docker", "load", stdin=save.stdout)
        save.wait()
    kit.run("docker", "tag", base_image, f"{kit.namespace}/debian:bookworm")
    kit.run("docker", "tag", base_image, "debian:bookworm-slim")   # what the export names
    yield kit
    tags = kit.run("docker", "images", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
    mine = [t for t in tags if t.startswith(kit.namespace)]
    if mine:
        kit.run("docker", "rmi", *mine, check=False)
