"""arm64 images on this x86-64 machine, under QEMU (qemu-user-static's binfmt handler):
a Debian arm64 base made by mmdebstrap, the ways CUDA gets into an image as arm64 twins
of tests/test_docker_layouts.py, and `imgkit verify --platform linux/arm64 --gpus none`
judging them with the same checks and words as on amd64 (and refusing what it cannot do
here: a GPU under emulation, a platform the image is not)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from imgkit.verify.run import VerifyOptions, verify
from imgkit.verify.verdict import Verdict

from .helpers import leftovers
from .helpers.buildkit import build_json, layers
from .helpers.buildkit import project as bake_project
from .helpers.cli import imgkit
from .helpers.images import build_from_files, no_verify_containers
from .helpers.layouts import EXTRACT, NVIDIA_ENV
from .helpers.registry import USER, docker_config, skopeo_json, skopeo_tags

pytestmark = pytest.mark.docker
ARM64 = "linux/arm64"
CU12 = "nvidia-cuda-runtime-cu12==12.4.127"
SBSA_LIB = "/usr/local/cuda-12.4/targets/sbsa-linux/lib"
VERSION_JSON = ('{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}, '
                '"cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": "12.4.127"}}')


def download(folder: Path, platform_tag: str) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.11", "--platform", platform_tag, "-d", str(folder), CU12],
                   check=True, timeout=300)
    return next(folder.glob(f"*{platform_tag.split('_', 1)[1]}.whl"))


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The CUDA 12.4 runtime wheel of each architecture (under 1 MB each)."""
    folder = tmp_path_factory.mktemp("wheels")
    return {"aarch64": download(folder, "manylinux2014_aarch64"),
            "x86_64": download(folder, "manylinux2014_x86_64")}


@pytest.fixture(scope="module")
def arm64_python(two_platforms) -> str:
    """The arm64 base with python3, a venv and the imgkit user: the python layer `imgkit
    build` made for arm64 (the amd64 layouts stand on its amd64 twin, mini_stack.python);
    emulated apt runs once in the session, for both."""
    return f"{two_platforms.namespace}/python:3.11-bookworm-arm64"


def arm64_layout(engine, namespace: str, parent: str, name: str, steps: str,
                 files: dict[str, bytes]) -> str:
    return build_from_files(engine, f"{namespace}/layout-arm64:{name}", {
        "Dockerfile": f"FROM {parent}\nUSER root\n{steps}\nUSER imgkit\n".encode(), **files})


def judge(engine, ref: str) -> Verdict:
    verdict = verify(engine, ref, VerifyOptions(gpus="none", platform=ARM64))
    assert no_verify_containers(engine) == []
    return verdict


def checks(verdict: Verdict) -> dict[str, str]:
    return {c.name: f"{c.verdict}: {c.measured} | {c.diagnosis}" for c in verdict.checks}


def test_the_aarch64_wheel_in_a_venv(engine, arm64_python, namespace, wheels):
    """imgkit's own layout on arm64: the runtime wheel's aarch64 file in the venv."""
    name = wheels["aarch64"].name
    ref = arm64_layout(engine, namespace, arm64_python, "venv-wheel",
                       f"COPY {name} /tmp/\nRUN /opt/venv/bin/pip install -q --no-index --no-deps "
                       f"/tmp/{name} && rm /tmp/{name}\n" + NVIDIA_ENV.format(cuda="12.4"),
                       {name: wheels["aarch64"].read_bytes()})
    verdict = judge(engine, ref)
    assert verdict.passed, verdict.failed
    found = checks(verdict)
    assert found["platform"].startswith("pass: linux/arm64 (aarch64)")
    assert found["cudart.version"].startswith("pass: 12.4")
    assert verdict.facts is not None
    copy = verdict.facts.libraries.copies("cudart")[0]
    assert copy.machine == "aarch64" and "/opt/venv/lib/python3.11/site-packages/nvidia/" in copy.path
    assert copy.owner is not None and copy.owner.name == "nvidia_cuda_runtime_cu12"


def test_an_sbsa_toolkit_tree(engine, arm64_python, namespace, wheels):
    """The layout NVIDIA's arm64 (sbsa) packages leave: targets/sbsa-linux, version.json,
    the /usr/local/cuda link and an ld.so.conf.d entry."""
    name = wheels["aarch64"].name
    steps = (f"COPY {name} /tmp/\n"
             f"RUN mkdir -p {SBSA_LIB} && python3 -c \"{EXTRACT}\" /tmp/{name} "
             f"nvidia/cuda_runtime/lib/libcudart.so.12 {SBSA_LIB}/libcudart.so.12.4.127 \\\n"
             f" && ln -s libcudart.so.12.4.127 {SBSA_LIB}/libcudart.so.12 \\\n"
             " && ln -s targets/sbsa-linux/lib /usr/local/cuda-12.4/lib64 \\\n"
             " && ln -s cuda-12.4 /usr/local/cuda \\\n"
             f" && echo '{VERSION_JSON}' > /usr/local/cuda-12.4/version.json \\\n"
             f" && echo {SBSA_LIB} > /etc/ld.so.conf.d/cuda-12-4.conf && ldconfig && rm /tmp/{name}\n"
             + NVIDIA_ENV.format(cuda="12.4"))
    ref = arm64_layout(engine, namespace, arm64_python, "sbsa-toolkit", steps,
                       {name: wheels["aarch64"].read_bytes()})
    verdict = judge(engine, ref)
    assert verdict.passed, verdict.failed
    assert verdict.facts is not None
    copy = verdict.facts.libraries.copies("cudart")[0]
    assert copy.where == "loader" and copy.realpath == f"{SBSA_LIB}/libcudart.so.12.4.127"
    assert copy.machine == "aarch64"
    assert checks(verdict)["cudart.version"].startswith("pass: 12.4")


def test_a_library_of_the_other_architecture_is_named(engine, arm64_python, namespace, wheels):
    """The x86-64 runtime copied into an arm64 image (a host's files, a wrong wheel unpacked):
    it cannot load, and the verdict says why in the architecture's words."""
    name = wheels["x86_64"].name
    lib = "/usr/local/cuda/lib64"
    steps = (f"COPY {name} /tmp/\n"
             f"RUN mkdir -p {lib} && python3 -c \"{EXTRACT}\" /tmp/{name} "
             f"nvidia/cuda_runtime/lib/libcudart.so.12 {lib}/libcudart.so.12 \\\n"
             f" && echo {lib} > /etc/ld.so.conf.d/cuda.conf && ldconfig && rm /tmp/{name}\n"
             + NVIDIA_ENV.format(cuda="12.4"))
    ref = arm64_layout(engine, namespace, arm64_python, "x86-runtime", steps,
                       {name: wheels["x86_64"].read_bytes()})
    verdict = judge(engine, ref)
    found = checks(verdict)
    assert verdict.failed
    assert found["cudart.architecture"].startswith("fail: x86_64")
    assert f"{lib}/libcudart.so.12 is built for x86_64: a linux/arm64 image needs the aarch64 " \
           "build" in found["cudart.architecture"]
    assert found["cudart.loadable"].startswith("fail")
    assert found["platform"].startswith("pass")


def test_the_cli_verifies_arm64_here_without_a_gpu_only(arm64_python) -> None:
    """Exit 0 with --gpus none (the platform line in the output); a GPU under emulation and
    a platform the image is not are usage errors (exit 2) that say so, nothing left behind."""
    done = imgkit("verify", arm64_python, "--platform", ARM64, "--gpus", "none")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "platform  expected: linux/arm64  measured: linux/arm64 (aarch64)" in done.stdout
    gpu = imgkit("verify", arm64_python, "--gpus", "all")
    assert gpu.returncode == 2 and "runs under emulation, where no GPU can be used" in gpu.stderr
    other = imgkit("verify", arm64_python, "--platform", "linux/amd64", "--gpus", "none")
    assert other.returncode == 2 and "is a linux/arm64 image, not linux/amd64" in other.stderr
    assert "Traceback" not in gpu.stderr + other.stderr


def test_build_makes_each_platform_and_each_verifies(engine, arm64_base, two_platforms):
    """`imgkit build` of a family for both platforms: the host's images under their tags, the
    arm64 ones as TAG-arm64 standing on each other (configs say arm64, the same input hash),
    each verifies as its platform; a second build has nothing to do."""
    cuda = two_platforms.cuda
    assert set(two_platforms.first) >= {cuda, f"{cuda}-arm64"}
    here, there = engine.image(cuda), engine.image(f"{cuda}-arm64")
    assert here.platform == "linux/amd64" and there.platform == ARM64
    assert here.labels["org.imgkit.input-hash"] == there.labels["org.imgkit.input-hash"]
    assert there.layers[:len(engine.image(arm64_base).layers)] == engine.image(arm64_base).layers
    judged = verify(engine, f"{cuda}-arm64", VerifyOptions(gpus="none", platform=ARM64))
    assert judged.passed, judged.failed
    assert checks(judged)["platform"].startswith("pass: linux/arm64")
    assert checks(judged)["cudart.version"].startswith("pass: 12.8")
    assert verify(engine, cuda, VerifyOptions(gpus="none")).passed
    again = two_platforms.build()
    assert again.returncode == 0, again.stderr
    assert {i["status"] for i in json.loads(two_platforms.report.read_text())["images"]} == {"up-to-date"}


def test_build_engine_buildx_makes_another_platforms_images_too(
        buildkit, two_platforms, arm64_base, tmp_path):  # noqa: F811
    """A family for amd64 and arm64 through one bake: the arm64 images are their own
    targets, built by BuildKit under QEMU and kept as TAG-arm64 (configs say arm64, the same
    input hash as the amd64 twin), each on its parent's arm64 image, down to the arm64 base;
    a second build has nothing to do and the arm64 image verifies as arm64. The python
    layers are the ones two_platforms made for both platforms: BuildKit takes them as up to
    date and builds the CUDA images on them (emulated apt runs once in the session). Here, not in
    test_docker_buildkit.py: a test file runs on one pytest worker, and this one's fixtures
    are the arm64 tests'."""
    kit, ns = buildkit, two_platforms.namespace
    proj = bake_project(tmp_path / "p", "family: mini\ncuda_libs: [cudart]\n"
                                   "platforms: [linux/amd64, linux/arm64]\naxes:\n  cuda: [\"12.4\"]\n")
    first = build_json(kit, proj, ns, tmp_path / "1.json", "--engine", "buildx")
    cuda = f"{ns}/cuda:12.4-cudart-py3.11-bookworm"
    python = f"{ns}/python:3.11-bookworm"
    assert first == {python: "up-to-date", f"{python}-arm64": "up-to-date",
                     cuda: "built", f"{cuda}-arm64": "built"}, first
    here, there = kit.inspect(cuda), kit.inspect(f"{cuda}-arm64")
    assert here and there and (here["Architecture"], there["Architecture"]) == ("amd64", "arm64")
    assert here["Config"]["Labels"]["org.imgkit.input-hash"] == \
        there["Config"]["Labels"]["org.imgkit.input-hash"]
    assert layers(kit, f"{cuda}-arm64")[:len(layers(kit, f"{python}-arm64"))] == \
        layers(kit, f"{python}-arm64")
    assert layers(kit, f"{python}-arm64")[:len(layers(kit, arm64_base))] == layers(kit, arm64_base)
    again = build_json(kit, proj, ns, tmp_path / "2.json", "--engine", "buildx")
    assert set(again.values()) == {"up-to-date"}, again
    judged = kit.imgkit("verify", f"{cuda}-arm64", "--platform", "linux/arm64", "--gpus", "none",
                        check=False)
    assert judged.returncode == 0, judged.stdout + judged.stderr
    assert "linux/arm64" in judged.stdout


@pytest.fixture()
def pulled_tags_removed(engine, registry):
    """`verify HOST/REPO:TAG` tags what it pulls as `docker pull` would: those tags go."""
    yield
    for image in leftovers.images(engine):
        for tag in image.tags:
            if tag.startswith(f"{registry.address}/"):
                engine.untag(tag)


def skopeo_digest(registry, ref: str) -> str:
    """The digest of what `ref` names (an index's own), from the bytes skopeo reads."""
    import hashlib
    out = subprocess.run(["skopeo", "inspect", "--raw", "--tls-verify=false",
                          f"--creds={USER}:{registry.password}", f"docker://{ref}"],
                         capture_output=True, check=True, timeout=60)
    return "sha256:" + hashlib.sha256(out.stdout).hexdigest()


@dataclass(frozen=True)
class LoggedIn:
    """A user logged in to the test registry (Docker config of their own), with an imgkit
    cache of their own: the verdicts of this test only."""
    env: dict[str, str]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "imgkit", *args], env=self.env,
                              capture_output=True, text=True, timeout=900)


def logged_in(registry, tmp_path: Path) -> LoggedIn:
    config = docker_config(tmp_path / "docker", {registry.address: (USER, registry.password)})
    return LoggedIn({**os.environ, "DOCKER_CONFIG": str(config),
                     "IMGKIT_CACHE_DIR": str(tmp_path / "cache")})


def test_one_tag_for_both_platforms_published_verified_and_promoted_as_an_index(
        engine, two_platforms, registry, tmp_path, monkeypatch, pulled_tags_removed):
    """publish gates each platform's image on its own verdict, pushes both by digest and
    puts an OCI index naming them under the tag, the same digest in every destination;
    verify of the tag judges the host's image, or arm64's with --platform; promote copies
    the whole index only when every platform's verdict passed."""
    from imgkit.registry.client import OCI_INDEX
    cuda, arm = two_platforms.cuda, f"{two_platforms.cuda}-arm64"
    repository, tag = cuda.rsplit(":", 1)
    user = logged_in(registry, tmp_path)
    run = user.run
    a, b, c = (f"{registry.address}/{n}" for n in "abc")
    publish = ("publish", *two_platforms.common, "--to", a, "--to", b, "--allow-gpu-unverified")
    assert run("verify", cuda, "--gpus", "none").returncode == 0
    # the arm64 image was never judged on its own: nothing of either platform is pushed
    refused = run(*publish)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    rows = [line for line in refused.stdout.splitlines() if line.startswith((cuda, arm))]
    assert any(r.startswith(arm) and "refused" in r for r in rows), refused.stdout
    assert any(r.startswith(cuda + " ") and "held" in r for r in rows), refused.stdout
    assert skopeo_tags(registry, f"a/{repository}") == []
    judged = run("verify", arm, "--platform", ARM64, "--gpus", "none")
    assert judged.returncode == 0, judged.stdout + judged.stderr

    done = run(*publish)
    assert done.returncode == 0, done.stdout + done.stderr
    raw = skopeo_json("inspect", "--raw", f"docker://{a}/{repository}:{tag}", registry=registry)
    assert raw["mediaType"] == OCI_INDEX
    children = {f"{m['platform']['os']}/{m['platform']['architecture']}": m["digest"]
                for m in raw["manifests"]}
    assert set(children) == {"linux/amd64", ARM64}
    for platform, ref in (("linux/amd64", cuda), (ARM64, arm)):
        child = skopeo_json("inspect", "--raw", f"docker://{a}/{repository}@{children[platform]}",
                            registry=registry)
        assert child["config"]["digest"] == engine.image(ref).id      # the image verified
        assert children[platform].replace(":", "-") + ".verdict" in skopeo_tags(registry, f"b/{repository}")
    assert skopeo_digest(registry, f"{a}/{repository}:{tag}") == skopeo_digest(
        registry, f"{b}/{repository}:{tag}")

    # verify of the tag: the host's image by default, another platform's on request
    host = run("verify", f"{a}/{repository}:{tag}", "--gpus", "none")
    assert host.returncode == 0 and "linux/amd64" in host.stdout, host.stdout + host.stderr
    other = run("verify", f"{a}/{repository}:{tag}", "--platform", ARM64, "--gpus", "none")
    assert other.returncode == 0 and "linux/arm64" in other.stdout, other.stdout + other.stderr

    # promotion: the whole index, digests preserved, tags last
    digest = skopeo_digest(registry, f"{a}/{repository}:{tag}")
    done = run("promote", f"{a}/{repository}@{digest}", "--to", f"{c}/{repository}", "--tag", tag,
               "--allow-unsigned", "--allow-gpu-unverified")
    assert done.returncode == 0, done.stdout + done.stderr
    assert skopeo_digest(registry, f"{c}/{repository}:{tag}") == digest
    for child in children.values():
        assert skopeo_json("inspect", "--raw", f"docker://{c}/{repository}@{child}", registry=registry)
        assert child.replace(":", "-") + ".verdict" in skopeo_tags(registry, f"c/{repository}")

    # an index with one platform unjudged is not promoted, not even in part
    from imgkit.registry import index
    from imgkit.registry.client import Manifest, RegistryClient, endpoint_of, sha256_of
    monkeypatch.setenv("DOCKER_CONFIG", user.env["DOCKER_CONFIG"])   # the login, in here too
    with RegistryClient(endpoint_of(engine, registry.address)) as client:
        judged_amd = client.manifest(f"a/{repository}", children["linux/amd64"])
        bare_ref = f"{a}/{repository}:bare-arm64"       # pushed by the engine (skopeo's
        engine.tag(engine.image(f"{two_platforms.common[3]}/debian:bookworm-arm64").id, bare_ref)
        engine.push(bare_ref, (USER, registry.password))   # docker-daemon: API is too old for 26)
        engine.untag(bare_ref)
        bare = client.manifest(f"a/{repository}", "bare-arm64")
        body = index.make([(judged_amd, "linux/amd64"), (bare, ARM64)])
        client.put_manifest(f"a/{repository}", "half-judged", body, OCI_INDEX)
        client.put_manifest(f"a/{repository}", "amd64-only",
                            index.make([(judged_amd, "linux/amd64")]), OCI_INDEX)
    missing = run("verify", f"{a}/{repository}:amd64-only", "--platform", ARM64, "--gpus", "none")
    assert missing.returncode == 2, missing.stdout + missing.stderr
    assert "is an index of linux/amd64: it has no linux/arm64 image" in missing.stderr
    half = Manifest(sha256_of(body), OCI_INDEX, body).digest
    done = run("promote", f"{a}/{repository}@{half}", "--to", f"{c}/{repository}", "--tag", "half",
               "--allow-unsigned", "--allow-gpu-unverified")
    assert done.returncode == 1 and "linux/arm64" in done.stdout, done.stdout + done.stderr
    assert "half" not in skopeo_tags(registry, f"c/{repository}")


def test_a_two_platform_candidate_is_one_staged_index_judged_per_platform(
        engine, two_platforms, registry, tmp_path, pulled_tags_removed):
    """The pipeline's flow: `publish --candidate` stages each platform's image and their
    index; a verify job per platform picks its image from the staged index and attaches
    its verdict there; promote takes the index whole; a child build on staged parents takes
    each platform's image of them."""
    cuda = two_platforms.cuda
    repository, tag = cuda.rsplit(":", 1)
    python = next(t for t in two_platforms.first if "/python:" in t and not t.endswith("-arm64"))
    subprocess.run(["cosign", "generate-key-pair", "--output-key-prefix", str(tmp_path / "cosign")],
                   env={**os.environ, "COSIGN_PASSWORD": "pw"}, check=True, capture_output=True)
    user = logged_in(registry, tmp_path)
    run = LoggedIn({**user.env, "COSIGN_PASSWORD": "pw"}).run
    staging, production = f"{registry.address}/s", f"{registry.address}/p"
    (tmp_path / "candidates").mkdir()
    done = run("publish", python, cuda, *two_platforms.common, "--candidate", "--to", staging,
               "--json", str(tmp_path / "candidates" / "build.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    entries = json.loads((tmp_path / "candidates" / "build.json").read_text())["published"]
    index_entry = next(e for e in entries if e["image"] == cuda and not e["platform"])
    assert index_entry["platforms"] == ["linux/amd64", ARM64] and index_entry["status"] == "candidate"
    assert tag not in skopeo_tags(registry, f"s/{repository}")      # no human tag in staging
    staged_index = index_entry["digest"]

    given = ("--candidates", str(tmp_path / "candidates"), "--gpus", "none")
    for extra in ((), ("--platform", ARM64)):
        judged = run("attest", cuda, *given, *extra, "--signing-key", str(tmp_path / "cosign.key"))
        assert judged.returncode == 0, judged.stdout + judged.stderr
    raw = skopeo_json("inspect", "--raw", f"docker://{staging}/{repository}@{staged_index}",
                      registry=registry)
    for child in raw["manifests"]:
        assert child["digest"].replace(":", "-") + ".verdict" in skopeo_tags(registry, f"s/{repository}")

    trusted = ("--trusted-key", str(tmp_path / "cosign.pub"))
    # a verify job run again (--max-age, as `imgkit ci --max-age` writes it) keeps the
    # verdict its own platform's image carries, without emulating anything
    children = {f"{c['platform']['os']}/{c['platform']['architecture']}": c["digest"]
                for c in raw["manifests"]}
    for platform, extra in (("linux/amd64", ()), (ARM64, ("--platform", ARM64))):
        again = run("attest", cuda, *given, *extra, "--signing-key", str(tmp_path / "cosign.key"),
                    "--max-age", "1h", *trusted)
        assert again.returncode == 0, again.stdout + again.stderr
        assert f"kept the signed verdict {staging}/{repository}@{children[platform]}" in again.stderr
    done = run("promote", cuda, "--candidates", str(tmp_path / "candidates"), "--to",
               f"{production}/{repository}", "--tag", tag, *trusted, "--allow-gpu-unverified")
    assert done.returncode == 0, done.stdout + done.stderr
    assert skopeo_digest(registry, f"{production}/{repository}:{tag}") == staged_index
    # the site reads production's index: each platform's digest, its own signed verdict
    done = run("site", *two_platforms.common, "--registry", production, *trusted,
               "--out", str(tmp_path / "site"))
    assert done.returncode == 0, done.stdout + done.stderr
    grid = (tmp_path / "site" / "index.html").read_text()
    assert "2 of the 2 promoted image(s) carry a signed, passing verdict" in grid, grid[-3000:]
    page = next((tmp_path / "site" / "images").glob("*cuda*.html")).read_text()
    for child in raw["manifests"]:
        assert f"{production}/{repository}@{child['digest']}" in page

    # a build on staged parents takes each platform's image from their index
    planned = run("build", *two_platforms.common, "--candidates", str(tmp_path / "candidates"),
                  "--dry-run")
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert f"would take {cuda} from {staging}/{repository}@{staged_index} (linux/amd64)" in planned.stderr
    assert f"would take {cuda}-arm64 from {staging}/{repository}@{staged_index} ({ARM64})" in planned.stderr

    # next run, nothing moved: production's index is those very images, so nothing is staged
    done = run("publish", cuda, *two_platforms.common, "--candidate", "--to", f"{registry.address}/s2",
               "--reuse-from", production, "--json", str(tmp_path / "again.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    [again] = json.loads((tmp_path / "again.json").read_text())["published"]
    assert (again["status"], again["digest"], again["platforms"]) == (
        "reused", staged_index, ["linux/amd64", ARM64])
    assert skopeo_tags(registry, f"s2/{repository}") == []
    # and a runner without the images takes each platform's from production's index
    ids = {ref: engine.image(ref).id for ref in (cuda, f"{cuda}-arm64")}
    for ref in ids:
        engine.untag(ref)
    done = run("build", *two_platforms.common, "--reuse-from", production)
    assert done.returncode == 0, done.stdout + done.stderr
    for ref, platform in ((cuda, "linux/amd64"), (f"{cuda}-arm64", ARM64)):
        assert (f"reused {ref} from {production}/{repository}@{staged_index} (built from the "
                f"same inputs, {platform})") in done.stderr, done.stderr
        assert engine.image(ref).id == ids[ref]
    assert "building" not in done.stderr


def test_each_platform_built_by_a_job_of_its_own_then_merged_and_promoted_whole(
        engine, two_platforms, registry, tmp_path, pulled_tags_removed):
    """The pipeline `imgkit ci gitlab` writes for a two-platform family, its jobs run one by
    one as their runners would (the arm64 jobs here under QEMU, with the very commands an
    arm64 runner runs): each platform's build job stages its images alone, the arm64 child
    takes its parent's arm64 image from the arm64 job, each verify job judges its platform's
    staged digest, and promote merges the index first and copies it whole."""
    from imgkit.registry.client import OCI_INDEX

    from .helpers.pipelines import gitlab_pipeline, run_jobs
    own = two_platforms.common[3]
    cuda = two_platforms.cuda
    repository, tag = cuda.rsplit(":", 1)
    python = next(t for t in two_platforms.first if "/python:" in t and not t.endswith("-arm64"))
    checkout = tmp_path / "checkout"
    (checkout / "images").mkdir(parents=True)
    (checkout / "images" / "mini.yaml").write_text(
        (Path(two_platforms.common[1]) / "mini.yaml").read_text())
    staging, production = f"{registry.address}/split-s", f"{registry.address}/split-p"
    pipeline = gitlab_pipeline(checkout, own, staging, production)
    names = [k for k in pipeline if k != "stages" and not k.startswith(".")]
    slug = cuda.replace("/", "-").replace(":", "-").replace(".", "-")
    assert names == ["build-python-bookworm", "build-python-bookworm-arm64",
                     "build-cuda12-8-bookworm", "build-cuda12-8-bookworm-arm64",
                     f"verify-{slug}", f"verify-{slug}-arm64", "promote"]
    assert pipeline["build-cuda12-8-bookworm-arm64"]["tags"] == ["saas-linux-small-arm64"]

    logs = run_jobs(pipeline, names[:3], checkout, tmp_path, registry)
    # the arm64 child's runner has neither image: it takes the parent's arm64 image that
    # the parent's arm64 job staged (by digest) and builds its own on it (under QEMU here)
    for ref in (f"{cuda}-arm64", f"{python}-arm64"):
        engine.untag(ref)
    logs |= run_jobs(pipeline, names[3:-1], checkout, tmp_path, registry)
    arm_job = logs["build-cuda12-8-bookworm-arm64"]
    assert f"took {python}-arm64 from {staging}/{own}/python@sha256:" in arm_job, arm_job
    assert f"({ARM64})" in arm_job and f"building {cuda}-arm64" in arm_job, arm_job
    assert engine.image(f"{cuda}-arm64").platform == ARM64
    staged = {}
    for name, platform in (("cuda12-8-bookworm", "linux/amd64"), ("cuda12-8-bookworm-arm64", ARM64)):
        [entry] = json.loads((tmp_path / "jobs" / f"build-{name}" / "candidates" /
                              f"build-{name}.json").read_text())["published"]
        assert (entry["platform"], entry["index"], entry["platforms"]) == (platform, cuda, [])
        staged[platform] = entry["digest"]

    # one platform staged is not an index: merge refuses, naming the missing one
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "a.json").write_text((tmp_path / "jobs" / "build-cuda12-8-bookworm" / "candidates" /
                                  "build-cuda12-8-bookworm.json").read_text())
    refused = subprocess.run([sys.executable, "-m", "imgkit", "merge", cuda, "--images",
                              str(checkout / "images"), "--namespace", own, "--candidates", str(lone)],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"{cuda}: no staged {ARM64} image to merge (staged: linux/amd64)" in refused.stderr

    logs |= run_jobs(pipeline, ["promote"], checkout, tmp_path, registry)
    assert f"put the index of {cuda} (linux/amd64, {ARM64})" in logs["promote"], logs["promote"]
    raw = skopeo_json("inspect", "--raw", f"docker://{production}/{repository}:{tag}",
                      registry=registry)
    assert raw["mediaType"] == OCI_INDEX
    children = {f"{m['platform']['os']}/{m['platform']['architecture']}": m["digest"]
                for m in raw["manifests"]}
    assert children == staged                    # the very digests each platform's job staged
    for platform, ref in (("linux/amd64", cuda), (ARM64, f"{cuda}-arm64")):
        child = skopeo_json("inspect", "--raw", f"docker://{production}/{repository}@{children[platform]}",
                            registry=registry)
        assert child["config"]["digest"] == engine.image(ref).id
        assert children[platform].replace(":", "-") + ".verdict" in skopeo_tags(
            registry, f"split-p/{repository}")
    merged = json.loads((tmp_path / "jobs" / "promote" / "candidates" / "merged.json").read_text())
    [index_entry] = merged["published"]
    assert skopeo_digest(registry, f"{production}/{repository}:{tag}") == index_entry["digest"]


def test_a_manifest_list_the_docker_cli_made_is_judged_per_platform_and_promoted_whole(
        engine, two_platforms, registry, tmp_path, pulled_tags_removed):
    """An index imgkit did not make: each platform's image staged alone, then stitched into a
    Docker manifest list by `docker manifest create/push`. verify of its tag judges the
    host's image and, with --platform, arm64's (attaching each verdict next to that image);
    promote gates on both and copies the list whole, its digest unchanged."""
    from imgkit.registry.client import DOCKER_LIST
    cuda = two_platforms.cuda
    repository, tag = cuda.rsplit(":", 1)
    user = logged_in(registry, tmp_path)
    run, env = user.run, user.env
    stage = f"{registry.address}/tool"
    staged = {}
    for platform in ("linux/amd64", ARM64):
        out = tmp_path / f"{platform.split('/')[1]}.json"
        done = run("publish", cuda, *two_platforms.common, "--candidate", "--platform", platform,
                   "--to", stage, "--json", str(out))
        assert done.returncode == 0, done.stdout + done.stderr
        [entry] = json.loads(out.read_text())["published"]
        staged[platform] = entry["digest"]
    listed = f"{stage}/{repository}:list"
    for command in (["manifest", "create", "--insecure", listed,
                     *(f"{stage}/{repository}@{d}" for d in staged.values())],
                    ["manifest", "push", "--insecure", listed]):
        made = subprocess.run(["docker", *command], env=env, capture_output=True, text=True,
                              timeout=120)
        assert made.returncode == 0, made.stdout + made.stderr
    raw = skopeo_json("inspect", "--raw", f"docker://{listed}", registry=registry)
    assert raw["mediaType"] == DOCKER_LIST
    assert {m["platform"]["architecture"]: m["digest"] for m in raw["manifests"]} == {
        "amd64": staged["linux/amd64"], "arm64": staged[ARM64]}

    for extra, platform in (((), "linux/amd64"), (("--platform", ARM64), ARM64)):
        judged = run("attest", listed, *extra, "--gpus", "none")
        assert judged.returncode == 0, judged.stdout + judged.stderr
        assert platform in judged.stdout
        assert staged[platform].replace(":", "-") + ".verdict" in skopeo_tags(
            registry, f"tool/{repository}")
    digest = skopeo_digest(registry, listed)
    done = run("promote", f"{stage}/{repository}@{digest}", "--to",
               f"{registry.address}/toolprod/{repository}", "--tag", tag, "--allow-unsigned",
               "--allow-gpu-unverified")
    assert done.returncode == 0, done.stdout + done.stderr
    assert skopeo_digest(registry, f"{registry.address}/toolprod/{repository}:{tag}") == digest
