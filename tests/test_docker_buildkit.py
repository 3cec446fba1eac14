"""BuildKit for real: `docker buildx bake` of what `imgkit export bake` writes, `imgkit build
--engine buildx`, and rendered contexts under `docker build` with the buildx plugin. They run
on the host's engine, which `.ci/setup-host.sh` makes one with BuildKit (engine 28.5 and buildx
0.29 on Debian 12), or on the engine IMGKIT_BUILDKIT_HOST names (with IMGKIT_BUILDKIT_CONFIG,
the Docker config whose cli-plugins hold buildx)."""
from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from imgkit.engine.images import seconds_of
from imgkit.render.command import render_contexts
from imgkit.selection import Selection

from .helpers import leftovers
from .helpers.buildkit import TWO_CUDAS, BuildKit, build_json, layers, project

pytestmark = pytest.mark.docker

NO_SETTINGS = "imgkit-build-env: not run by"     # what the helper says without its secrets








def marked_ca_bundle(tmp_path: Path, marker: str) -> Path:
    """The host's bundle (pip needs it behind this network's proxy) plus a line no image
    may ever contain: PEM readers skip text between certificates."""
    bundle = tmp_path / "ca.pem"
    bundle.write_bytes(Path("/etc/ssl/certs/ca-certificates.crt").read_bytes()
                       + f"\n# {marker}\n".encode())
    return bundle




def holds(kit: BuildKit, ref: str, needle: bytes) -> bool:
    """Does any byte of the image (layers, config, history) hold `needle`?"""
    saved = kit.run("docker", "save", ref, text=False)
    history = kit.run("docker", "history", "--no-trunc", ref).stdout
    return needle in saved.stdout or needle.decode() in history  # type: ignore[operator]


def checks(verdict_file: Path, namespace: str) -> dict[str, tuple[str, str]]:
    verdict = json.loads(verdict_file.read_text())
    return {c["name"]: (c["verdict"], c["measured"].replace(namespace, "NS"))
            for c in verdict["checks"] if c["name"] != "image.labels"}


def test_bake_builds_the_export_parents_once_with_secrets_in_no_layer_and_it_verifies(
        buildkit, mini_stack, tmp_path):
    """`docker buildx bake` of `imgkit export bake`: every target builds, the shared parent
    once, the CA bundle and index reach pip as secrets that no layer or history keeps, and
    the images pass `imgkit verify` with the stack imgkit's own builder gives."""
    kit, ns = buildkit, buildkit.namespace + "-bake"
    proj = project(tmp_path / "p")
    out = tmp_path / "bake"
    kit.imgkit("export", "bake", "--images", str(proj / "images"), "--namespace", ns,
               "--out", str(out))
    bake = json.loads((out / "docker-bake.json").read_text())
    contexts = {c.target.tag: c for c in render_contexts(
        Selection(proj / "images", ns, templates=proj / "templates"))}
    python, *cudas = list(contexts)
    assert sorted(bake["group"]["default"]["targets"]) == sorted(
        re.sub(r"[^a-z0-9]+", "-", t.lower()).strip("-") for t in cudas)

    marker = f"imgkit-secret-{uuid.uuid4().hex}"
    # in the bake's folder, as docs/scale.md says: buildx 0.19 and later read no file
    # outside it unless told `--allow fs.read=PATH` (0.13 knows no such flag)
    marked_ca_bundle(out, marker)
    env = {**kit.env, "IMGKIT_CA_BUNDLE": "ca.pem",
           "IMGKIT_EXTRA_INDEX_URL": f"file:///nonexistent/{marker}"}
    python_target = re.sub(r"[^a-z0-9]+", "-", python.lower()).strip("-")
    done = subprocess.run(["docker", "buildx", "bake", "-f", str(out / "docker-bake.json"),
                           "--progress", "plain", "--no-cache", "default", python_target],
                          env=env, capture_output=True, text=True, cwd=out, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    # pip ran (no cache) with the secrets mounted
    assert "Successfully installed nvidia-cuda-runtime" in done.stderr
    assert NO_SETTINGS not in done.stderr

    for tag, context in contexts.items():
        info = kit.inspect(tag)
        assert info is not None, tag
        assert info["Config"]["Labels"]["org.imgkit.input-hash"] == context.input_hash
    # the parent was built once: its RUN step is one vertex (BuildKit names it after whichever
    # target asked first), and both children sit on its layers
    step = next(line for line in contexts[python].dockerfile.splitlines()
                if line.startswith("RUN apt-get update")).rstrip(" \\")
    # (BuildKit prints the step with its secret mounts, which the docker form does not have)
    runs = {m.group(1) for m in re.finditer(r"#(\d+) \[[^\]]+\] (.*)", done.stderr)
            if re.sub(r"--mount=\S+\s+", "", m.group(2)).startswith(step)}
    assert len(runs) == 1, runs
    for cuda in cudas:
        assert layers(kit, cuda)[: len(layers(kit, python))] == layers(kit, python)
        assert not holds(kit, cuda, marker.encode()), f"{cuda} keeps a build secret"

    verdict = tmp_path / "bk.json"
    kit.imgkit("verify", cudas[0], "--gpus", "none", "--json", str(verdict))
    ours = tmp_path / "ours.json"
    subprocess.run([sys.executable, "-m", "imgkit", "verify", mini_stack.mini, "--gpus", "none",
                    "--json", str(ours)], check=True, capture_output=True)
    assert checks(verdict, ns) == checks(ours, mini_stack.mini.split("/")[0])




def test_build_engine_buildx_builds_skips_and_agrees_with_the_docker_builder(
        buildkit, tmp_path):
    kit, ns = buildkit, buildkit.own("eng")
    proj = project(tmp_path / "p")
    dangling, containers = kit.dangling(), kit.containers()
    first = build_json(kit, proj, ns, tmp_path / "1.json", "--engine", "buildx")
    assert set(first.values()) == {"built"} and len(first) == 3, first
    ids = {tag: kit.inspect(tag)["Id"] for tag in first}

    again = build_json(kit, proj, ns, tmp_path / "2.json", "--engine", "buildx")
    assert set(again.values()) == {"up-to-date"}, again
    # the same input hash for both engines: what BuildKit built is up to date for docker-py's
    cross = build_json(kit, proj, ns, tmp_path / "3.json", "--engine", "docker")
    assert set(cross.values()) == {"up-to-date"}, cross

    # a new image on the same parent: only it is built, the parent comes from the store
    (proj / "images" / "mini.yaml").write_text(TWO_CUDAS.replace('"12.4"]', '"12.4", "12.8"]'))
    # auto (the default outside the tests), where BuildKit can build it (engine 23 or later
    # and its buildx), bakes
    grown = build_json(kit, proj, ns, tmp_path / "4.json", "--engine", "auto")
    assert json.loads((tmp_path / "4.json").read_text())["builder"] == "buildx"
    new = f"{ns}/cuda:12.8-cudart-py3.11-bookworm"
    assert grown.pop(new) == "built" and set(grown.values()) == {"up-to-date"}, grown
    assert all(kit.inspect(tag)["Id"] == ids[tag] for tag in grown)
    assert layers(kit, new)[:len(layers(kit, f"{ns}/python:3.11-bookworm"))] == \
        layers(kit, f"{ns}/python:3.11-bookworm")
    # auto where the docker CLI has no buildx: the legacy builder builds, and one line says why
    no_buildx = BuildKit({**kit.env, "DOCKER_CONFIG": str(tmp_path / "no-plugins")}, kit.namespace)
    if no_buildx.run("docker", "buildx", "version", check=False).returncode != 0:
        (proj / "images" / "mini.yaml").write_text(
            TWO_CUDAS.replace('"12.4"]', '"12.4", "12.8", "12.6"]'))
        legacy = no_buildx.imgkit("build", "--images", str(proj / "images"), "--templates",
                                  str(proj / "templates"), "--namespace", ns, "--engine", "auto",
                                  "--json", str(tmp_path / "auto.json"))
        said = " ".join(legacy.stderr.split())
        assert "legacy builder builds: no buildx plugin for the docker CLI" in said, legacy.stderr
        hides = f"DOCKER_CONFIG={tmp_path / 'no-plugins'} hides the user's buildx"
        users_buildx = (Path.home() / ".docker" / "cli-plugins" / "docker-buildx").exists()
        if users_buildx:                                                      # this host's
            assert hides in said, said
        # --engine buildx insists: exit 3, and the same words for what hides it
        insisted = no_buildx.imgkit("build", "--images", str(proj / "images"), "--templates",
                                    str(proj / "templates"), "--namespace", ns, "--engine",
                                    "buildx", "--force", check=False)
        assert insisted.returncode == 3, insisted.stdout + insisted.stderr
        assert "docker buildx is not usable" in insisted.stderr
        if users_buildx:
            assert hides in " ".join(insisted.stderr.split()), insisted.stderr
        result = json.loads((tmp_path / "auto.json").read_text())
        assert result["builder"] == "docker"
        assert {r["tag"]: r["status"] for r in result["images"]}[
            f"{ns}/cuda:12.6-cudart-py3.11-bookworm"] == "built"
    # --force rebuilds without the cache: the same inputs give the same image
    # (docs/reproducible.md), and nothing lingers
    old = kit.inspect(new)["Id"]
    forced = build_json(kit, proj, ns, tmp_path / "5.json", "--engine", "buildx", "--force",
                        "--keep-parents", "--only", new)
    assert forced[new] == "built" and kit.inspect(new)["Id"] == old, forced
    assert kit.dangling() <= dangling and kit.containers() <= containers
    # a bake of one image, whose steps buildx labels with no target (`[2/4] RUN ...`): the
    # failed step is still named, with apt's own words and what they mean
    (proj / "images" / "tools.yaml").write_text(
        f'family: tools\nextends: {{family: mini}}\nrepository: {ns}/tools\n'
        'tag: "{parent_tag}"\napt: [imgkit-no-such-package]\n')
    one = f"{ns}/tools:12.8-cudart-py3.11-bookworm"
    failed = kit.imgkit("build", "--engine", "buildx", "--images", str(proj / "images"),
                        "--templates", str(proj / "templates"), "--namespace", ns, "--only", one,
                        check=False)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    said = " ".join(failed.stdout.split())
    assert f"{one} failed at RUN apt-get update" in said, said
    assert "Unable to locate package imgkit-no-such-package" in said, said
    assert "without building it" not in said
    assert "the OS's package lists have no imgkit-no-such-package" in said
    assert kit.inspect(one) is None and kit.dangling() <= dangling


def test_build_engine_buildx_failure_names_the_step_skips_dependents_leaves_nothing(
        buildkit, tmp_path):
    kit, ns = buildkit, buildkit.own("fail")
    proj = project(tmp_path / "p")
    template = proj / "templates" / "pip-layer.Dockerfile.j2"
    template.write_text(template.read_text().replace(
        "USER root", "USER root\nRUN echo imgkit-test-marker && echo 'ERROR: No matching "
        "distribution found for imgkit-nope==1.0' && exit 7", 1))       # as pip says it
    dangling = kit.dangling()
    done = kit.imgkit("build", "--engine", "buildx", "--images", str(proj / "images"),
                      "--templates", str(proj / "templates"), "--namespace", ns, "--json",
                      str(tmp_path / "r.json"), check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    rows = {r["tag"]: r for r in json.loads((tmp_path / "r.json").read_text())["images"]}
    assert rows[f"{ns}/python:3.11-bookworm"]["status"] == "built"
    cudas = [t for t in rows if "/cuda:" in t]
    assert {rows[t]["status"] for t in cudas} <= {"failed", "cancelled"}
    assert any(rows[t]["status"] == "failed" for t in cudas)
    assert "RUN echo imgkit-test-marker" in done.stdout and "exit code: 7" in done.stdout
    assert "hint: the package index has no imgkit-nope==1.0" in done.stdout
    assert all(kit.inspect(t) is None for t in cudas)          # no tag on a failed build
    assert kit.dangling() <= dangling


def test_build_engine_buildx_bad_builder_is_exit_2_and_ctrl_c_leaves_only_whole_images(
        buildkit, tmp_path):
    kit, ns = buildkit, buildkit.own("stop")
    proj = project(tmp_path / "p")
    wrong = kit.imgkit("build", "--engine", "buildx", "--builder", "nosuch", "--images",
                       str(proj / "images"), "--namespace", ns, check=False)
    assert wrong.returncode == 2 and "nosuch" in wrong.stderr, wrong.stderr
    assert "Traceback" not in wrong.stderr

    template = proj / "templates" / "pip-layer.Dockerfile.j2"
    template.write_text(template.read_text().replace("USER root", "USER root\nRUN sleep 600", 1))
    marker = {"IMGKIT_TEST_RUN": ns}         # its bake inherits it: what it leaves is findable
    proc = subprocess.Popen([sys.executable, "-m", "imgkit", "build", "--engine", "buildx",
                             "--images", str(proj / "images"), "--templates",
                             str(proj / "templates"), "--namespace", ns, "--verbose"],
                            env={**kit.env, **marker},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list[str] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:                      # until the sleep step is running
            seen.append(line)
            if "RUN sleep 600" in line:
                break
        else:
            pytest.fail("the sleep step never started:\n" + "".join(seen))
        time.sleep(2)
        stopped_at = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, "".join(seen) + rest
    assert time.monotonic() - stopped_at < 40
    assert "Traceback" not in rest
    for cuda in ("11.8", "12.4"):
        assert kit.inspect(f"{ns}/cuda:{cuda}-cudart-py3.11-bookworm") is None
    # this build's bake only: the other test worker may be baking its own meanwhile
    assert not leftovers.processes_with(f"IMGKIT_TEST_RUN={ns}"), "the bake was left running"


def test_a_rendered_context_builds_under_buildkit_with_its_secrets_and_the_cache(
        buildkit, tmp_path):
    """With the buildx plugin, `docker build` is BuildKit: `imgkit render` writes the secret
    mounts, and `docker build --secret` of a context reproduces the image from the cache an
    `imgkit build --engine buildx` left, where that build took the parent from the engine's
    store as `docker build` does (a parent built in the same bake is another cache key to
    BuildKit; engine 26 matched such steps by content too, engines from 27.2 do not)."""
    kit, ns = buildkit, buildkit.own("render")
    proj = project(tmp_path / "p")
    build_json(kit, proj, ns, tmp_path / "p.json", "--engine", "buildx", "--only", "*python*")
    build_json(kit, proj, ns, tmp_path / "b.json", "--engine", "buildx")   # on the stored parent
    out = tmp_path / "ctx"
    done = kit.imgkit("render", "--images", str(proj / "images"), "--templates",
                      str(proj / "templates"), "--namespace", ns, "--out", str(out))
    assert "BuildKit form" in done.stderr
    leaf = sorted(out.glob("*cuda_12.4*"))[0]
    assert "--mount=type=secret,id=imgkit-ca-bundle" in (leaf / "Dockerfile").read_text()
    rebuilt = f"{ns}/rebuilt:1"
    base = kit.inspect(f"{ns}/debian:bookworm")
    assert base is not None
    epoch = seconds_of(base["Created"])        # the build date imgkit gave it: the base's
    made = kit.run("docker", "build", "--progress", "plain", "--secret",
                   "id=imgkit-ca-bundle,src=/etc/ssl/certs/ca-certificates.crt",
                   "--build-arg", f"SOURCE_DATE_EPOCH={epoch}", "-t", rebuilt, str(leaf))
    assert "CACHED" in made.stderr and "RUN --mount" in made.stderr
    assert layers(kit, rebuilt) == layers(kit, f"{ns}/cuda:12.4-cudart-py3.11-bookworm")

    # without the plugin, `docker build` is the legacy builder: the form without mounts
    legacy = {**kit.env, "DOCKER_CONFIG": str(tmp_path / "no-plugins")}
    if subprocess.run(["docker", "buildx", "version"], env=legacy, capture_output=True).returncode == 0:
        pytest.skip("buildx is installed system-wide here: no Docker config hides it")
    plain = subprocess.run([sys.executable, "-m", "imgkit", "render", "--images",
                            str(proj / "images"), "--namespace", ns, "--out", str(tmp_path / "l")],
                           env=legacy, capture_output=True, text=True, check=True)
    assert "legacy-builder form" in plain.stderr
    assert not list((tmp_path / "l").glob("*/Dockerfile")) or all(
        "--mount" not in d.read_text() for d in (tmp_path / "l").glob("*/Dockerfile"))


# what the bundled stack's build needs (about 10 GB) with room to spare for the other worker
ROOM_FOR_TODAYS_STACK = 25 << 30


def engine_disk_free() -> int:
    """Bytes free where the engine keeps its images and build cache."""
    root = subprocess.run(["docker", "info", "--format", "{{.DockerRootDir}}"], capture_output=True,
                          text=True, check=False).stdout.strip()
    return shutil.disk_usage(root if root and Path(root).is_dir() else "/").free


@pytest.mark.slow
def test_todays_bundled_stack_builds_with_buildkit_and_verifies(buildkit, tmp_path):
    """The bundled PyTorch 2.15 (CUDA 13.2, bookworm) and JAX 0.11.2 (CUDA 13.0, trixie)
    images, built as a user would (`--engine buildx`), pass `imgkit verify --gpus none` with
    the stack their tags name; then removed (about 10 GB)."""
    kit, ns = buildkit, buildkit.namespace + "-today"
    # the suite's largest build (about 10 GB): on a disk short of room (stop 60 ran out
    # here) the build cache no running build holds goes first. All of it or none: a partial
    # prune (`--max-used-space`) leaves records that name layers the store dropped, and the
    # next build fails on them (stop 71: "failed to prepare"); where there is room, the
    # cache stays for the layers other tests build again (the arm64 python layer: 155 s
    # under QEMU)
    if engine_disk_free() < ROOM_FOR_TODAYS_STACK:
        kit.run("docker", "builder", "prune", "--all", "--force", check=False)
    # the bases: the host engine's (the trixie one if a test made it), else `build` makes it
    trixie = subprocess.Popen(["docker", "save", "imgkit/debian:trixie"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    kit.run("docker", "load", stdin=trixie.stdout, check=False)
    trixie.wait()
    for os_name in ("bookworm", "trixie"):
        kit.run("docker", "tag", f"imgkit/debian:{os_name}", f"{ns}/debian:{os_name}", check=False)
    finals = ["pytorch:2.15.0-cuda13.2-cudnn9-runtime", "jax:0.11.2-cuda13.0-cudnn9-py3.13"]
    made: list[str] = []
    try:
        done = kit.imgkit("build", "--engine", "buildx", "--namespace", ns, "--only", "pytorch:2.15*",
                          "--only", "jax:*", "--platform", "linux/amd64",
                          "--json", str(tmp_path / "b.json"), check=False)
        made = [r["tag"] for r in json.loads((tmp_path / "b.json").read_text())["images"]]
        assert done.returncode == 0, done.stdout + done.stderr
        for tag, framework, cuda in zip(finals, ("torch 2.15.0", "jax 0.11.2"), ("13.2", "13.0")):
            kit.imgkit("verify", tag, "--gpus", "none", "--json", str(tmp_path / "v.json"))
            verdict = json.loads((tmp_path / "v.json").read_text())
            measured = {c["name"]: c["measured"] for c in verdict["checks"]}
            name, version = framework.split()
            assert measured["cudart.version"] == cuda, measured
            assert measured[f"{name}.version"].startswith(version), measured
            assert verdict["passed"], [c for c in verdict["checks"] if c["verdict"] == "fail"]
    finally:
        if made:
            kit.run("docker", "rmi", *made, check=False)
