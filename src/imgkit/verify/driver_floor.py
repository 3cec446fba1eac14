"""NVIDIA_REQUIRE_CUDA judged as what it is: a requirement on the host's driver, which the
NVIDIA Container Toolkit enforces when the container starts (`cuda>=X.Y` needs a driver
that supports CUDA X.Y), not a claim about what the image holds. (The run-time side, the
host's driver against it, is run.py's host_driver_checks.)

Against the content it can contradict only two ways:
- a floor above the image's CUDA runtime: the image asks for a driver newer than its own
  CUDA needs, so hosts that could run it are refused at start (a warning);
- a floor below the runtime: right when the image carries NVIDIA's forward-compatibility
  libraries (NGC's framework containers say `cuda>=9.0` and ship them), else a host whose
  driver sits between the floor and the runtime's own minimum starts the container and
  fails at the first CUDA call (a warning naming that driver).
Never a failure: the libraries themselves are judged by the library and stack checks.
Pure logic."""
from __future__ import annotations

from .. import versions
from ..matrix.compat import Compat
from .expect import Expectations, required_cuda
from .facts import Report
from .verdict import INFO, PASS, WARN, Check

NAME = "env NVIDIA_REQUIRE_CUDA"


def floor_check(report: Report, exp: Expectations, data: Compat) -> Check:
    """The image's NVIDIA_REQUIRE_CUDA against the CUDA runtime it holds (measured; else
    the CUDA its tag or labels claim)."""
    require = report.system.env.get("NVIDIA_REQUIRE_CUDA") or ""
    floor = required_cuda(require)
    runtime = versions.major_minor(report.libraries.version("cudart") or "") or \
        versions.major_minor(exp.get("cuda") or "")
    if floor is None:
        return Check(NAME, WARN if runtime else INFO, "cuda>=X.Y", require or "unset",
                     "hosts with a too-old driver will not be refused at start"
                     if runtime else "", required=False)
    if runtime is None or versions.parse(floor) == versions.parse(runtime):
        return Check(NAME, PASS, f"cuda>={runtime or floor}", require, required=False)
    if not versions.at_least(runtime, floor):
        return Check(NAME, WARN, f"cuda>={runtime}", require,
                     f"the image asks for a driver of CUDA {floor}, newer than its CUDA "
                     f"{runtime} runtime needs: hosts whose driver could run it are refused "
                     "at start", required=False)
    compat_libs = report.system.cuda_compat
    if compat_libs:
        return Check(NAME, PASS, f"cuda>={runtime}, or forward compatibility", require +
                     f" with NVIDIA's forward-compatibility libraries ({compat_libs[0]})",
                     required=False)
    needs = _runtime_driver(runtime, data)
    return Check(NAME, WARN, f"cuda>={runtime}", require,
                 f"the floor (CUDA {floor}) is below the image's CUDA {runtime} runtime and the "
                 "image carries no forward-compatibility libraries (cuda-compat): a host whose "
                 f"driver is older than {needs} starts it and fails at the first CUDA call",
                 required=False)


def _runtime_driver(runtime: str, data: Compat) -> str:
    """The oldest driver the runtime runs on, in words."""
    if runtime not in data.cuda:
        return f"the one CUDA {runtime} needs"
    toolkit, minor = data.min_driver(runtime)
    return minor + (f" (CUDA {runtime}'s own: {toolkit})" if toolkit and toolkit != minor else "")
