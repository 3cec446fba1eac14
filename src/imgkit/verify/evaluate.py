"""Judge the probe's facts against expectations: a list of checks, each with what was
expected, what was measured, a verdict and, when it fails, a diagnosis. Pure logic."""
from __future__ import annotations

import os
import re
from typing import Any

from .. import platforms, versions
from ..matrix import compat
from ..matrix.compat import Compat
from ..options import Thresholds
from ..probe.frameworks import ADAPTERS
from .diagnose import IMAGE, diagnose
from .driver_floor import floor_check
from .expect import Expectations
from .facts import LibraryCopy, Report
from .gpu_checks import gpu_checks
from .verdict import FAIL, INFO, PASS, SKIP, WARN, Check, Verdict, without_gpu

DOCKER_DEFAULT_SHM = 64 * 1024 * 1024
PADDLE_BARE_NAMES = ("libcudart.so", "libcublas.so", "libcudnn.so", "libcurand.so",
                     "libcusolver.so", "libcusparse.so", "libnccl.so")


def library_checks(report: Report, exp: Expectations) -> list[Check]:
    checks = []
    keys = {"cudart": "cuda", "cublas": "cublas", "cudnn": "cudnn", "nccl": "nccl"}
    wanted = {family: exp.get(key) for family, key in keys.items()}
    for family in ("cudart", "cublas", "cublasLt", "cudnn", "nccl"):
        copies = report.libraries.copies(family)
        expected = wanted.get(family)
        for copy in copies:
            if not copy.loadable:
                checks.append(Check(f"{family}.loadable", FAIL, "loads", "cannot load",
                                    f"{copy.path}: {copy.error}"))
        versions_seen = {c.path: c.version for c in copies if c.loadable}
        on_path = [c for c in copies if c.where == "loader"]
        if len({c.realpath for c in on_path}) > 1:
            listing = "; ".join(f"{c.path} ({c.version or c.error})" for c in on_path)
            checks.append(Check(f"{family}.single-copy", FAIL, "one copy on the loader path",
                                f"{len(on_path)} copies", f"two copies reachable: {listing}"))
        if family == "cublasLt":
            continue
        if not copies:
            if expected:
                checks.append(Check(f"{family}.version", FAIL, expected, "not found",
                                    f"no {family} library on the loader path"))
            continue
        version = next((v for v in versions_seen.values() if v), None)
        if expected is None:
            checks.append(Check(f"{family}.version", INFO, "", version or "unknown", required=False))
        elif version is None and all(c.where == "environment" for c in copies):
            owners = ", ".join(sorted({c.owner.name for c in copies if c.owner} or {"a Python package"}))
            checks.append(Check(f"{family}.version", SKIP, expected, "unreadable without a driver",
                                f"the only {family} is bundled in {owners}, which does not say its "
                                "CUDA, and the library tells only with a driver: run verify with a "
                                "GPU to judge it", required=False))
        elif version is None:
            checks.append(Check(f"{family}.version", FAIL, expected, "unreadable",
                                "the library did not report a version"))
        else:
            bad = [v for v in versions_seen.values() if v and not versions.in_series(v, expected)]
            checks.append(Check(f"{family}.version", FAIL if bad else PASS, expected,
                                ", ".join(sorted({v for v in versions_seen.values() if v})),
                                f"{family} is {bad[0]}, {exp.said_by(keys[family])} {expected}"
                                if bad else ""))
    driver = report.libraries.driver_libs_in_image
    checks.append(Check("driver-libs-not-baked", FAIL if driver else PASS, "none in the image",
                        ", ".join(driver) or "none",
                        "driver libraries must come from the host (the NVIDIA toolkit mounts "
                        "them); remove: " + ", ".join(driver) if driver else ""))
    return checks


def stack_checks(report: Report, exp: Expectations, data: Compat) -> list[Check]:
    """Every cuBLAS, cuDNN and NCCL copy must belong to the CUDA the image claims: cuBLAS by
    its release series (the compat data), cuDNN by the CUDA it says it was built for, NCCL
    by its package (nvidia-nccl-cu11, 2.15.5-1+cuda11.8)."""
    cuda = exp.get("cuda")
    if not cuda:
        return []
    checks = []
    for family, label in (("cublas", "cuBLAS"), ("cudnn", "cuDNN"), ("nccl", "NCCL")):
        judged, wrong = 0, []
        for copy in report.libraries.copies(family):
            home = _cuda_of(family, copy, data)
            if home is None:
                continue
            judged += 1
            precise = family == "cublas" and home.count(".") == 1
            # a release held as far as a library tells it: 11.8.0 is the CUDA 11.8 release
            if (home != versions.major_minor(cuda)) if precise else \
                    (versions.major(home) != versions.major(cuda)):
                wrong.append(f"{label} {copy.version or '?'} ({copy.path}) belongs to CUDA {home}")
        if wrong:
            checks.append(Check(f"stack.{family}", FAIL, f"{label} of CUDA {cuda}", "; ".join(wrong),
                                f"{wrong[0]}, not CUDA {cuda} as {exp.said_by('cuda')}"))
        elif judged:
            checks.append(Check(f"stack.{family}", PASS, f"{label} of CUDA {cuda}",
                                f"{judged} cop{'y' if judged == 1 else 'ies'} agree"))
    return checks


def _cuda_of(family: str, copy: LibraryCopy, data: Compat) -> str | None:
    """The CUDA a library copy belongs to: 'X.Y' where known exactly, else the major 'X'."""
    if family == "cublas" and copy.version:
        return data.cuda_of_component("cublas", copy.version) or str(versions.major(copy.version))
    if family == "cudnn" and copy.cuda_build:
        return copy.cuda_build
    owner = copy.owner
    if owner is None:
        return None
    found = (re.search(r"[-_]cu(\d{2})\b", owner.name) if owner.kind == "wheel" else
             re.search(r"\+cuda(\d+\.\d+)", owner.version) if owner.kind == "dpkg" else
             re.search(r"cuda(\d{2})", owner.build or "") if owner.kind == "conda" else None)
    return found.group(1) if found else None


# the frameworks the probe imports and runs on the GPU (an overlay may build others)
PROBED = tuple(sorted(ADAPTERS))


def framework_checks(report: Report, exp: Expectations) -> list[Check]:
    checks = []
    expected = exp.get("framework")
    runtime = {f: report.libraries.version(f) for f in ("cudart", "cudnn")}
    for name in sorted(set(report.frameworks) | ({expected} if expected else set())):
        result = report.frameworks.get(name)
        if result is None and name not in PROBED:
            checks.append(Check(f"{name}.import", FAIL, "imports and computes on the GPU",
                                "not probed", f"the image says its framework is {name}, which "
                                f"imgkit's probe cannot run (it proves {', '.join(PROBED)}): "
                                "its import and GPU use were NOT verified"))
            continue
        if result is None:
            checks.append(Check(f"{name}.import", FAIL, "installed", "not installed",
                                f"{name} is not installed in the image"))
            continue
        if not result.imported:
            why = f"missing {result.missing_library}" if result.missing_library else result.error or ""
            diag = diagnose(why)     # a known host fault (QEMU, the driver) blames the host
            checks.append(Check(f"{name}.import", FAIL, "imports", "import failed",
                                f"{diag.advice} (import {name} failed: {why})"
                                if diag else f"import {name} failed: {why}",
                                scope=diag.scope if diag else IMAGE))
            continue
        checks.append(Check(f"{name}.import", PASS, "imports", result.version or ""))
        wanted = exp.get("framework_version")
        if expected == name and wanted:
            ok = versions.in_series(result.version or "", wanted)
            checks.append(Check(f"{name}.version", PASS if ok else FAIL, wanted, str(result.version),
                                "" if ok else f"{name} is {result.version}, "
                                f"{exp.said_by('framework_version')} {wanted}"))
        if not result.compiled_with_cuda:
            checks.append(Check(f"{name}.cuda-build", FAIL, "a CUDA build", "CPU-only build",
                                f"{name} was built without CUDA: it can only use the CPU"))
            continue
        for key, label, built, lib in (
                ("build-cuda", "CUDA", result.build_cuda or "", runtime["cudart"]),
                ("build-cudnn", "cuDNN", _cudnn_text(result.build_cudnn), runtime["cudnn"])):
            if built and lib:
                checks.append(_build_agrees(f"{name}.{key}", name, label, built, lib))
    return checks


def _build_agrees(check: str, framework: str, label: str, built: str, lib: str) -> Check:
    """The library the image has must be the build's major version and not older."""
    ok = versions.major(built) == versions.major(lib) and versions.at_least(lib, built)
    return Check(check, PASS if ok else FAIL, f"runtime >= {built}, same major", lib,
                 "" if ok else f"{framework} was built for {label} {built} but the image "
                               f"has {lib}")


def _cudnn_text(value: Any) -> str | None:
    """Paddle says '8.6.0'; torch says 90100 (an int in cuDNN's own encoding)."""
    if value in (None, "", "None"):
        return None
    if isinstance(value, int) or str(value).isdigit():
        v = int(value)
        major, rest = (v // 10000, v % 10000) if v >= 90000 else (v // 1000, v % 1000)
        return f"{major}.{rest // 100}.{rest % 100}"
    return str(value)


def bare_name_checks(report: Report, exp: Expectations) -> list[Check]:
    """Names the framework dlopens unversioned must resolve, to the copy the checks saw."""
    paddle = exp.get("framework") == "paddle" or "paddle" in report.frameworks
    names = PADDLE_BARE_NAMES if paddle else ()
    checks = []
    by_realpath = {c.realpath: c for f in report.libraries.families.values() for c in f.copies}
    for name, result in sorted(report.bare_names.items()):
        required = name in names
        if not result.loadable:
            if required:
                checks.append(Check(f"dlopen {name}", FAIL, "resolves", "does not resolve",
                                    f"{name} does not resolve: {result.error}"))
            continue
        path = result.path or ""
        copy = by_realpath.get(os.path.realpath(path)) if path else None
        measured = path + (f" ({copy.version})" if copy and copy.version else "")
        checks.append(Check(f"dlopen {name}", PASS, "resolves", measured, required=required))
    return checks


def environment_checks(report: Report, exp: Expectations, data: Compat,
                       shm_size: str | None = None) -> list[Check]:
    env = report.system.env
    checks = []
    visible = env.get("NVIDIA_VISIBLE_DEVICES")
    checks.append(Check("env NVIDIA_VISIBLE_DEVICES", PASS if visible else WARN, "set",
                        visible or "unset", "" if visible else
                        "without it the NVIDIA runtime exposes no GPU unless --gpus is given",
                        required=False))
    caps = env.get("NVIDIA_DRIVER_CAPABILITIES") or ""
    ok = "compute" in caps or caps == "all"
    checks.append(Check("env NVIDIA_DRIVER_CAPABILITIES", PASS if ok else WARN,
                        "includes compute", caps or "unset",
                        "" if ok else "the toolkit will not mount the CUDA driver library",
                        required=False))
    checks.append(floor_check(report, exp, data))
    user, uid = report.system.user, report.system.uid
    checks.append(Check("default user", WARN if uid == 0 else PASS, "non-root", f"{user} ({uid})",
                        "the image runs as root by default" if uid == 0 else "", required=False))
    shm = report.system.shm_bytes
    if shm is not None:
        # /dev/shm is set by whoever runs the container, not by the image: this says what
        # the probe's own container got, and what a workload run the same way would get
        small = shm <= DOCKER_DEFAULT_SHM
        setting = f"--shm-size {shm_size}" if shm_size else "the engine's default"
        checks.append(Check("/dev/shm", WARN if small else PASS, "> 64 MB for DataLoader/NCCL",
                            f"{shm // (1024 * 1024)} MB in this run ({setting})",
                            "containers run like this one get 64 MB: data loaders and NCCL need "
                            "--shm-size=8g (try verify --shm-size 8g) or --ipc=host" if small else "",
                            required=False))
    return checks


def dependency_checks(report: Report) -> list[Check]:
    """`pip check`: broken or conflicting requirements, named."""
    pip = report.pip_check
    if pip is None or not pip.ran:
        return [Check("pip.check", SKIP, "no broken requirements", "not run",
                      (pip.error if pip else None) or "the probe did not run pip check",
                      required=False)]
    if pip.ok:
        return [Check("pip.check", PASS, "no broken requirements", "none")]
    return [Check("pip.check", FAIL, "no broken requirements", f"{len(pip.problems)} problem(s)",
                  "; ".join(pip.problems[:5]))]


def library_summary(report: Report) -> dict[str, list[list[str]]]:
    """Every NVIDIA library copy, family -> [path, version]: what an extension must keep."""
    return {family: sorted([c.path, c.version or ""] for c in found.copies)
            for family, found in sorted(report.libraries.families.items()) if found.copies}


def parent_stack_checks(report: Report, parent: str,
                        theirs: dict[str, list[list[str]]] | None) -> list[Check]:
    """An extension keeps its parent's stack: the same library copies, the same versions,
    as the parent's recorded verdict saw them."""
    if theirs is None:
        return [Check("parent-stack", SKIP, f"the libraries of {parent}", "parent not verified here",
                      f"verify {parent} first: its recorded verdict is what this is compared with",
                      required=False)]
    mine = library_summary(report)
    changed = [family for family in sorted(set(mine) | set(theirs))
               if [list(c) for c in theirs.get(family, [])] != mine.get(family, [])]

    def listing(copies: list[list[str]]) -> str:
        return ", ".join(f"{path} ({version or '?'})" for path, version in copies) or "none"
    if not changed:
        return [Check("parent-stack", PASS, f"as in {parent}", "unchanged")]
    return [Check(f"parent-stack.{family}", FAIL, listing(theirs.get(family, [])),
                  listing(mine.get(family, [])),
                  f"the extension changed {family}: {parent} has another set of copies")
            for family in changed]


def platform_checks(report: Report, platform: str) -> list[Check]:
    """The image's config says `platform` (os/arch[/variant]): its python3 must be a program
    of that architecture, and so must every CUDA library copy (one of another never loads)."""
    os_arch = platforms.os_arch(platform)
    if os_arch not in platforms.KNOWN or report.system.machine is None:
        return []
    machine = platforms.machine(os_arch)
    measured = platforms.of_machine(report.system.machine)
    checks = [Check("platform", PASS if measured == os_arch else FAIL, os_arch,
                    f"{measured} ({report.system.machine})",
                    "" if measured == os_arch else
                    f"the image's config says {os_arch}, but its python3 is a "
                    f"{report.system.machine} program: the config or the layers are wrong")]
    for family, found in report.libraries.families.items():
        for copy in found.copies:
            if copy.machine and copy.machine != machine:
                checks.append(Check(f"{family}.architecture", FAIL, machine, copy.machine,
                                    f"{copy.path} is built for {copy.machine}: a {os_arch} "
                                    f"image needs the {machine} build (for a wheel, its "
                                    f"manylinux_*_{machine} file)"))
    return checks


def evaluate(image: str, image_id: str, report: Report, exp: Expectations, *, gpu: bool,
             thresholds: Thresholds = Thresholds(), before: tuple[Check, ...] = (),
             data: Compat | None = None, shm_size: str | None = None,
             parent: tuple[str, dict[str, list[list[str]]] | None] | None = None,
             platform: str = "", command: str = "verify") -> Verdict:
    """Every check of `report`; `before` are checks made outside the probe (the host's);
    `parent`: for an extension image, its parent and the libraries its verdict recorded;
    `platform`: what the image's config says it is (os/arch); `command`: what judged it
    (verify, or judge for a report made elsewhere)."""
    data = data or compat.load()
    checks = [*before, Check("python3", PASS, "present", report.system.python)]
    checks += platform_checks(report, platform)
    checks += library_checks(report, exp)
    checks += dependency_checks(report)
    if parent is not None:
        checks += parent_stack_checks(report, *parent)
    checks += stack_checks(report, exp, data)
    checks += framework_checks(report, exp)
    checks += bare_name_checks(report, exp)
    checks += environment_checks(report, exp, data, shm_size)
    if gpu:
        checks += gpu_checks(report, exp, thresholds)
    else:
        checks.append(Check("gpu", SKIP, "", f"not run ({without_gpu(command)})",
                            "the GPU was NOT verified", required=False))
    return Verdict(image=image, image_id=image_id, checks=tuple(checks), gpu_checked=gpu,
                   facts=report, command=command)
