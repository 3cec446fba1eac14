"""The probe's report, parsed once into typed, frozen facts.

The report comes from inside an image, so it is untrusted input: its shape is validated,
its `probe_version` must be the one this imgkit ships, and every string and list is
bounded, so a hostile or broken `python3` yields one clear `InvalidReport` (and a failing
verdict), never a KeyError deep in the evaluation or a renderer stuck on a 50 MB cell.
"""
from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, JsonValue, StringConstraints, ValidationError

from ..probe import PROBE_VERSION
from ..probe.channel import unframe

Text = Annotated[str, StringConstraints(max_length=8192)]
Version = Annotated[str, StringConstraints(max_length=64)]
Many = 4096   # the longest list a real report has is a few dozen entries


class Fact(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class Owner(Fact):
    """The package that installed a library file."""
    kind: Literal["wheel", "dpkg", "conda", "toolkit"]
    name: Text
    version: Text
    component: bool = False      # a CUDA component package, not a framework bundling one
    build: Optional[Text] = None  # conda's build string (cuda11_...)


class LibraryCopy(Fact):
    path: Text
    realpath: Text
    size: int = 0
    names: tuple[Text, ...] = Field(default=(), max_length=Many)
    where: Literal["loader", "environment"] = "loader"  # on the loader's path, or found in a
    loadable: bool = False                              # Python environment (RPATH, bundled)
    version: Optional[Version] = None
    version_source: Optional[Text] = None
    cuda_build: Optional[Version] = None  # cuDNN: the CUDA it was built for, as it says itself
    machine: Optional[Text] = None        # the architecture its ELF header names (uname -m)
    owner: Optional[Owner] = None
    error: Optional[Text] = None
    library_error: Optional[Text] = None


class Family(Fact):
    copies: tuple[LibraryCopy, ...] = Field(default=(), max_length=Many)


class Libraries(Fact):
    search_dirs: tuple[Text, ...] = Field(default=(), max_length=Many)
    environment_dirs: tuple[Text, ...] = Field(default=(), max_length=Many)
    families: dict[str, Family] = Field(default_factory=dict, max_length=64)
    # the rest of the stack the image's claims name (cuFFT, NPP, TensorRT...): versions only,
    # no layout checks (older reports have none)
    stack: dict[str, Family] = Field(default_factory=dict, max_length=64)
    driver_libs_in_image: tuple[Text, ...] = Field(default=(), max_length=Many)

    def copies(self, family: str) -> tuple[LibraryCopy, ...]:
        found = self.families.get(family) or self.stack.get(family)
        return found.copies if found else ()

    def version(self, family: str) -> str | None:
        """The first version any copy of `family` reported."""
        return next((c.version for c in self.copies(family) if c.version), None)


class System(Fact):
    python: Version
    machine: Optional[Text] = None   # `uname -m` as the image's python3 sees it
    uid: int
    user: Optional[Text] = None
    shm_bytes: Optional[int] = None
    env: dict[str, Optional[Text]] = Field(default_factory=dict, max_length=64)
    # NVIDIA's forward-compatibility libcuda copies (cuda-compat), by real path
    cuda_compat: list[Text] = Field(default_factory=list, max_length=16)


class BareName(Fact):
    loadable: bool = False
    error: Optional[Text] = None
    path: Optional[Text] = None


class AmpRun(Fact):
    """One kind of training step (fp32, fp16 with its loss scaler, bf16), timed."""
    ms: Optional[float] = None
    loss: Optional[float] = None
    finite: Optional[bool] = None
    stepped: Optional[bool] = None    # the weights moved: the optimizer really stepped
    scale: Optional[float] = None     # FP16: the loss scale after the timed steps
    error: Optional[Text] = None
    skipped: Optional[Text] = None


class Framework(Fact):
    imported: bool = False
    version: Optional[Version] = None
    build_cuda: Optional[Version] = None
    build_cudnn: Union[int, Version, None] = None
    compiled_with_cuda: Optional[bool] = None
    gpu_count: int = 0
    step_place: Optional[Text] = None
    step_on_gpu: Optional[bool] = None
    fp32_matmul_error: Optional[float] = None
    fp32_conv_error: Optional[float] = None
    amp: dict[str, AmpRun] = Field(default_factory=dict, max_length=8)
    tf32_switches: dict[str, JsonValue] = Field(default_factory=dict, max_length=64)
    error: Optional[Text] = None
    missing_library: Optional[Text] = None


class NvmlDevice(Fact):
    index: int = 0
    name: Text = ""
    uuid: Optional[Text] = None         # GPU-...: DCGM exporter's `UUID` label
    compute_capability: Optional[Version] = None
    mig: Optional[bool] = None
    mig_devices: Optional[int] = None   # MIG instances NVML lets the container see


class Nvml(Fact):
    available: bool = False
    error: Optional[Text] = None
    driver: Optional[Version] = None
    driver_cuda: Optional[Version] = None
    devices: tuple[NvmlDevice, ...] = Field(default=(), max_length=Many)


class Failure(Fact):
    """A measurement that did not complete: what failed and the library's code."""
    error: Text
    code: Union[int, Text, None] = None


class Timing(Fact):
    """A throughput measurement, or the error that stopped it."""
    tflops: Optional[float] = None
    ms: Optional[float] = None
    size: Optional[int] = None
    shape: Optional[Text] = None
    algo: Optional[int] = None
    error: Optional[Text] = None
    code: Union[int, Text, None] = None


class Tf32Check(Fact):
    fp32_error: Optional[float] = None
    tf32_error: Optional[float] = None
    boundary: float = 2e-5
    error: Optional[Text] = None


class Nccl(Fact):
    gpus: int = 0
    correct: bool = False
    busbw_gbs: Optional[float] = None
    error: Optional[Text] = None
    code: Union[int, Text, None] = None


class WorkDevice(Fact):
    index: int = 0
    sm_count: int = 0
    compute_capability: Version = ""


class Work(Fact):
    devices: tuple[WorkDevice, ...] = Field(default=(), max_length=Many)
    tf32_check: Optional[Tf32Check] = None
    gemm: dict[str, Timing] = Field(default_factory=dict, max_length=16)
    conv: Optional[Timing] = None
    nccl: Optional[Nccl] = None
    loaded: dict[str, Text] = Field(default_factory=dict, max_length=16)  # family -> file used
    seconds: Optional[float] = None


class Gpu(Fact):
    nvml: Nvml = Nvml()
    device_count: int = 0
    driver_cuda: Optional[Version] = None
    runtime_error: Optional[Failure] = None
    work: Optional[Work] = None


class DebPackage(Fact):
    name: Text
    version: Text
    arch: Text = ""
    source: Optional[Text] = None


class PythonDistribution(Fact):
    name: Text
    version: Text
    location: Text


Packages = 20000   # an image's packages or distributions (a big one has a few thousand)


class Inventory(Fact):
    """What is installed (`--inventory`): what an SBOM lists besides the libraries."""
    os_release: dict[str, Text] = Field(default_factory=dict, max_length=16)
    dpkg: tuple[DebPackage, ...] = Field(default=(), max_length=Packages)
    python: tuple[PythonDistribution, ...] = Field(default=(), max_length=Packages)


class PipCheck(Fact):
    """`pip check` in the image's environment."""
    ran: bool = False
    ok: bool = False
    problems: tuple[Text, ...] = Field(default=(), max_length=200)
    error: Optional[Text] = None


class DeclaredRun(Fact):
    """One of the team's gpuTests or commandTests as the probe ran it."""
    name: Text
    exit_code: Optional[int] = None
    timed_out: bool = False
    seconds: Optional[float] = None
    stdout: Text = ""
    stderr: Text = ""
    error: Optional[Text] = None


class ProbeArgs(Fact):
    """How the probe was asked to run (a report read back from a Kubernetes Job says so)."""
    no_gpu: bool = False


class Report(Fact):
    probe_version: int
    system: System
    libraries: Libraries
    bare_names: dict[str, BareName] = Field(default_factory=dict, max_length=64)
    frameworks: dict[str, Framework] = Field(default_factory=dict, max_length=16)
    gpu: Gpu = Gpu()
    inventory: Optional[Inventory] = None
    pip_check: Optional[PipCheck] = None
    # the stack's Python packages claims name (nvidia-dali-cuda120 -> 1.43.0)
    distributions: dict[str, Version] = Field(default_factory=dict, max_length=64)
    args: Optional[ProbeArgs] = None
    declared: tuple[DeclaredRun, ...] = Field(default=(), max_length=200)
    commands: Optional[tuple[DeclaredRun, ...]] = Field(default=None, max_length=200)


class InvalidReport(Exception):
    """The probe's output is not a report this imgkit can trust; says where and why."""


def parse_report(data: Any) -> Report:
    """Validate a decoded report (a dict), or raise InvalidReport with the first problems."""
    if not isinstance(data, dict) or "probe_version" not in data:
        raise InvalidReport("not a probe report: " + (
            "it has no probe_version" if isinstance(data, dict) else
            f"a JSON {type(data).__name__}, not an object"))
    if data["probe_version"] != PROBE_VERSION:
        raise InvalidReport(f"probe_version is {data['probe_version']!r}, this imgkit's "
                            f"probe is version {PROBE_VERSION}")
    try:
        return Report.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'report'}: {e['msg']}"
                             for e in exc.errors()[:3])
        raise InvalidReport(f"not a probe report ({exc.error_count()} problem(s)): "
                            f"{problems}") from None


def parse_output(stdout: str, token: str | None = None) -> Report:
    """The report from the probe's standard output: the JSON document framed by its marker
    lines (with `token`, when the caller chose one); whatever the image printed before or
    after it (start-up hooks, banners, exit handlers) is ignored."""
    body = unframe(stdout, token)
    if body is None:
        other = next((line.strip() for line in stdout.splitlines() if line.strip()), "")
        raise InvalidReport("no probe report in its output"
                            + (f" (it printed {len(stdout)} bytes, first: {other[:120]!r})"
                               if other else " (it printed nothing)"))
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise InvalidReport(f"not JSON: {exc}") from None
    return parse_report(data)
