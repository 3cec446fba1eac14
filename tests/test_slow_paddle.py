"""The README's main job for real: the CUDA 11.8 slice with Paddle 2.6.2 (about 7 GB,
a few minutes on a fresh machine), then the verifier on it and on broken variants."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers.images import ROOT, no_verify_containers
from .helpers.jobs import derive, failed

pytestmark = [pytest.mark.docker, pytest.mark.slow]
PADDLE = "paddle:2.6.2-gpu-cuda11.8-cudnn8"


def imgkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "imgkit", *args], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "COLUMNS": "200"})


@pytest.fixture(scope="module")
def slice_built(engine, base_image) -> str:
    result = imgkit("build", "--cuda", "11.8", "--jobs", "3")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return PADDLE


def test_paddle_works_as_non_root(engine, slice_built):
    code = ("import ctypes, os, paddle; ctypes.CDLL('libcudnn.so'); "
            "print(os.getuid(), paddle.version.cuda(), paddle.version.cudnn())")
    out = engine.client.containers.run(slice_built, ["python3", "-c", code], remove=True)
    uid, cuda, cudnn = out.decode().split()[-3:]
    assert uid != "0" and cuda == "11.8" and cudnn.startswith("8.")


def test_second_build_skips_everything(slice_built, tmp_path: Path):
    start = time.monotonic()
    result = imgkit("build", "--cuda", "11.8", "--json", str(tmp_path / "build.json"))
    assert result.returncode == 0
    images = json.loads((tmp_path / "build.json").read_text())["images"]
    assert len(images) == 10 and {i["status"] for i in images} == {"up-to-date"}
    assert all(i["id"].startswith("sha256:") and i["size"] > 0 for i in images)
    assert time.monotonic() - start < 30


def test_verify_paddle_without_gpu(engine, slice_built, tmp_path: Path):
    report = tmp_path / "v.json"
    result = imgkit("verify", slice_built, "--gpus", "none", "--json", str(report),
                    "--junit", str(tmp_path / "v.xml"))
    assert result.returncode == 0, result.stdout
    doc = json.loads(report.read_text())
    families = doc["facts"]["libraries"]["families"]
    assert families["cudart"]["copies"][0]["version"] == "11.8"
    assert families["cudnn"]["copies"][0]["version"].startswith("8.6")
    assert doc["passed"] and not doc["gpu_verified"]
    assert "<testsuite" in (tmp_path / "v.xml").read_text()
    assert no_verify_containers(engine) == []


def test_paddle_import_failure_names_libgomp(engine, slice_built, namespace):
    ref = derive(engine, namespace, slice_built, "no-libgomp",
                 "RUN rm -f /usr/lib/x86_64-linux-gnu/libgomp.so.1*")
    assert "libgomp.so.1" in failed(engine, ref)["paddle.import"]


def test_bare_name_that_does_not_resolve(engine, slice_built, namespace):
    ref = derive(engine, namespace, slice_built, "no-bare-cudnn",
                 "RUN rm /opt/imgkit/lib/libcudnn.so")
    assert "libcudnn.so" in failed(engine, ref)["dlopen libcudnn.so"]


def test_the_paddle_stack_under_another_cuda_names_both(engine, slice_built):
    fails = failed(engine, slice_built, expect=("cuda=12.1",))
    assert "cudart is 11.8, --expect says 12.1" in fails["cudart.version"]
    # cuBLAS says 11.11.3 itself (its wheel is 11.11.3.6): the compat data places it in 11.8
    assert "cuBLAS 11.11.3 " in fails["stack.cublas"]
    assert "belongs to CUDA 11.8, not CUDA 12.1" in fails["stack.cublas"]
    assert "belongs to CUDA 11.8" in fails["stack.cudnn"]    # as cuDNN itself says
    assert "belongs to CUDA 11" in fails["stack.nccl"]       # nvidia-nccl-cu11
    assert "env NVIDIA_REQUIRE_CUDA" not in fails      # a floor right for what it holds


def test_the_sbom_of_the_paddle_image_validates_and_names_its_stack(slice_built, tmp_path: Path):
    from .helpers.sbom import components, valid
    out = tmp_path / "paddle.cdx.json"
    result = imgkit("sbom", slice_built, "--out", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    document = valid(out.read_text())
    found = components(document)
    assert found[("pypi", "paddlepaddle-gpu")] == {"2.6.2"}
    assert any(v.startswith("8.6") for v in found[("pypi", "nvidia-cudnn-cu11")])
    assert found[("deb", "libgomp1")] and all(v for v in found[("deb", "libgomp1")])
    assert any(v.startswith("8.6") for v in found[("nvidia", "cudnn")])      # from the library
    assert document["metadata"]["component"]["name"] == "paddle"


JUPYTER = "paddle-jupyter:2.6.2-gpu-cuda11.8-cudnn8"


def test_the_jupyter_extension_works_as_non_root_and_demands_its_token(engine, slice_built, tmp_path):
    """The bundled extension: built on the Paddle layers, cv2/jupyterlab/paddle import as the
    non-root user, verify passes it (pip check, the parent's stack and the family's declared
    checks included: its server answers /api on 8888), and
    JupyterLab answers its API with the token (200) and refuses it without (403)."""
    import urllib.error
    import urllib.request

    from .helpers.registry import free_port
    out = engine.client.containers.run(JUPYTER, ["python3", "-c", (
        "import os, cv2, jupyterlab, paddle; print(os.getuid(), cv2.__version__, "
        "jupyterlab.__version__, paddle.__version__)")], remove=True)
    uid, cv2, lab, paddle = out.decode().split()[-4:]
    assert (uid, cv2, lab, paddle) == ("1000", "4.10.0", "4.2.5", "2.6.2")
    assert engine.image(JUPYTER).layers[: len(engine.image(PADDLE).layers)] == \
        engine.image(PADDLE).layers                               # on the Paddle layers
    assert imgkit("verify", PADDLE, "--gpus", "none").returncode == 0   # the parent's record
    report = tmp_path / "v.json"
    result = imgkit("verify", JUPYTER, "--gpus", "none", "--json", str(report),
                    "--checks", str(ROOT / "images" / "checks" / "paddle-jupyter.yaml"))
    assert result.returncode == 0, result.stdout
    checks = {c["name"]: c["verdict"] for c in json.loads(report.read_text())["checks"]}
    assert checks["pip.check"] == "pass" and checks["parent-stack"] == "pass"
    # the family's own declared checks, its service test included: JupyterLab answers
    assert checks["check: jupyterlab answers on 8888"] == "pass", checks
    assert [v for n, v in checks.items() if n.startswith("check: ")] == ["pass"] * 5, checks

    port = free_port()
    container = engine.client.containers.run(JUPYTER, detach=True, ports={"8888/tcp": port},
                                             environment={"JUPYTER_TOKEN": "imgkit-secret"})
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(
                        f"http://127.0.0.1:{port}/api/status?token=imgkit-secret", timeout=5) as r:
                    assert r.status == 200
                    break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, container.logs().decode()[-2000:]
                time.sleep(1)
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=5)
            raise AssertionError("JupyterLab answered without its token")
        except urllib.error.HTTPError as exc:
            assert exc.code == 403
        container.reload()
        assert container.attrs["Config"]["User"] in ("imgkit", "1000")
    finally:
        container.remove(force=True)


def test_the_k8s_job_of_the_paddle_image_gives_the_verdict_of_a_local_run(engine, slice_built, tmp_path):
    """The Kubernetes export of the slice, its Paddle Job's own command run with plain
    `docker run` (no GPU: gpus_per_job = 0), the log judged by `imgkit judge`: the same checks and
    exit code as `imgkit verify --gpus none`."""
    from .helpers.jobs import run_job_command
    jobs = tmp_path / "k8s"
    (tmp_path / "cluster.toml").write_text("gpus_per_job = 0\n")
    result = imgkit("export", "k8s", "--only", PADDLE, "--registry", "registry.example.com/ml",
                    "--cluster", str(tmp_path / "cluster.toml"), "--out", str(jobs))
    assert result.returncode == 0, result.stderr
    (tmp_path / "log.txt").write_text(run_job_command(engine, jobs, slice_built))
    remote = imgkit("judge", slice_built, str(tmp_path / "log.txt"), "--json",
                    str(tmp_path / "remote.json"))
    local = imgkit("verify", slice_built, "--gpus", "none", "--json", str(tmp_path / "here.json"))
    assert remote.returncode == local.returncode == 0, remote.stdout

    def checks(path: Path) -> dict[str, str]:
        return {c["name"]: c["verdict"] for c in json.loads(path.read_text())["checks"]}
    assert checks(tmp_path / "remote.json") == checks(tmp_path / "here.json")
