"""Every common way CUDA gets into an image, as real images built the way people build
them: each good one must pass `verify --gpus none`, each broken one fail naming why.
(The venv layout is imgkit's own: tests/test_docker_verify.py.)"""
from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from imgkit.verify.run import VerifyOptions, verify
from imgkit.verify.verdict import Verdict

from .helpers.images import MiniStack, build_from_files, no_verify_containers
from .helpers.layouts import EXTRACT, NVIDIA_ENV

pytestmark = pytest.mark.docker
CU11 = "nvidia-cuda-runtime-cu11==11.8.89"
CU12 = "nvidia-cuda-runtime-cu12==12.4.127"
NON_FREE = 'sed -i "s/ main$/ main non-free/" /etc/apt/sources.list && apt-get update -qq'
TOOLKIT_LIB = "/usr/local/cuda-11.8/targets/x86_64-linux/lib"
VERSION_JSON = ('{"cuda": {"name": "CUDA SDK", "version": "11.8.0"}, '
                '"cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": "11.8.89"}}')


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """NVIDIA's CUDA runtime wheels for 11.8 and 12.4 (about 1 MB each), fetched once."""
    folder = tmp_path_factory.mktemp("wheels")
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.11", "--platform", "manylinux1_x86_64",
                    "--platform", "manylinux2014_x86_64", "-d", str(folder), CU11, CU12],
                   check=True, timeout=300)
    return folder


def wheel(wheels: Path, series: str) -> Path:
    return next(wheels.glob(f"nvidia_cuda_runtime_{series}-*.whl"))


def bundling_wheel(runtime: Path, soname: str) -> bytes:
    """A framework wheel as auditwheel repairs one: the CUDA runtime it links is bundled
    under a hashed name in bundlefw.libs/, found by the package, not by the loader."""
    lib = zipfile.ZipFile(runtime).read(f"nvidia/cuda_runtime/lib/{soname}")
    hashed = "libcudart-0f1e2d3c.so." + soname.split(".so.")[1]
    files = {
        "bundlefw/__init__.py": "import ctypes, os\n_here = os.path.dirname(__file__)\n"
                                f"ctypes.CDLL(os.path.join(_here, '..', 'bundlefw.libs', '{hashed}'))\n",
        f"bundlefw.libs/{hashed}": lib,
        "bundlefw-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: bundlefw\nVersion: 1.0\n",
        "bundlefw-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: imgkit-tests\n"
                                        "Root-Is-Purelib: false\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + "bundlefw-1.0.dist-info/RECORD,,\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        for name, data in {**files, "bundlefw-1.0.dist-info/RECORD": record}.items():
            archive.writestr(name, data)  # type: ignore[arg-type]
    return buf.getvalue()


def layout(engine, namespace: str, parent: str, name: str, steps: str,
           files: dict[str, bytes] | None = None) -> str:
    """An image from `parent` with a few Dockerfile steps run as root; files in the context."""
    ref = f"{namespace}/layout:{name}"
    return build_from_files(engine, ref, {
        "Dockerfile": f"FROM {parent}\nUSER root\n{steps}\nUSER imgkit\n".encode(), **(files or {})})


def judge(engine, ref: str, *expect: str) -> Verdict:
    verdict = verify(engine, ref, VerifyOptions(gpus="none", expect=expect))
    assert no_verify_containers(engine) == []
    return verdict


def checks(verdict: Verdict) -> dict[str, str]:
    return {c.name: f"{c.verdict}: {c.measured} | {c.diagnosis}" for c in verdict.checks}


def cudart_source(verdict: Verdict) -> str:
    assert verdict.facts is not None
    return " ".join(c.version_source or "" for c in verdict.facts.libraries.copies("cudart"))


def test_system_pip_into_dist_packages(engine, mini_stack: MiniStack, namespace, wheels):
    steps = (f"COPY {wheel(wheels, 'cu11').name} /tmp/\n"
             f"RUN {NON_FREE} && apt-get install -y -qq --no-install-recommends python3-pip "
             "&& /usr/bin/python3 -m pip install -q --break-system-packages --no-index --no-deps /tmp/*.whl "
             "&& rm -rf /tmp/*.whl /var/lib/apt/lists/*\n"
             "ENV LD_LIBRARY_PATH=/usr/local/lib/python3.11/dist-packages/nvidia/cuda_runtime/lib\n"
             + NVIDIA_ENV.format(cuda="11.8"))
    ref = layout(engine, namespace, mini_stack.python, "dist-packages", steps,
                 {wheel(wheels, "cu11").name: wheel(wheels, "cu11").read_bytes()})
    good = judge(engine, ref)
    assert good.passed, good.failed
    assert "wheel nvidia_cuda_runtime_cu11 11.8.89" in cudart_source(good)
    assert "/usr/local/lib/python3.11/dist-packages/" in good.facts.libraries.copies("cudart")[0].realpath  # type: ignore[union-attr]
    # the same image under a CUDA 12.1 tag fails for the right reason, naming both versions
    wrong = checks(judge(engine, ref, "cuda=12.1"))
    assert "cudart is 11.8, --expect says 12.1" in wrong["cudart.version"]
    # its driver floor, cuda>=11.8, is right for the 11.8 runtime it holds: not the lie
    assert wrong["env NVIDIA_REQUIRE_CUDA"].startswith("pass")


def test_debian_non_free_packages(engine, mini_stack: MiniStack, namespace):
    steps = (f"RUN {NON_FREE} && apt-get install -y -qq --no-install-recommends libcudart11.0 "
             "&& rm -rf /var/lib/apt/lists/*\n" + NVIDIA_ENV.format(cuda="11.8"))
    ref = layout(engine, namespace, mini_stack.python, "debian-packages", steps)
    good = judge(engine, ref)
    assert good.passed, good.failed
    assert "dpkg libcudart11.0 11.8.89~" in cudart_source(good)
    wrong = checks(judge(engine, ref, "cuda=12.1"))
    assert "cudart is 11.8, --expect says 12.1" in wrong["cudart.version"]


def test_toolkit_tree_with_version_json(engine, mini_stack: MiniStack, namespace, wheels):
    name = wheel(wheels, "cu11").name
    # the layout NVIDIA's cuda-cudart-11-8 package leaves: a versioned tree, version.json,
    # the /usr/local/cuda link and an ld.so.conf.d entry
    steps = (f"COPY {name} /tmp/\n"
             f"RUN mkdir -p {TOOLKIT_LIB} && /usr/bin/python3 -c \"{EXTRACT}\" /tmp/{name} "
             f"nvidia/cuda_runtime/lib/libcudart.so.11.0 {TOOLKIT_LIB}/libcudart.so.11.8.89 \\\n"
             f" && ln -s libcudart.so.11.8.89 {TOOLKIT_LIB}/libcudart.so.11.0 \\\n"
             f" && ln -s libcudart.so.11.0 {TOOLKIT_LIB}/libcudart.so \\\n"
             " && ln -s targets/x86_64-linux/lib /usr/local/cuda-11.8/lib64 \\\n"
             " && ln -s cuda-11.8 /usr/local/cuda \\\n"
             f" && echo '{VERSION_JSON}' > /usr/local/cuda-11.8/version.json \\\n"
             f" && echo {TOOLKIT_LIB} > /etc/ld.so.conf.d/cuda-11-8.conf && ldconfig\n"
             + NVIDIA_ENV.format(cuda="11.8"))
    ref = layout(engine, namespace, mini_stack.python, "toolkit", steps,
                 {name: wheel(wheels, "cu11").read_bytes()})
    good = judge(engine, ref)
    assert good.passed, good.failed
    assert "toolkit /usr/local/cuda-11.8/version.json cuda_cudart 11.8.89" in cudart_source(good)
    # pip-installing the runtime again on top of the toolkit: two copies the loader can pick
    both = layout(engine, namespace, ref, "toolkit-and-wheel",
                  f"COPY {name} /tmp/\nRUN /opt/venv/bin/pip install -q --no-index --no-deps /tmp/{name}\n"
                  "ENV LD_LIBRARY_PATH=/opt/venv/lib/python3.11/site-packages/nvidia/cuda_runtime/lib",
                  {name: wheel(wheels, "cu11").read_bytes()})
    diagnosis = checks(judge(engine, both))["cudart.single-copy"]
    assert diagnosis.startswith("fail") and "/usr/local/cuda" in diagnosis and "/opt/venv/" in diagnosis


def test_an_image_made_the_way_ngc_makes_it_passes_on_its_own_driver_floor(
        engine, mini_stack: MiniStack, namespace, wheels):
    """NGC's framework containers set NVIDIA_REQUIRE_CUDA=cuda>=9.0, a floor on the host's
    driver that NVIDIA's forward-compatibility libraries make true (cuda-compat puts a newer
    driver's libcuda under /usr/local/cuda-X.Y/compat/; NGC links compat/lib to lib.real).
    The image is honest: it passes. Without those libraries the floor is a warning naming
    the driver it would fail on, still no failure."""
    name = wheel(wheels, "cu12").name
    compat = "/usr/local/cuda-12.4/compat/lib.real"
    lib = "/usr/local/cuda-12.4/targets/x86_64-linux/lib"
    steps = (f"COPY {name} /tmp/\n"
             f"RUN mkdir -p {lib} {compat} && /usr/bin/python3 -c \"{EXTRACT}\" /tmp/{name} "
             f"nvidia/cuda_runtime/lib/libcudart.so.12 {lib}/libcudart.so.12.4.127 \\\n"
             f" && ln -s libcudart.so.12.4.127 {lib}/libcudart.so.12 \\\n"
             " && ln -s cuda-12.4 /usr/local/cuda \\\n"
             f" && echo {lib} > /etc/ld.so.conf.d/cuda-12-4.conf && ldconfig \\\n"
             # a stand-in for the driver library cuda-compat ships (its file, not its code:
             # nothing loads it without a GPU), linked as NGC links it
             f" && printf 'libcuda' > {compat}/libcuda.so.550.54.15 \\\n"
             f" && ln -s libcuda.so.550.54.15 {compat}/libcuda.so.1 && ln -s lib.real "
             "/usr/local/cuda-12.4/compat/lib\n"
             'ENV CUDA_VERSION=12.4.1 NVIDIA_VISIBLE_DEVICES=all '
             'NVIDIA_DRIVER_CAPABILITIES=compute,utility NVIDIA_REQUIRE_CUDA="cuda>=9.0"\n')
    ref = layout(engine, namespace, mini_stack.python, "ngc", steps,
                 {name: wheel(wheels, "cu12").read_bytes()})
    honest = judge(engine, ref)
    assert honest.passed, honest.failed
    floor = checks(honest)["env NVIDIA_REQUIRE_CUDA"]
    assert floor.startswith("pass") and f"{compat}/libcuda.so.550.54.15" in floor, floor
    bare = layout(engine, namespace, ref, "ngc-without-compat",
                  "RUN rm -rf /usr/local/cuda-12.4/compat")
    warned = judge(engine, bare)
    assert warned.passed, warned.failed
    floor = checks(warned)["env NVIDIA_REQUIRE_CUDA"]
    assert floor.startswith("warn") and "525.60.13" in floor and "550.54.14" in floor, floor


@pytest.mark.parametrize("series,soname,label,verdict", [
    ("cu12", "libcudart.so.12", "12.4", "pass"),         # CUDA 12 tells its version without a driver
    ("cu12", "libcudart.so.12", "11.8", "fail"),         # a bundled runtime of another CUDA
    ("cu11", "libcudart.so.11.0", "11.8", "skip"),       # CUDA 11 needs a driver to tell: said so
])
def test_runtime_bundled_in_a_framework_wheel(engine, mini_stack: MiniStack, namespace, wheels,
                                              series, soname, label, verdict):
    data = bundling_wheel(wheel(wheels, series), soname)
    steps = ("COPY bundlefw-1.0-py3-none-any.whl /tmp/\n"
             "RUN /opt/venv/bin/pip install -q --no-index --no-deps /tmp/bundlefw-1.0-py3-none-any.whl\n"
             + NVIDIA_ENV.format(cuda=label))
    ref = layout(engine, namespace, mini_stack.python, f"bundled-{series}-{label}", steps,
                 {"bundlefw-1.0-py3-none-any.whl": data})
    result = judge(engine, ref)
    cudart = checks(result)["cudart.version"]
    assert cudart.startswith(verdict), cudart
    assert result.passed == (verdict != "fail"), result.failed
    copy = result.facts.libraries.copies("cudart")[0]  # type: ignore[union-attr]
    assert copy.where == "environment" and copy.owner is not None and copy.owner.name == "bundlefw"
    if verdict == "fail":
        assert "cudart is 12.4, its labels say 11.8" in cudart
    if verdict == "skip":
        assert "bundled in bundlefw" in cudart and "GPU" in cudart


def dist_info(name: str, version: str, requires: tuple[str, ...] = (), tag: str = "") -> dict[str, bytes]:
    """A distribution's metadata as an installed wheel leaves it (the files pip check reads)."""
    folder = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires)
    files = {f"{folder}/METADATA": metadata.encode()}
    if tag:
        files[f"{folder}/WHEEL"] = f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n".encode()
    return files


def test_broken_requirements_are_named_as_pip_check_names_them(engine, mini_stack: MiniStack,
                                                               namespace):
    """The probe checks requirements without pip's start-up: on an image with a missing, a
    conflicting, a marker-excluded, an extra-only and a wrongly-cased requirement, it finds
    exactly the lines the image's own `pip check` prints, an aarch64-only wheel included
    (what pip's check looks for since pip 24; the venv's pip is PyPI's current one)."""
    site = "/opt/venv/lib/python3.11/site-packages"
    files = {**dist_info("brokenfw", "1.0", ("missing-dep>=1", "pip<1", 'py2only ; python_version < "3"',
                                             'extraonly ; extra == "x"', "Helper.Lib[fast]>=0.2")),
             **dist_info("helper_lib", "0.1"),
             **dist_info("armonly", "2.0", tag="cp311-cp311-manylinux_2_17_aarch64")}
    steps = f"COPY . {site}/\nRUN rm {site}/Dockerfile"
    ref = layout(engine, namespace, mini_stack.python, "broken-requirements", steps, files)
    verdict = judge(engine, ref)
    check = next(c for c in verdict.checks if c.name == "pip.check")
    assert check.verdict == "fail" and check.measured == "4 problem(s)", check
    assert verdict.facts is not None and verdict.facts.pip_check is not None
    found = set(verdict.facts.pip_check.problems)
    pip = engine.client.containers.run(ref, ["python3", "-m", "pip", "check"], detach=True,
                                       environment={"PIP_DISABLE_PIP_VERSION_CHECK": "1"},
                                       network_disabled=True)
    try:
        assert pip.wait(timeout=120)["StatusCode"] == 1
        said = set(pip.logs(stdout=True, stderr=False).decode().splitlines())
    finally:
        pip.remove(force=True)
    assert said == {"brokenfw 1.0 requires missing-dep, which is not installed.",
                    "brokenfw 1.0 has requirement pip<1, but you have pip "
                    f"{next(w.split()[-1].rstrip('.') for w in said if 'pip<1' in w)}.",
                    "brokenfw 1.0 has requirement Helper.Lib[fast]>=0.2, but you have helper-lib 0.1.",
                    "armonly 2.0 is not supported on this platform"}
    assert found == said
