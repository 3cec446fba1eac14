"""Host side of `imgkit verify`: expectations, host checks, the probe run in a locked-down
container (always removed), the report parsed and checked against the image, then the
evaluation into a Verdict for the image id that was judged. No docker-py here: the engine
runs the container."""
from __future__ import annotations

import base64
import importlib
import re
import threading
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .. import labels, platforms, versions
from ..engine import ContainerRun, Engine, ImageInfo, RunSpec, StatFiles
from ..errors import ContainerFailed, HostError, ImageError, Inconsistent, UsageError
from ..options import VerifyOptions
from ..probe import channel, priority
from ..shipped import probe_zip, version
from . import gpu_request
from .diagnose import HOST, IMAGE, diagnose
from .expect import Expectations, expectations, required_cuda
from .stated import wants_inventory
from .verdict import FAIL, INFO, PASS, WARN, Check, Verdict, failure

if TYPE_CHECKING:
    from ..matrix.compat import Compat
    from .facts import Report

# Judging and keeping the verdict need pydantic's models (~0.2 s to import): imported
# while the probe runs, not before its container starts.
JUDGES = ("imgkit.verify.facts", "imgkit.verify.evaluate", "imgkit.verify.corroborate",
          "imgkit.verify.tickets", "imgkit.verify.report", "imgkit.verify.kept")

BOOT = """import base64, os, runpy, sys
path = '/tmp/imgkit_probe.zip'
parts, i = [os.environ.pop('IMGKIT_PROBE')], 1
while 'IMGKIT_PROBE_%d' % i in os.environ:
    parts.append(os.environ.pop('IMGKIT_PROBE_%d' % i))
    i += 1
with open(path, 'wb') as out:
    out.write(base64.b64decode(''.join(parts)))
sys.path.insert(0, path)
sys.argv = ['imgkit-check'] + sys.argv[1:]
runpy.run_module('imgkit_probe', run_name='__main__', alter_sys=True)
sys.stdout.flush(); sys.stderr.flush()
os._exit(0)   # the report is out: the interpreter's teardown is no part of the verdict
"""
REPORT_LIMIT = 8 << 20   # a real report is tens of KB
# Linux execs no program with one environment string of 128 KiB or more (MAX_ARG_STRLEN):
# the container would not start ("argument list too long"). The probe's zip came to 121 KiB
# of base64 in one variable, so it goes in parts of at most this many characters.
PROBE_PART = 64 << 10


def probe_variables(zipped: bytes) -> dict[str, str]:
    """The probe's zip as BOOT reads it: base64 in IMGKIT_PROBE, IMGKIT_PROBE_1, ... each
    well under the kernel's limit for one variable."""
    text = base64.b64encode(zipped).decode()
    parts = [text[at:at + PROBE_PART] for at in range(0, len(text), PROBE_PART)] or [""]
    return {"IMGKIT_PROBE" + (f"_{n}" if n else ""): part for n, part in enumerate(parts)}


def cuda_needed(exp: Expectations, env: dict[str, str]) -> tuple[str | None, str]:
    """The CUDA the host's driver must run for this image, and who says so: the tag, the
    labels or --expect; else the image's own NVIDIA_REQUIRE_CUDA (NVIDIA's and NGC's
    images carry it), else its CUDA_VERSION."""
    if exp.get("cuda"):
        return exp.get("cuda"), ""
    required = required_cuda(env.get("NVIDIA_REQUIRE_CUDA") or "")
    if required:
        return required, f"the image's NVIDIA_REQUIRE_CUDA says cuda>={required}"
    stated = versions.major_minor(env.get("CUDA_VERSION") or "")
    return (stated, f"the image's CUDA_VERSION is {env['CUDA_VERSION']}") if stated else (None, "")


def host_driver_checks(exp: Expectations, env: dict[str, str] | None = None) -> list[Check]:
    """The host driver, read through NVML (nvidia-ml-py), against what the image's CUDA
    needs (cuda_needed: `env` is the image's configured environment)."""
    try:
        import pynvml
        pynvml.nvmlInit()
        driver = pynvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else str(driver)
        pynvml.nvmlShutdown()
    except Exception as exc:  # an NVMLError: no NVIDIA driver on this host
        return [Check("host.driver", INFO, "", f"not readable on this host ({type(exc).__name__})",
                      "the container launch will tell", scope=HOST, required=False)]
    from ..matrix import compat  # the GPU path's only: a plain --gpus none needs no data
    cuda, source = cuda_needed(exp, env or {})
    return [driver_check(driver, cuda, compat.load(), source)]


def driver_check(driver: str, cuda: str | None, data: Compat, source: str = "") -> Check:
    """A driver version against the minimum drivers of `cuda` (pure logic); `source`: who
    named that CUDA, when not the tag or labels."""
    if versions.parse(driver) is None:
        return Check("host.driver", INFO, "", f"{driver} (not a version imgkit can compare)",
                     scope=HOST, required=False)
    supported = data.cuda_supported_by_driver(driver) or "none known"
    if cuda is None or cuda not in data.cuda:
        return Check("host.driver", INFO, "", f"{driver} (supports CUDA {supported})",
                     scope=HOST, required=False)
    toolkit, minor = data.min_driver(cuda)
    if not versions.at_least(driver, minor):
        return Check("host.driver", FAIL, f">= {minor} for CUDA {cuda}", driver,
                     f"driver {driver} is too old for CUDA {cuda}"
                     + (f" ({source})" if source else "") + f": it supports CUDA {supported}; "
                     f"the image needs driver >= {toolkit or minor}: upgrade the host's driver "
                     f"or run an image of an older CUDA", scope=HOST)
    if not toolkit:     # the data knows the floor of its major, not this toolkit's own driver
        return Check("host.driver", PASS, f">= {minor} for CUDA {cuda} (minor-version "
                     "compatibility)", driver, "the toolkit's own driver is not in imgkit's "
                     "data: PTX JIT of code newer than this driver may fail", scope=HOST)
    if not versions.at_least(driver, toolkit):
        return Check("host.driver", WARN, f">= {toolkit} for CUDA {cuda}", driver,
                     f"runs under minor-version compatibility only (driver supports CUDA "
                     f"{supported}); PTX JIT of newer code will fail", scope=HOST, required=False)
    return Check("host.driver", PASS, f">= {toolkit} for CUDA {cuda}", driver, scope=HOST)


@dataclass(frozen=True)
class ProbeRun:
    run: ContainerRun
    token: str       # the report's marker token, chosen here for this run
    stat: StatFiles  # the image's files, read through the probe's exited container


def runnable_platform(ref: str, info: ImageInfo, options: VerifyOptions) -> str:
    """The platform the probe runs as: the image's own, which must be the one --platform
    asks for, and one this host can run (its own, or emulated by QEMU without a GPU)."""
    own = platforms.os_arch(info.platform) or platforms.host()
    if options.platform and options.platform != own:
        raise UsageError(f"{ref} is a {own} image, not {options.platform}",
                         hint=f"verify the {options.platform} image of it (pull or build that "
                              "platform's), or leave out --platform")
    if own != platforms.host():
        if not platforms.can_run(own):
            raise HostError(f"{ref} is a {own} image and this {platforms.host()} host cannot "
                            "run its programs", hint=platforms.EMULATION_HINT)
        if options.gpus != "none":
            raise UsageError(f"{ref} is a {own} image: here it runs under emulation, where no "
                             "GPU can be used", hint=f"verify it with --gpus none here, and "
                                                     f"with a GPU on a {own} machine")
    return own


def _foreign(platform: str) -> str:
    """What the container is created with: "" for the host's own (engines before API 1.41
    take no platform), the platform for an emulated one."""
    return "" if platform == platforms.host() else platform


@contextmanager
def run_probe(engine: Engine, image_id: str, options: VerifyOptions,
              extra: tuple[str, ...] = (), platform: str = "",
              environment: dict[str, str] | None = None,
              on_start: Callable[[], None] | None = None) -> Iterator[ProbeRun]:
    """The probe in a throwaway, locked-down container of exactly the image judged, as
    `platform` (runnable_platform's answer; "": the image's own), with `environment` added
    (the team's gpuTests); the exited container removed when the block ends. `on_start`:
    what to do once the container runs."""
    args: tuple[str, ...] = (("--no-gpu",) if options.gpus == "none"
                             else ("--gemm-size", str(options.gemm_size)))
    args += extra
    token = channel.new_token()
    with engine.ran_container(RunSpec(
        image=image_id, entrypoint=("python3", "-c", BOOT), command=args,
        environment={**(environment or {}), "HOME": "/tmp", channel.MARK_ENV: token,
                     **probe_variables(probe_zip())},
        gpus=options.gpus, timeout=options.timeout, memory=options.memory, shm_size=options.shm_size,
        labels={labels.ROLE: labels.ROLE_VERIFY}, stdout_limit=REPORT_LIMIT,
        platform=_foreign(platform),
        writable=bool(environment)), on_start) as (run, stat):   # a team's tests may write
        yield ProbeRun(run, token, stat)


def import_judges() -> None:
    """Import the judging modules, and read the compatibility data they judge by, while
    the probe runs, yielding the CPU to its container (a per-thread nice value on Linux:
    this thread only)."""
    priority.lower()
    for module in JUDGES:
        importlib.import_module(module)
    from ..matrix import compat
    version()             # kept (lru_cache): each verdict records it (kept.judged_by)
    try:
        compat.load()     # kept (lru_cache) for evaluate()
    except Exception:     # noqa: BLE001 - evaluate() reads it again and reports what is wrong
        pass


def verify(engine: Engine, ref: str, options: VerifyOptions, *, info: ImageInfo | None = None,
           with_inventory: bool = False, environment: dict[str, str] | None = None) -> Verdict:
    """The verdict of one probe run in a container of `ref` (`info`: what the engine said of
    it, when the caller asked already). With `with_inventory`, the report also lists what
    is installed (its SBOM), read in that same run."""
    info = info or engine.known(ref, BUILD_HINT)
    # versions stated by names only the list of what is installed answers: listed too
    with_inventory = with_inventory or wants_inventory(dict(info.env), info.labels)
    platform = runnable_platform(ref, info, options)
    exp = expectations(ref, info.labels, list(options.expect))
    use_gpu = options.gpus != "none"
    host: tuple[Check, ...] = ()
    if use_gpu:
        podman = engine.server_version() if engine.product() == "podman" else ""
        path = gpu_request.resolve(options.gpus, *engine.cdi(), podman=podman)
        options = replace(options, gpus=path.gpus)
        host = (path.check(), *host_driver_checks(exp, dict(info.env)))
    # started once the container runs: before, it would take the GIL from creating it
    warm = threading.Thread(target=import_judges, daemon=True)
    with ExitStack() as stack:
        try:
            probe = stack.enter_context(run_probe(
                engine, info.id, options, ("--inventory",) if with_inventory else (),
                platform=platform, environment=environment, on_start=warm.start))
        except ContainerFailed as exc:
            return _not_started(ref, info.id, exc.explanation, host)
        warm.join()
        verdict = judge_run(engine, ref, info, exp, probe.run, options, host, token=probe.token,
                            stat=probe.stat)
    return replace(verdict, probe_seconds=probe.run.seconds)


BUILD_HINT = "build it (imgkit build) or pull it first"
REPORT_HINT = "pull it (or name it by registry reference) to judge its report"


def judge_report(engine: Engine | None, ref: str, stdout: str, options: VerifyOptions, *,
                 info: ImageInfo | None = None) -> Verdict:
    """The verdict of a report the probe printed elsewhere (a Kubernetes Job), as if it had
    run here: the GPU checks count when the probe was asked for GPU work. The report is held
    to the image's labels, user and environment (`info`), and, with an engine that holds
    the image, to its files."""
    import json
    if info is None:
        if engine is None:
            raise Inconsistent(f"{ref}: a report to judge with neither the image nor an engine")
        info = engine.known(ref, REPORT_HINT)
    try:
        asked_gpu = not json.loads(channel.unframe(stdout) or "").get("args", {}).get("no_gpu", False)
    except (ValueError, AttributeError):
        asked_gpu = False                                  # judge_run reports the junk
    options = replace(options, gpus="all" if asked_gpu else "none")
    exp = expectations(ref, info.labels, list(options.expect))
    run = ContainerRun(exit_code=0, stdout=stdout, stderr="", stdout_truncated=False, seconds=0.0)
    return judge_run(engine, ref, info, exp, run, options, command="judge")


def inventory(engine: Engine, info: ImageInfo, options: VerifyOptions, name: str) -> Report:
    """What is installed in the image (for its SBOM), read by the probe (`--inventory
    --no-frameworks`, no GPU) in a throwaway container; an image whose probe cannot run or
    report is an ImageError (exit 1), named `name`."""
    from .facts import InvalidReport, parse_output
    try:
        quiet = replace(options, gpus="none")
        with run_probe(engine, info.id, quiet, ("--inventory", "--no-frameworks"),
                       platform=runnable_platform(name, info, quiet)) as probe:
            pass
    except ContainerFailed as exc:
        raise ImageError(f"{name}: the probe could not start: {exc.explanation.strip()[:300]}")
    run = probe.run
    if run.timed_out or run.exit_code != 0:
        raise ImageError(f"{name}: the probe failed (exit {run.exit_code}): "
                         f"{run.stderr.strip()[-300:]}")
    try:
        report = parse_output(run.stdout, probe.token)
    except InvalidReport as exc:
        raise ImageError(f"{name}: the probe's report cannot be used: {exc}")
    if report.inventory is None:
        raise ImageError(f"{name}: the probe listed no packages")
    return report


def _not_started(ref: str, image_id: str, text: str, host: tuple[Check, ...]) -> Verdict:
    if re.search(r'exec: "?python3"?: executable file not found|python3.*no such file', text):
        return failure(ref, image_id, Check(
            "python3", FAIL, "present", "missing",
            "the image has no python3: the probe (and most GPU frameworks) cannot run in it"),
            before=host)
    diag = diagnose(text)
    if diag is not None and diag.scope == HOST:
        raise HostError(f"{diag.summary}: {text.strip()[:300]}", hint=diag.fix)
    raise HostError(f"the container could not start: {text.strip()[:300]}")


def judge_run(engine: Engine | None, ref: str, info: ImageInfo, exp: Expectations, run: ContainerRun,
              options: VerifyOptions, host: tuple[Check, ...] = (),
              token: str | None = None, stat: StatFiles | None = None,
              command: str = "verify") -> Verdict:
    """Whatever the probe printed, a verdict: a report is parsed (the one framed with
    `token`, when this run chose one), checked against the image's files (through `stat`,
    else a container of the image) and evaluated; a hang, a flood, junk or a crash is one
    failing check that says which. `command`: verify ran the probe, judge read its report."""
    from .claims import claim_checks
    from .corroborate import file_checks, user_check
    from .evaluate import evaluate
    from .facts import InvalidReport, parse_output
    from .search_paths import search_path_checks
    broken = _broken_run(run, options.timeout)
    if broken is not None:
        return failure(ref, info.id, broken, before=host, command=command)
    try:
        report = parse_output(run.stdout, token)
    except InvalidReport as exc:
        return failure(ref, info.id, Check(
            "probe.report", FAIL, "a valid imgkit probe report", "invalid",
            f"the image's python3 gave no usable report: {exc}"), before=host, command=command)
    files = (NOT_CORROBORATED if engine is None else
             file_checks(report, stat or (lambda paths: engine.stat_files(info.id, paths))))
    seen = (files, user_check(report, info.user),
            *claim_checks(report, dict(info.env), dict(info.labels)),
            *search_path_checks(dict(info.env)), *reproduced_check(info.id))
    return evaluate(ref, info.id, report, exp, gpu=options.gpus != "none",
                    thresholds=options.thresholds, before=host + seen, shm_size=options.shm_size,
                    parent=_parent_of_extension(engine, info), platform=info.platform,
                    command=command)


def reproduced_check(image_id: str) -> tuple[Check, ...]:
    """`imgkit reproduce`'s proof that this very image came out of a build of its inputs
    again, when one is kept (reproduction.py): a check that never fails an image, which the
    signed verdict carries to promote's --require-reproduced."""
    from ..reproduction import CHECK, lookup
    found = lookup(image_id)
    if found is None:
        return ()
    return (Check(CHECK, PASS, "the same image from its inputs again", found.says(),
                  "`imgkit reproduce` built it again with no cache and got this very image",
                  required=False),)


def _parent_of_extension(engine: Engine | None, info: ImageInfo) -> tuple[str, Any] | None:
    """For an extension image: its parent and the libraries the parent's verdict saw."""
    from . import tickets
    if engine is None or info.labels.get(labels.LAYER) != "extension" or \
            not info.labels.get(labels.BASE_NAME):
        return None
    parent = info.labels[labels.BASE_NAME]
    parent_info = engine.image(parent)
    return parent, tickets.libraries_of(parent_info.id) if parent_info else None


# judged with no engine (a fleet check's pod): the report came from a pod of the very
# digest, but its files are not looked up in the image here
NOT_CORROBORATED = Check("report.matches-image", INFO, "files the image has", "not looked up",
                         "judged without a Docker engine: the report's files were not checked "
                         "against the image", required=False)


def _broken_run(run: ContainerRun, timeout: int) -> Check | None:
    """The failing check for a probe that hung, flooded or died without a report."""
    tail = " | ".join((run.stderr or run.stdout).strip().splitlines()[-5:])[-400:]
    if run.timed_out:
        return Check("probe", FAIL, f"finishes within {timeout} s", f"killed after {run.seconds:.0f} s",
                     "the probe hung (an import or a GPU call that never returned)"
                     + (f"; last output: {tail}" if tail else ""))
    if run.stdout_truncated:
        return Check("probe", FAIL, f"a report under {REPORT_LIMIT >> 20} MB",
                     f"more than {REPORT_LIMIT >> 20} MB of output",
                     "the image's python3 flooded its output instead of printing a report")
    if run.exit_code != 0:
        text = tail or f"exit code {run.exit_code}"
        if run.exit_code == 135:
            text += " (bus error)"
        diag = diagnose(text)
        return Check("probe", FAIL, "prints its report", f"exit {run.exit_code}",
                     f"{diag.advice}: {text}" if diag else text,
                     scope=diag.scope if diag else IMAGE)
    return None
