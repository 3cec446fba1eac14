"""Host side of `imgkit verify`: expectations, host checks, the probe run in a locked-down
container (always removed), then evaluation into a Verdict."""
from __future__ import annotations

import base64
import io
import json
import re
import zipfile
from dataclasses import dataclass

import docker.errors
import docker.types
import requests.exceptions

from . import compat
from .diagnose import HOST, IMAGE, diagnose
from .engine import Engine
from .errors import HostError, UsageError
from .evaluate import FAIL, INFO, PASS, WARN, Check, Thresholds, Verdict, evaluate
from .expect import Expectations, expectations
from .shipped import PACKAGE_DIR

BOOT = """import base64, os, runpy, sys
path = '/tmp/imgkit_probe.zip'
with open(path, 'wb') as out:
    out.write(base64.b64decode(os.environ.pop('IMGKIT_PROBE')))
sys.path.insert(0, path)
sys.argv = ['imgkit-check'] + sys.argv[1:]
runpy.run_module('imgkit_probe', run_name='__main__', alter_sys=True)
"""
GPUS = re.compile(r"^(none|all|[0-9]{1,3}|[A-Za-z0-9-]+(,[A-Za-z0-9-]+)*)$")


@dataclass(frozen=True)
class VerifyOptions:
    gpus: str = "all"
    expect: tuple[str, ...] = ()
    timeout: int = 600
    memory: str = "16g"
    thresholds: Thresholds = Thresholds()
    gemm_size: int = 8192


def probe_zip() -> bytes:
    """The probe package as a zip, importable as `imgkit_probe` inside any python3 >= 3.8."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        root = PACKAGE_DIR.joinpath("probe")
        for entry in sorted(root.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".py"):
                info = zipfile.ZipInfo(f"imgkit_probe/{entry.name}", (2020, 1, 1, 0, 0, 0))
                archive.writestr(info, entry.read_bytes())
    return buf.getvalue()


def device_requests(gpus: str) -> list[docker.types.DeviceRequest]:
    if not GPUS.match(gpus):
        raise UsageError(f"--gpus {gpus!r}: expected none, all, a count or comma-separated ids")
    if gpus == "none":
        return []
    if gpus == "all":
        return [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])]
    if gpus.isdigit():
        return [docker.types.DeviceRequest(count=int(gpus), capabilities=[["gpu"]])]
    return [docker.types.DeviceRequest(device_ids=gpus.split(","), capabilities=[["gpu"]])]


def host_driver_checks(exp: Expectations) -> list[Check]:
    """Compare the host driver (NVML on the host, when present) with what the CUDA needs."""
    try:
        import pynvml  # optional: only hosts with an NVIDIA driver have NVML
        pynvml.nvmlInit()
        driver = pynvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else str(driver)
        pynvml.nvmlShutdown()
    except Exception as exc:  # ImportError or any NVMLError: no readable driver here
        return [Check("host.driver", INFO, "", f"not readable on this host ({type(exc).__name__})",
                      "the container launch will tell", scope=HOST, required=False)]
    cuda = exp.get("cuda")
    data = compat.load()
    supported = data.cuda_supported_by_driver(driver) or "none known"
    if cuda is None or cuda not in data.cuda:
        return [Check("host.driver", INFO, "", f"{driver} (supports CUDA {supported})",
                      scope=HOST, required=False)]
    toolkit, minor = data.min_driver(cuda)
    version = tuple(int(p) for p in re.findall(r"\d+", driver))
    need = tuple(int(p) for p in minor.split("."))
    full = tuple(int(p) for p in toolkit.split("."))
    if version < need:
        return [Check("host.driver", FAIL, f">= {minor} for CUDA {cuda}", driver,
                      f"driver {driver} is too old for CUDA {cuda} (it supports CUDA "
                      f"{supported}); upgrade to >= {toolkit}", scope=HOST)]
    if version < full:
        return [Check("host.driver", WARN, f">= {toolkit} for CUDA {cuda}", driver,
                      f"runs under minor-version compatibility only (driver supports CUDA "
                      f"{supported}); PTX JIT of newer code will fail", scope=HOST, required=False)]
    return [Check("host.driver", PASS, f">= {toolkit} for CUDA {cuda}", driver, scope=HOST)]


def run_probe(engine: Engine, ref: str, options: VerifyOptions) -> tuple[int, str, str]:
    """Run the probe in a throwaway container; returns (exit code, stdout, stderr).
    The container is removed on every path: start failure, timeout, Ctrl-C."""
    api = engine.api
    args = ["--no-gpu"] if options.gpus == "none" else ["--gemm-size", str(options.gemm_size)]
    host_config = api.create_host_config(
        cap_drop=["ALL"], security_opt=["no-new-privileges"], read_only=True,
        tmpfs={"/tmp": "rw,exec,nosuid,size=1g"}, mem_limit=options.memory, pids_limit=1024,
        device_requests=device_requests(options.gpus) or None, network_mode="none")
    container = api.create_container(
        ref, entrypoint=["python3", "-c", BOOT], command=args, host_config=host_config,
        network_disabled=True, labels={"org.imgkit.role": "verify"},
        environment={"IMGKIT_PROBE": base64.b64encode(probe_zip()).decode(), "HOME": "/tmp"})
    cid = container["Id"]
    try:
        api.start(cid)
        try:
            code = int(api.wait(cid, timeout=options.timeout)["StatusCode"])
        except requests.exceptions.ReadTimeout:
            api.kill(cid)
            return 124, "", f"the probe did not finish within {options.timeout} s"
        out = api.logs(cid, stdout=True, stderr=False).decode(errors="replace")
        err = api.logs(cid, stdout=False, stderr=True).decode(errors="replace")
        return code, out, err
    finally:
        engine.remove_container(cid)


def verify(engine: Engine, ref: str, options: VerifyOptions) -> Verdict:
    info = engine.image(ref)
    if info is None:
        raise UsageError(f"image {ref!r} not found in the local engine",
                         hint="build it (imgkit build) or pull it first")
    exp = expectations(ref, info.labels, list(options.expect))
    use_gpu = options.gpus != "none"
    host_checks = host_driver_checks(exp) if use_gpu else []
    try:
        code, out, err = run_probe(engine, ref, options)
    except docker.errors.APIError as exc:
        text = str(exc.explanation or exc)
        if re.search(r'exec: "?python3"?: executable file not found|python3.*no such file', text):
            verdict = Verdict(image=ref)
            verdict.checks.append(Check("python3", FAIL, "present", "missing",
                                        "the image has no python3: the probe (and most GPU "
                                        "frameworks) cannot run in it"))
            return verdict
        diag = diagnose(text)
        if diag is not None and diag.scope == HOST:
            raise HostError(f"{diag.summary}: {text.strip()[:300]}", hint=diag.fix)
        raise HostError(f"the container could not start: {text.strip()[:300]}")
    verdict = _verdict_from_run(ref, exp, code, out, err, use_gpu, options.thresholds)
    verdict.checks[:0] = host_checks
    return verdict


def _verdict_from_run(ref: str, exp: Expectations, code: int, out: str, err: str,
                      use_gpu: bool, thresholds: Thresholds) -> Verdict:
    report = None
    start = out.find("{")
    if code == 0 and start >= 0:
        try:
            report = json.loads(out[start:])
        except ValueError:
            report = None
    if report is None:
        tail = (err or out).strip().splitlines()[-5:]
        text = " | ".join(tail) or f"exit code {code}"
        if code == 135:
            text += " (bus error)"
        diag = diagnose(text)
        verdict = Verdict(image=ref)
        verdict.checks.append(Check("probe", FAIL, "prints its report", f"exit {code}",
                                    f"{diag.summary}; fix: {diag.fix}: {text}" if diag else text,
                                    scope=diag.scope if diag else IMAGE))
        return verdict
    return evaluate(ref, report, exp, gpu=use_gpu, thresholds=thresholds)
