"""Podman as the engine, rootful and rootless, through its Docker-compatible API as imgkit
connects to it (IMGKIT_ENGINE=podman for the rootful service's own socket, DOCKER_HOST for
the rootless user's): `imgkit build` makes the smallest image of the matrix with Podman's
own builder (the base with mmdebstrap, the trust settings as secret mounts), a second
build finds it up to date, `imgkit verify` proves it, and a CDI device reaches the probe's
container (a test-only spec: a node of its own that is /dev/null's twin, an env var, a
mounted file; rootless, runc binds a device node from the same path on the host, as
NVIDIA's spec has it, so the node is made on the host rather than renamed). Podman's
limits are the host's faults, exit 3. Nothing is left in either engine, and the spec goes."""
from __future__ import annotations

import json
import os
import secrets
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from .helpers import leftovers
from .helpers.cdi import LOOKS, SPEC
from .helpers.images import MINI_FAMILY, no_verify_containers
from .helpers.podman import PODMAN, podman_engine
from .helpers.registry import USER, docker_config, skopeo_tags

pytestmark = pytest.mark.docker


@dataclass(frozen=True)
class Podman:
    mode: str
    host: str                   # its API socket, as DOCKER_HOST writes it
    engine: Any
    environ: dict[str, str]     # what points imgkit at this Podman
    images: Path                # the matrix: one family, one image and its parents
    mini: str                   # the smallest image of the matrix, built there


def imgkit(environ: dict[str, str], *args: str, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "imgkit", *args], capture_output=True,
                          text=True, timeout=timeout, env=environ)


@pytest.fixture(scope="module", params=["rootful", "rootless"])
def podman(request, tmp_path_factory) -> Iterator[Podman]:
    mode = request.param
    host, engine = podman_engine(mode)
    environ = {k: v for k, v in os.environ.items() if k not in ("DOCKER_HOST", "IMGKIT_ENGINE")}
    environ.update({"IMGKIT_ENGINE": "podman"} if mode == "rootful" else {"DOCKER_HOST": host})
    leftovers.sweep(engine)
    ns = leftovers.claim("imgkit-test")
    project = tmp_path_factory.mktemp(f"podman-{mode}")
    (project / "images").mkdir()
    (project / "images" / "mini.yaml").write_text(MINI_FAMILY)
    report = project / "build.json"
    try:
        built = imgkit(environ, "build", "--images", str(project / "images"), "--namespace", ns,
                       "--json", str(report))
        assert built.returncode == 0, built.stdout + built.stderr
        said = json.loads(report.read_text())
        assert said["builder"] == "podman", said          # auto: Podman's own builder
        tags = [i["tag"] for i in said["images"]]
        again = imgkit(environ, "build", "--images", str(project / "images"), "--namespace", ns)
        assert again.returncode == 0 and again.stdout.count("up-to-date") == 3, again.stdout
        yield Podman(mode, host, engine, environ, project / "images",
                     next(t for t in tags if "/cuda:" in t))
    finally:
        leftovers.clear(engine, lambda name: f"/{ns}" in name or name.startswith(ns))


def test_podman_builds_the_image_with_its_own_builder_and_verify_proves_it(podman, tmp_path):
    info = podman.engine.image(podman.mini)
    assert info is not None and info.labels["org.imgkit.layer"] == "cuda"
    out = tmp_path / "verdict.json"
    done = imgkit(podman.environ, "verify", podman.mini, "--gpus", "none", "--json", str(out),
                  timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    checks = {c["name"]: c["verdict"] for c in json.loads(out.read_text())["checks"]}
    assert checks["cudart.version"] == checks["report.user"] == "pass", checks
    assert no_verify_containers(podman.engine) == []


@pytest.fixture
def cdi_kind(podman) -> Iterator[tuple[str, str, str]]:
    """A CDI spec of a kind of its own in /etc/cdi, where Podman reads them, until the test
    ends; its stub in a folder the rootless user can read. (kind, token, device node)"""
    token = secrets.token_hex(4)
    kind = f"imgkit-{token}.test/gpu"
    stubs = Path(tempfile.mkdtemp(prefix="imgkit-cdi-"))
    stubs.chmod(0o755)
    stub = stubs / "stub.txt"
    stub.write_text(f"stub {token}\n")
    node = Path(f"/dev/imgkit-cdi-{token}")
    folder = Path("/etc/cdi")
    spec = folder / f"imgkit-test-{token}.yaml"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))    # /dev/null's numbers
        folder.mkdir(parents=True, exist_ok=True)
        spec.write_text(SPEC.format(kind=kind, token=token, stub=stub, path=node, host_path=node))
    except OSError as exc:
        pytest.skip(f"cannot make a device node or write Podman's CDI folder {folder}: {exc}")
    try:
        yield kind, token, str(node)
    finally:
        spec.unlink(missing_ok=True)
        node.unlink(missing_ok=True)
        stub.unlink()
        stubs.rmdir()


def test_a_cdi_device_reaches_the_probes_container_on_podman(podman, cdi_kind, tmp_path):
    kind, token, node = cdi_kind
    looks = tmp_path / "looks.yaml"
    looks.write_text(LOOKS.format(token=token, path=node))
    out = tmp_path / "verdict.json"
    done = imgkit(podman.environ, "verify", podman.mini, "--gpus", f"{kind}=dev0", "--checks",
                  str(looks), "--json", str(out), timeout=600)
    said = done.stdout + done.stderr
    assert out.is_file(), said
    checks = {c["name"]: c for c in json.loads(out.read_text())["checks"]}
    assert checks["check: the spec's edits arrived"]["verdict"] == "pass", said
    assert checks["gpu.request"]["measured"] == f"CDI: {kind}=dev0"
    failed = [c for c in checks.values() if c["verdict"] == "fail"]
    assert failed and all(c["scope"] == "host" for c in failed), failed   # /dev/null is no GPU
    assert done.returncode == 3, said
    assert no_verify_containers(podman.engine) == []


def test_what_podman_cannot_hand_out_is_the_hosts_fault(podman, cdi_kind, tmp_path):
    kind, _, _ = cdi_kind
    for gpus, says in ((f"{kind}=dev9", f"the host's CDI spec for {kind} has no device 'dev9'"),
                       ("imgkit-absent.test/gpu=all",
                        "no CDI spec on this host names imgkit-absent.test/gpu"),
                       ("2", "Podman hands out GPUs by CDI device name, which has no count")):
        done = imgkit(podman.environ, "verify", podman.mini, "--gpus", gpus, timeout=600)
        assert done.returncode == 3 and says in done.stderr, done.stdout + done.stderr
    assert no_verify_containers(podman.engine) == []


def test_podman_publishes_the_verified_image_to_a_loopback_registry(podman, registry, tmp_path):
    """Podman pushes (a loopback registry is plain HTTP, as Docker has it, where Podman
    alone would want TLS), with the credentials from Docker's config; the tag the registry
    holds is the image verify judged. A verify job's verify of the staged digest pulls it
    back from there (Podman's own pull, told the registry is plain HTTP)."""
    environ = {**podman.environ, "DOCKER_CONFIG": str(docker_config(
        tmp_path / "docker", {registry.address: (USER, registry.password)}))}
    assert imgkit(environ, "verify", podman.mini, "--gpus", "none").returncode == 0
    done = imgkit(environ, "publish", podman.mini, "--to", registry.address,
                  "--allow-gpu-unverified", "--json", str(tmp_path / "published.json"),
                  timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    repository, tag = podman.mini.rsplit(":", 1)
    assert tag in skopeo_tags(registry, repository)
    [published] = json.loads((tmp_path / "published.json").read_text())["published"]
    staged = f"{registry.address}/{repository}@{published['digest']}"
    pulled = imgkit(environ, "verify", staged, "--gpus", "none", timeout=600)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert podman.engine.image(staged) is not None       # the fixture's clean-up takes it


def test_a_podman_login_is_what_the_push_and_the_registry_calls_use(podman, registry, tmp_path):
    """A team on Podman logs in with `podman login`, not `docker login`: imgkit reads that
    auth file (REGISTRY_AUTH_FILE here, as Podman itself reads it) for its registry calls
    and the push. With no login at all, the refusal names `podman login`."""
    nowhere = tmp_path / "docker"          # Docker's config holds nothing for the registry
    nowhere.mkdir()
    environ = {**podman.environ, "DOCKER_CONFIG": str(nowhere),
               "REGISTRY_AUTH_FILE": str(tmp_path / "none.json")}
    assert imgkit(environ, "verify", podman.mini, "--gpus", "none").returncode == 0
    refused = imgkit(environ, "publish", podman.mini, "--to", f"{registry.address}/logins",
                     "--allow-gpu-unverified")
    assert refused.returncode == 3 and "podman login" in refused.stderr, \
        refused.stdout + refused.stderr
    authfile = tmp_path / "auth.json"
    login = subprocess.run([PODMAN, "login", "--authfile", str(authfile), "--tls-verify=false",
                            "--username", USER, "--password-stdin", registry.address],
                           input=registry.password, capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PODMAN_IGNORE_CGROUPSV1_WARNING": "1"}, cwd="/")
    assert login.returncode == 0, login.stderr
    done = imgkit({**environ, "REGISTRY_AUTH_FILE": str(authfile)}, "publish", podman.mini,
                  "--to", f"{registry.address}/logins", "--allow-gpu-unverified", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    repository, tag = podman.mini.rsplit(":", 1)
    assert tag in skopeo_tags(registry, f"logins/{repository}")


def test_what_only_dockers_builders_do_is_refused_on_podman(podman):
    """The legacy builder and BuildKit build into a Docker engine: on Podman each is named
    and refused before anything is built, never run against another engine."""
    environ = {**podman.environ, "DOCKER_HOST": podman.host}
    selection = ("--images", str(podman.images), "--namespace", "imgkit-test-never")
    for args, says in ((("build", *selection, "--engine", "docker"),
                        "--engine docker drives Docker's legacy builder, and this engine is Podman"),
                       (("build", *selection, "--engine", "buildx"),
                        "--engine buildx builds with BuildKit (`docker buildx`), into a Docker "
                        "engine, and this engine is Podman"),
                       (("reproduce", "imgkit-test-never/python:3.11-bookworm", *selection),
                        "imgkit reproduce builds with BuildKit")):
        done = imgkit(environ, *args)
        assert done.returncode == 3 and says in done.stderr, done.stdout + done.stderr
