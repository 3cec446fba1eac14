"""The verifier against real containers: a corpus of deliberately broken images, each
failing with the right diagnosis; no container is ever left behind."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from imgkit.errors import HostError
from imgkit.verify.run import VerifyOptions, verify

from .helpers import leftovers
from .helpers.images import build_from_files, no_verify_containers
from .helpers.jobs import derive, failed, run_job_command

pytestmark = pytest.mark.docker
CUDART = "/opt/venv/lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libcudart.so.11.0"




def with_site_file(engine, ref: str, parent: str, path: str, text: str) -> str:
    """`parent` with one more file in its venv's site-packages, at `path` there."""
    return build_from_files(engine, ref, {
        "Dockerfile": (f"FROM {parent}\nUSER root\n"
                       f"COPY site-file /opt/venv/lib/python3.11/site-packages/{path}\n"
                       "USER imgkit\n").encode(),
        "site-file": text.encode()})




def test_good_image_passes_without_gpu_and_says_so(engine, mini):
    verdict = verify(engine, mini, VerifyOptions(gpus="none"))
    assert not verdict.failed, verdict.failed
    assert not verdict.gpu_verified
    cudart = next(c for c in verdict.checks if c.name == "cudart.version")
    assert cudart.measured == "11.8"


def test_a_probe_grown_past_the_kernels_limit_for_one_variable_still_runs(engine, mini, monkeypatch):
    """The probe's zip, 200 KB bigger than it is: in one environment variable its container
    would not start (test_probe_boot.py); in parts, the same verdict comes back."""
    import io
    import os

    from imgkit.shipped import probe_zip
    from imgkit.verify import run
    buf = io.BytesIO(probe_zip())
    with zipfile.ZipFile(buf, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("imgkit_probe/padding.bin", os.urandom(200_000))   # does not compress
    monkeypatch.setattr(run, "probe_zip", lambda: buf.getvalue())
    assert len(run.probe_variables(buf.getvalue())) > 2
    verdict = verify(engine, mini, VerifyOptions(gpus="none"))
    assert not verdict.failed, verdict.failed
    assert next(c for c in verdict.checks if c.name == "cudart.version").measured == "11.8"


def test_version_mismatch_with_the_tag(engine, mini, namespace):
    # labels are exact and win; an image without them is judged by its tag
    ref = derive(engine, namespace, mini, "cuda12.4-cudnn9", 'LABEL org.imgkit.cuda=""')
    assert "cudart.version" in failed(engine, ref)
    assert "cudart.version" in failed(engine, mini, expect=("cuda=12.4",))


def test_what_the_environment_claims_is_held_against_the_libraries(engine, mini, namespace):
    # NVIDIA's and NGC's images say their versions in ENV; the image config is read, not the tag
    right = derive(engine, namespace, mini, "env-right", "ENV CUDA_VERSION=11.8.0")
    assert "env CUDA_VERSION" not in failed(engine, right)
    wrong = derive(engine, namespace, mini, "env-wrong",
                   "ENV CUDA_VERSION=12.4.1 NCCL_VERSION=2.21.5-1")
    said = failed(engine, wrong)
    assert "CUDA_VERSION=12.4.1, but its cudart is 11.8" in said["env CUDA_VERSION"]
    assert "holds no nccl" in said["env NCCL_VERSION"]


def test_a_version_the_table_lacks_is_read_from_what_the_image_installed(engine, mini, namespace):
    """A team's PIP_VERSION and TZDATA_VERSION, by the Python distribution and the Debian
    package of those names (the probe lists what is installed in the same run, because the
    image states such names); NGC's release number is never held to a package."""
    pip = next(json.loads(line)["version"] for line in [subprocess.run(
        ["docker", "run", "--rm", "--entrypoint", "python3", mini, "-c",
         "import json, importlib.metadata as m; print(json.dumps({'version': m.version('pip')}))"],
        check=True, capture_output=True, text=True).stdout])
    stale = derive(engine, namespace, mini, "pip-stale",
                   "ENV PIP_VERSION=9.0.1 TZDATA_VERSION=1999a NVIDIA_TENSORFLOW_VERSION=24.10-tf2")
    said = failed(engine, stale)
    assert said["env PIP_VERSION"] == (f"the image says PIP_VERSION=9.0.1, but its Python package "
                                       f"pip is {pip} (read by the variable's name)")
    assert said["env TZDATA_VERSION"].startswith(
        "the image says TZDATA_VERSION=1999a, but its Debian package tzdata is 20")
    verdict = verify(engine, stale, VerifyOptions(gpus="none"))
    info = next(c for c in verdict.checks if c.name == "env *_VERSION")
    assert "NVIDIA_TENSORFLOW_VERSION=24.10-tf2" in info.diagnosis and info.verdict == "info"
    honest = derive(engine, namespace, mini, "pip-honest", f"ENV PIP_VERSION={pip}")
    verdict = verify(engine, honest, VerifyOptions(gpus="none"))
    assert next(c for c in verdict.checks if c.name == "env PIP_VERSION").verdict == "pass"


def test_the_rest_of_the_stack_is_read_from_each_library_itself(engine, mini, namespace,
                                                                 tmp_path):
    """NGC's NVJPEG_VERSION against a real libnvjpeg (from NVIDIA's own 5 MB wheel, fetched by
    pip): the probe reads 12.4.0 from the library, no GPU needed; the image that says so
    passes, one that says 12.3.3 fails naming both."""
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                    "--only-binary=:all:", "--platform", "manylinux2014_x86_64", "-d", str(tmp_path),
                    "nvidia-nvjpeg-cu12==12.4.0.76"], check=True, capture_output=True)
    with zipfile.ZipFile(next(tmp_path.glob("nvidia_nvjpeg_cu12-*.whl"))) as wheel:
        library = wheel.read("nvidia/nvjpeg/lib/libnvjpeg.so.12")
    dali = "nvidia_dali_cuda120-1.43.0.dist-info"     # and DALI, a Python package, by its record
    honest = build_from_files(engine, f"{namespace}/broken:nvjpeg", {
        "Dockerfile": (f"FROM {mini}\nUSER root\nCOPY libnvjpeg.so.12 /usr/local/lib/\n"
                       f"COPY METADATA /opt/venv/lib/python3.11/site-packages/{dali}/METADATA\n"
                       "RUN ldconfig\nUSER imgkit\n"
                       "ENV NVJPEG_VERSION=12.4.0.76 DALI_VERSION=1.43.0\n").encode(),
        "libnvjpeg.so.12": library,
        "METADATA": b"Metadata-Version: 2.1\nName: nvidia-dali-cuda120\nVersion: 1.43.0\n\n"})
    verdict = verify(engine, honest, VerifyOptions(gpus="none"))
    said = next(c for c in verdict.checks if c.name == "env NVJPEG_VERSION")
    assert said.verdict == "pass" and said.measured == "12.4.0", said
    said = next(c for c in verdict.checks if c.name == "env DALI_VERSION")
    assert said.verdict == "pass" and said.measured == "1.43.0", said
    lying = derive(engine, namespace, honest, "nvjpeg-lie", "ENV NVJPEG_VERSION=12.3.3.54")
    assert "NVJPEG_VERSION=12.3.3.54, but its nvjpeg is 12.4.0" in failed(
        engine, lying)["env NVJPEG_VERSION"]


def test_a_search_path_that_takes_in_the_working_directory_is_a_warning(engine, mini, namespace):
    """`${EXTRA_LIBS}:${LD_LIBRARY_PATH}` with EXTRA_LIBS set nowhere: docker writes a
    leading ':' into the config, and the loader would search each program's working
    directory; verify says so, and the image still passes."""
    ref = derive(engine, namespace, mini, "search-path",
                 "ENV LD_LIBRARY_PATH=${EXTRA_LIBS}:${LD_LIBRARY_PATH}")
    verdict = verify(engine, ref, VerifyOptions(gpus="none"))
    check = next(c for c in verdict.checks if c.name == "search path LD_LIBRARY_PATH")
    assert (check.verdict, check.measured) == ("warn", ":/opt/imgkit/lib"), check
    assert check.diagnosis.startswith("an empty entry: its programs look for shared libraries")
    assert not verdict.failed, verdict.failed


def test_unloadable_library_is_named(engine, mini, namespace):
    ref = derive(engine, namespace, mini, "truncated",
                 f"RUN head -c 4096 {CUDART} > /usr/local/lib/libnccl.so.2 && ldconfig")
    fails = failed(engine, ref)
    assert "/usr/local/lib/libnccl.so.2" in fails["nccl.loadable"]


def test_two_copies_on_the_loader_path(engine, mini, namespace):
    ref = derive(engine, namespace, mini, "two-copies",
                 f"RUN cp {CUDART} /usr/local/lib/ && ldconfig")
    diagnosis = failed(engine, ref)["cudart.single-copy"]
    assert "/usr/local/lib/libcudart.so.11.0" in diagnosis and "/opt/imgkit/lib" in diagnosis


def test_driver_library_baked_in(engine, mini, namespace):
    ref = derive(engine, namespace, mini, "driver-lib",
                 f"RUN cp {CUDART} /usr/lib/x86_64-linux-gnu/libcuda.so.1")
    assert "libcuda.so.1" in failed(engine, ref)["driver-libs-not-baked"]


def test_no_python3_is_a_verdict_not_a_traceback(engine, base_image):
    assert "python3" in failed(engine, base_image)


def test_unknown_image_is_usage_error(engine, mini):
    result = subprocess.run([sys.executable, "-m", "imgkit", "verify", "nope/nothing:1.0"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "not found" in result.stderr
    assert "did you mean" not in result.stderr
    # a tag the engine holds, misspelt: that tag; another version of it is no misspelling
    repository, tag = mini.rsplit(":", 1)
    typo = f"{repository[:-1]}:{tag}"
    result = subprocess.run([sys.executable, "-m", "imgkit", "verify", typo, "--gpus", "none"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and f"hint: did you mean {mini!r}?" in result.stderr, result.stderr
    other = f"{repository}:{re.sub(r'[0-9]', '7', tag)}"
    result = subprocess.run([sys.executable, "-m", "imgkit", "verify", other, "--gpus", "none"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "did you mean" not in result.stderr, result.stderr
    # that one, and the repository without a tag (`:latest`), get the repository's tags
    # (others of the session's may be there too)
    def listed(said: str) -> list[str]:
        return re.findall(rf"hint: {re.escape(repository)} has: (.*) \(name one: ", said)[0].split(", ")
    assert tag in listed(result.stderr), result.stderr
    result = subprocess.run([sys.executable, "-m", "imgkit", "verify", repository, "--gpus", "none"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and tag in listed(result.stderr), result.stderr


@pytest.mark.parametrize("reference, said", [
    ("Nope/Paddle:2.6.2", "must be lowercase\n  hint: try 'nope/paddle:2.6.2'"),
    ("nope:1:2", "invalid reference format"),             # the engine's own refusal, exit 2
])
def test_a_reference_the_engine_cannot_parse_is_the_users_mistake(engine, reference, said):
    result = subprocess.run([sys.executable, "-m", "imgkit", "verify", reference, "--gpus", "none"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert f"{reference!r} is not an image reference the engine takes" in result.stderr
    assert said in result.stderr and "Traceback" not in result.stderr


def test_an_empty_reference_is_the_users_mistake_not_the_engines_answer(engine):
    # `imgkit verify "$IMAGE"` with IMAGE unset: the engine answers /images//json with a redirect
    for command in (["verify", "", "--gpus", "none"], ["outdated", ""]):
        result = subprocess.run([sys.executable, "-m", "imgkit", *command], capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 2, result.stderr
        assert "an empty image reference" in result.stderr and "301" not in result.stderr


def test_gpus_all_without_nvidia_runtime_is_a_host_error(engine, mini):
    if "nvidia" in json.dumps(engine.client.info().get("Runtimes", {})):
        pytest.skip("this host has the NVIDIA runtime")
    with pytest.raises(HostError) as info:
        verify(engine, mini, VerifyOptions(gpus="all"))
    assert "NVIDIA Container Toolkit" in info.value.hint
    assert info.value.hint.endswith("on a machine with no NVIDIA GPU, verify without one: "
                                    "--gpus none (the verdict says the GPU was not verified)")
    assert no_verify_containers(engine) == []
    result = subprocess.run([sys.executable, "-m", "imgkit", "verify", mini],
                            capture_output=True, text=True)
    assert result.returncode == 3 and "nvidia-ctk" in result.stderr


def test_structure_with_testinfra(engine, mini):
    testinfra = pytest.importorskip("testinfra")
    container = engine.client.containers.run(mini, ["sleep", "300"], detach=True)
    try:
        host = testinfra.get_host(f"docker://{container.id}")
        assert host.user().name == "imgkit"
        assert host.file("/workspace").user == "imgkit"
        assert host.file("/opt/imgkit/lib/libcudart.so").is_symlink
        assert host.run("python3 -c 'import ctypes; ctypes.CDLL(\"libcudart.so\")'").rc == 0
        assert not host.file("/usr/lib/x86_64-linux-gnu/libcuda.so.1").exists
        assert host.run("imgkit-check --no-gpu").rc == 0
    finally:
        container.remove(force=True)


# -- hostile images: a python3 that is not what it claims ------------------------------------
def fake_python(engine, namespace: str, base: str, name: str, script: str,
                files: dict[str, bytes] | None = None) -> str:
    """An image (from the Debian base, which has no python3) whose `python3` is `script`."""
    ref = f"{namespace}/hostile:{name}"
    return build_from_files(engine, ref, {
        "Dockerfile": (f"FROM {base}\nCOPY . /fake/\n"
                       "RUN install -m 755 /fake/python3 /usr/local/bin/python3\n").encode(),
        "python3": f"#!/bin/sh\n{script}\n".encode(), **(files or {})})


def cli_verify(ref: str, tmp_path, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / "verdict.json"
    proc = subprocess.run([sys.executable, "-m", "imgkit", "verify", ref, "--gpus", "none",
                           "--json", str(out), *extra], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-2000:]
    return proc, json.loads(out.read_text())


def test_a_replayed_report_does_not_match_the_image(engine, mini, base_image, namespace, tmp_path):
    good = verify(engine, mini, VerifyOptions(gpus="none"))
    assert good.facts is not None and not good.failed
    report = good.facts.model_dump_json().encode()
    ref = fake_python(engine, namespace, base_image, "replay", framed("cat /fake/report.json"),
                      {"report.json": report})
    proc, verdict = cli_verify(ref, tmp_path, "--expect", "cuda=11.8")
    assert proc.returncode == 1 and not verdict["passed"]
    checks = {c["name"]: c for c in verdict["checks"]}
    assert checks["report.matches-image"]["verdict"] == "fail"
    assert "is not in the image" in checks["report.matches-image"]["diagnosis"]
    assert checks["report.user"]["verdict"] == "fail"  # the base image runs as root
    assert no_verify_containers(engine) == []


def framed(script: str) -> str:
    """`script`'s output framed as the probe frames its report, with the token verify
    chose (a hostile python3 can read it: the report is judged on its merits anyway)."""
    return ('printf "\\nIMGKIT-REPORT-BEGIN %s\\n" "$IMGKIT_REPORT_MARK"; '
            f'{script}; printf "\\nIMGKIT-REPORT-END %s\\n" "$IMGKIT_REPORT_MARK"')


def test_one_container_serves_the_run_and_the_look_at_the_images_files(
        engine, namespace):
    """verify reads the files a report names through the probe's exited container (no
    second container) when its root was read-only; a writable run (a team's tests ride
    along) has them read from the image, not from what the run left."""
    import time

    from imgkit.engine import RunSpec
    image = f"{namespace}/debian:bookworm"        # this session's own name: only its events
    paths = ["/etc/debian_version", "/etc/issue", "/no/such/file"]
    as_built = engine.stat_files(image, paths)
    assert as_built["/etc/debian_version"] is not None and as_built["/no/such/file"] is None

    def created(since: float) -> int:
        events = engine.api.events(since=since, until=time.time(), decode=True,
                                   filters={"type": "container", "event": "create", "image": image})
        return sum(1 for _ in events)

    since = time.time()
    with engine.ran_container(RunSpec(image=image, entrypoint=("/bin/sh", "-c"),
                                      command=("true",), timeout=60)) as (run, stat):
        assert run.exit_code == 0
        assert stat(paths) == as_built
    assert created(since) == 1

    since = time.time()
    change = "rm /etc/debian_version && printf 'changed by the run, a longer text' > /etc/issue"
    with engine.ran_container(RunSpec(image=image, entrypoint=("/bin/sh", "-c"), command=(change,),
                                      timeout=60, user="root", writable=True)) as (run, stat):
        assert run.exit_code == 0, run.stderr
        assert stat(paths) == as_built                 # the image's, not the run's
    assert created(since) == 2
    assert not leftovers.containers_named(engine, lambda name: name == image)


@pytest.mark.parametrize("name,script,reason", [
    ("minimal-json", framed("echo '{}'"), "not a probe report"),
    ("malformed-json", framed("echo '{\"probe_version\": 2, \"system\": '"), "not JSON"),
    ("wrong-version", framed("echo '{\"probe_version\": 1}'"), "probe_version is 1"),
    ("not-json", framed("echo hello"), "not JSON"),
    ("unframed-json", "echo '{\"probe_version\": 3}'", "no probe report in its output"),
    ("other-token", 'printf "IMGKIT-REPORT-BEGIN abcdefabcdef\\n{}\\nIMGKIT-REPORT-END abcdefabcdef\\n"',
     "no probe report in its output"),
])
def test_junk_output_is_a_failing_verdict(engine, base_image, namespace, tmp_path,
                                          name, script, reason):
    ref = fake_python(engine, namespace, base_image, name, script)
    proc, verdict = cli_verify(ref, tmp_path)
    assert proc.returncode == 1
    (check,) = [c for c in verdict["checks"] if c["verdict"] == "fail"]
    assert check["name"] == "probe.report" and reason in check["diagnosis"], check
    assert no_verify_containers(engine) == []


def test_what_the_image_prints_at_start_up_and_exit_does_not_spoil_the_report(
        engine, mini, namespace):
    """Real packages print from `.pth` hooks and exit handlers; a C library writes to
    descriptor 1 while the probe runs. None of it reaches the report."""
    hook = ("import sys, os, atexit; print('banner from a .pth hook {}'); "
            "atexit.register(print, 'goodbye from an exit handler'); "
            "atexit.register(os.write, 1, b'{\"probe_version\": 1}\\n')\n")
    ref = with_site_file(engine, f"{namespace}/broken:chatty", mini, "zz_chatty.pth", hook)
    shown = engine.client.containers.run(ref, ["python3", "-c", "pass"], remove=True)
    assert b"banner from a .pth hook" in shown      # the hook really runs in this image
    verdict = verify(engine, ref, VerifyOptions(gpus="none"))
    assert not verdict.failed, verdict.failed
    assert no_verify_containers(engine) == []


def test_a_framework_whose_exit_hangs_costs_the_verdict_nothing(
        engine, mini, namespace):
    """The probe takes what a framework's adapter printed and ends its interpreter there:
    a framework whose exit handler never returns (here a stand-in `paddle` that sleeps 600 s
    at exit) is judged, not timed out."""
    fake = ("import atexit, time, types\natexit.register(time.sleep, 600)\n__version__ = '2.6.2'\n"
            "version = types.SimpleNamespace(cuda=lambda: '', cudnn=lambda: '')\n"
            "device = types.SimpleNamespace(is_compiled_with_cuda=lambda: True,\n"
            "                               cuda=types.SimpleNamespace(device_count=lambda: 0))\n")
    ref = with_site_file(engine, f"{namespace}/broken:slow-exit", mini, "paddle/__init__.py", fake)
    verdict = verify(engine, ref, VerifyOptions(gpus="none", timeout=60))
    measured = {c.name: c.measured for c in verdict.checks}
    assert measured.get("paddle.import") == "2.6.2", verdict.checks
    # (a framework makes the bare CUDA names it dlopens required: this image has cudart only)
    assert [c for c in verdict.failed if not c.name.startswith("dlopen ")] == [], verdict.failed
    assert no_verify_containers(engine) == []


def test_a_hanging_probe_fails_at_the_timeout(engine, base_image, namespace, tmp_path):
    import time
    ref = fake_python(engine, namespace, base_image, "hang", "echo started >&2; exec sleep 600")
    started = time.monotonic()
    proc, verdict = cli_verify(ref, tmp_path, "--timeout", "10")
    assert time.monotonic() - started < 10 + 15
    assert proc.returncode == 1
    check = next(c for c in verdict["checks"] if c["name"] == "probe")
    assert check["verdict"] == "fail" and "hung" in check["diagnosis"] and "started" in check["diagnosis"]
    assert no_verify_containers(engine) == []


def test_a_flood_of_output_fails_quickly_with_bounded_evidence(engine, base_image, namespace,
                                                               tmp_path):
    import time
    ref = fake_python(engine, namespace, base_image, "flood",
                      "head -c 52428800 /dev/zero | tr '\\0' 'a'")
    started = time.monotonic()
    proc, verdict = cli_verify(ref, tmp_path)
    assert time.monotonic() - started < 60
    assert proc.returncode == 1
    check = next(c for c in verdict["checks"] if c["name"] == "probe")
    assert "flooded" in check["diagnosis"]
    assert len(json.dumps(verdict)) < 100_000  # the evidence is cut, not 50 MB
    assert no_verify_containers(engine) == []


def test_a_ci_log_and_job_summary(engine, mini, tmp_path):
    """Through a pipe, as in CI: every check whole on one line; the job summary and the
    --markdown file get the Markdown table."""
    import os
    summary, markdown = tmp_path / "summary.md", tmp_path / "verdict.md"
    summary.write_text("earlier steps\n")
    proc = subprocess.run([sys.executable, "-m", "imgkit", "verify", mini, "--gpus", "none",
                           "--markdown", str(markdown), "--shm-size", "1g"], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    cudart = next(line for line in lines if line.startswith("pass  dlopen libcudart.so  "))
    assert "/opt/venv/lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libcudart.so.11.0" in cudart
    assert any(line.startswith("pass  /dev/shm  ") and "1024 MB in this run (--shm-size 1g)" in line
               for line in lines)
    assert lines[-1] == "PASSED without a GPU: the GPU was NOT verified (--gpus none)"
    table = markdown.read_text()
    assert "| cudart.version | 11.8 | 11.8 | pass |" in table
    assert summary.read_text() == "earlier steps\n" + table


def test_verify_leaves_a_ticket_for_the_image_id_it_judged(engine, mini):
    from imgkit.verify import tickets
    image_id = engine.image(mini).id
    proc = subprocess.run([sys.executable, "-m", "imgkit", "verify", mini, "--gpus", "none"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    ticket = tickets.lookup(image_id)
    assert ticket is not None and ticket.passed and not ticket.gpu_checked and ticket.image == mini
    assert tickets.refusal(mini, image_id, ticket, allow_gpu_unverified=False) is not None
    assert tickets.refusal(mini, image_id, ticket, allow_gpu_unverified=True) is None


# -- SBOM ------------------------------------------------------------------------------------
def test_the_sbom_of_a_real_image_validates_and_lists_what_it_holds(
        engine, mini, base_image, namespace, tmp_path):
    """OS packages from dpkg, Python distributions from the venv and the system, the CUDA
    runtime as the library reports it; an image without python3 or with a lying one is
    exit 1 with the reason, never a traceback, and no container is left."""
    from .helpers.sbom import components, valid
    out = tmp_path / "mini.cdx.json"
    proc = subprocess.run([sys.executable, "-m", "imgkit", "sbom", mini, "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    document = valid(out.read_text())
    found = components(document)
    assert found[("nvidia", "cudart")] == {"11.8"}
    assert found[("pypi", "nvidia-cuda-runtime-cu11")] == {"11.8.89"}
    assert any(name.startswith("python3.11") for kind, name in found if kind == "deb")
    assert ("operating-system", "debian") in found
    assert document["metadata"]["component"]["bom-ref"] == engine.image(mini).id
    assert no_verify_containers(engine) == []

    for name, script in (("none", None), ("junk", "echo not json")):
        ref = base_image if script is None else fake_python(engine, namespace, base_image,
                                                            f"sbom-{name}", script)
        proc = subprocess.run([sys.executable, "-m", "imgkit", "sbom", ref, "--out",
                               str(tmp_path / f"{name}.json")], capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr and ref in proc.stderr
        assert not (tmp_path / f"{name}.json").exists()
    assert no_verify_containers(engine) == []




def test_a_k8s_jobs_report_gives_the_verdict_of_a_local_run(
        engine, mini, namespace, tmp_path):
    from .helpers.images import MINI_FAMILY
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "mini.yaml").write_text(MINI_FAMILY)
    jobs = tmp_path / "k8s"
    (tmp_path / "cluster.toml").write_text("gpus_per_job = 0\n")     # no GPU here
    proc = subprocess.run([sys.executable, "-m", "imgkit", "export", "k8s", "--images",
                           str(tmp_path / "images"), "--namespace", namespace, "--registry",
                           "registry.example.com", "--cluster", str(tmp_path / "cluster.toml"),
                           "--out", str(jobs)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "log.txt").write_text("some kubelet noise\n" + run_job_command(engine, jobs, mini))
    remote, here = tmp_path / "remote.json", tmp_path / "here.json"
    judged = subprocess.run([sys.executable, "-m", "imgkit", "judge", mini,
                             str(tmp_path / "log.txt"), "--json", str(remote)],
                            capture_output=True, text=True)
    local = subprocess.run([sys.executable, "-m", "imgkit", "verify", mini, "--gpus", "none",
                            "--json", str(here)], capture_output=True, text=True)
    assert judged.returncode == local.returncode == 0, judged.stdout + judged.stderr

    def checks(path: Path) -> dict[str, str]:
        return {c["name"]: c["verdict"] for c in json.loads(path.read_text())["checks"]}
    assert checks(remote) == checks(here)
    assert json.loads(remote.read_text())["gpu_verified"] is False
    # the size the site compares builds by: what the engine holds unpacked
    assert json.loads(remote.read_text())["size"] == json.loads(here.read_text())["size"] \
        == engine.image(mini).size > 0
    # and what it holds, for the site's diff of two verdicts: its Debian and pip packages
    listed = json.loads(here.read_text())["facts"]["inventory"]
    assert any(p["name"] == "libc6" for p in listed["dpkg"]), listed["dpkg"][:5]
    assert any(d["name"].lower().replace("_", "-").startswith("nvidia-cuda-runtime")
               for d in listed["python"]), listed["python"]
    (tmp_path / "junk.txt").write_text("no report here")
    junk = subprocess.run([sys.executable, "-m", "imgkit", "judge", mini,
                           str(tmp_path / "junk.txt")], capture_output=True, text=True)
    assert junk.returncode == 1 and "Traceback" not in junk.stderr
