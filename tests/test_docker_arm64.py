"""arm64 images on this x86-64 machine, under QEMU (qemu-user-static's binfmt handler):
a Debian arm64 base made by debootstrap, the ways CUDA gets into an image as arm64 twins
of tests/test_docker_layouts.py, and `imgkit verify --platform linux/arm64 --gpus none`
judging them with the same checks and words as on amd64 (and refusing what it cannot do
here: a GPU under emulation, a platform the image is not)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from imgkit import platforms
from imgkit.verify.run import VerifyOptions, verify
from imgkit.verify.verdict import Verdict

from .conftest import build_from_files, no_verify_containers
from .test_cli import imgkit
from .test_docker_layouts import EXTRACT, NVIDIA_ENV

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
def arm64_base(engine, namespace) -> str:  # type: ignore[no-untyped-def]
    """Debian 12 arm64 from debootstrap (its second stage under QEMU, ~2 min the first time:
    the base is kept, as the amd64 one is), also tagged as the test namespace's."""
    from imgkit.builder.base import ensure_base
    from imgkit.matrix import compat
    from imgkit.matrix.plan import Settings, base_ref
    bookworm = compat.load().os_release("bookworm")
    base = platforms.local_ref(base_ref(bookworm, Settings()), ARM64)
    ensure_base(engine, base, bookworm, platform=ARM64)
    info = engine.image(base)
    assert info is not None and info.platform == ARM64    # the config says arm64, not the host's
    engine.tag(info.id, f"{namespace}/debian:bookworm-arm64")
    return base


@pytest.fixture(scope="module")
def arm64_python(engine, namespace, arm64_base) -> str:  # type: ignore[no-untyped-def]
    """The arm64 base with python3 and a venv, as a user builds one."""
    return build_from_files(engine, f"{namespace}/python:3.11-bookworm-arm64", {"Dockerfile": (
        f"FROM {arm64_base}\n"
        "RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends python3 "
        "python3-venv >/dev/null && rm -rf /var/lib/apt/lists/* && python3 -m venv /opt/venv "
        "&& useradd --create-home --uid 1000 imgkit\n"
        "ENV PATH=/opt/venv/bin:$PATH\nUSER imgkit\n").encode()})


def arm64_layout(engine, namespace: str, parent: str, name: str, steps: str,  # type: ignore[no-untyped-def]
                 files: dict[str, bytes]) -> str:
    return build_from_files(engine, f"{namespace}/layout-arm64:{name}", {
        "Dockerfile": f"FROM {parent}\nUSER root\n{steps}\nUSER imgkit\n".encode(), **files})


def judge(engine, ref: str) -> Verdict:  # type: ignore[no-untyped-def]
    verdict = verify(engine, ref, VerifyOptions(gpus="none", platform=ARM64))
    assert no_verify_containers(engine) == []
    return verdict


def checks(verdict: Verdict) -> dict[str, str]:
    return {c.name: f"{c.verdict}: {c.measured} | {c.diagnosis}" for c in verdict.checks}


def test_the_aarch64_wheel_in_a_venv(engine, arm64_python, namespace, wheels):  # type: ignore[no-untyped-def]
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


def test_an_sbsa_toolkit_tree(engine, arm64_python, namespace, wheels):  # type: ignore[no-untyped-def]
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


def test_a_library_of_the_other_architecture_is_named(engine, arm64_python, namespace, wheels):  # type: ignore[no-untyped-def]
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


def test_the_cli_verifies_arm64_here_without_a_gpu_only(arm64_python) -> None:  # type: ignore[no-untyped-def]
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


def test_build_makes_each_platform_and_each_verifies(engine, namespace, arm64_base,  # type: ignore[no-untyped-def]
                                                     tmp_path):
    """`imgkit build` of a family for both platforms: the host's images under their tags, the
    arm64 ones as TAG-arm64 standing on each other (configs say arm64, the same input hash),
    each verifies as its platform; a second build has nothing to do. (A namespace of its own:
    other modules expect the session's namespace to build its python layer themselves.)"""
    own = f"{namespace}-platforms"
    for ref in (f"{namespace}/debian:bookworm", arm64_base):
        engine.tag(engine.image(ref).id, f"{own}/debian:bookworm" + ("-arm64" if ref == arm64_base else ""))
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
    import json
    built = {i["tag"]: i["status"] for i in json.loads(report.read_text())["images"]}
    cuda = next(t for t in built if "/cuda:" in t and not t.endswith("-arm64"))
    assert set(built) >= {cuda, f"{cuda}-arm64"}
    here, there = engine.image(cuda), engine.image(f"{cuda}-arm64")
    assert here.platform == "linux/amd64" and there.platform == ARM64
    assert here.labels["org.imgkit.input-hash"] == there.labels["org.imgkit.input-hash"]
    assert there.layers[:len(engine.image(arm64_base).layers)] == engine.image(arm64_base).layers
    judged = verify(engine, f"{cuda}-arm64", VerifyOptions(gpus="none", platform=ARM64))
    assert judged.passed, judged.failed
    assert checks(judged)["platform"].startswith("pass: linux/arm64")
    assert checks(judged)["cudart.version"].startswith("pass: 12.8")
    assert verify(engine, cuda, VerifyOptions(gpus="none")).passed
    again = build()
    assert again.returncode == 0, again.stderr
    assert {i["status"] for i in json.loads(report.read_text())["images"]} == {"up-to-date"}
