"""The compatibility data as files: the shipped data/compat.yaml and a user's overlay
(`compat.yaml` in the matrix folder, or --compat FILE), each validated with typed models,
the overlay merged over the shipped data entry by entry, then cross-checked. Every problem
is a SpecError naming the file, the key and the reason."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from .. import yamlload
from ..errors import SpecError, every_problem
from .problems import key_of, line_of, nearest_key

Dotted = Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)*$")]
CudaKey = Annotated[str, StringConstraints(pattern=r"^[0-9]{1,2}\.[0-9]{1,2}$")]
Name = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9._+-]{0,63}$")]
Requirement = Annotated[str, StringConstraints(
    pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[a-z0-9-]+(,[a-z0-9-]+)*\])?==[0-9][0-9A-Za-z.+!_-]*$")]
# name[extras]==version, pinned
Library = Annotated[str, StringConstraints(pattern=r"^lib[A-Za-z0-9_+-]+\.so[0-9.]*$")]
Text = Annotated[str, StringConstraints(min_length=1, max_length=200)]
Platform = Literal["linux/amd64", "linux/arm64"]
AMD64_ONLY: list[Platform] = ["linux/amd64"]   # what an entry that says nothing claims


def _specifier(text: str) -> str:
    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        raise ValueError(f"{text!r} is not a version range such as '>=8.6,<9'") from None
    return text


Range = Annotated[str, AfterValidator(_specifier)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Driver(Strict):
    # the full toolkit's driver (release notes); None where imgkit's data has not read it
    toolkit: Dotted | None = None
    minor_compat: Dotted


class CudaEntry(Strict):
    wheel_suffix: Annotated[str, StringConstraints(pattern=r"^cu[0-9]{2}$")]
    driver: Driver
    components: dict[Name, Dotted] = Field(min_length=1)
    cudnn: list[Dotted]
    nccl: list[Dotted]
    # wheel names of this release that differ from the shared `packages` pattern
    packages: dict[Name, Annotated[str, StringConstraints(pattern=r"^nvidia-[a-z0-9-]{1,60}$")]] = {}
    # platforms with a wheel of every component (PyPI's files); cuDNN and NCCL versions
    # listed above that lack a wheel for one of them: platform -> cudnn/nccl -> versions
    platforms: list[Platform] = Field(default=AMD64_ONLY, min_length=1)
    missing: dict[Platform, dict[Literal["cudnn", "nccl"], list[Dotted]]] = {}


class OsEntry(Strict):
    distro: Literal["debian", "ubuntu"]
    release: Annotated[str, StringConstraints(pattern=r"^[0-9]{1,2}(\.[0-9]{2})?$")]
    python: Annotated[str, StringConstraints(pattern=r"^3\.[0-9]{1,2}$")]
    image: Text
    keyring: Text
    script: Name
    components: list[Name] = Field(min_length=1)
    glibc: Annotated[str, StringConstraints(pattern=r"^2\.[0-9]{1,2}$")] | None = None


PythonKey = Annotated[str, StringConstraints(pattern=r"^3\.[0-9]{1,2}$")]


class Wheel(Strict):
    """One wheel on the index, by version and its file's sha256 (pip --require-hashes)."""
    version: Dotted
    sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class VenvTools(Strict):
    pip: Wheel
    setuptools: Wheel


class FrameworkEntry(Strict):
    pip: Requirement
    cuda: CudaKey
    cudnn: Range
    nccl: Range
    python: list[PythonKey] = Field(min_length=1)
    apt: list[Name] = []
    dlopen: list[Library] = []
    platforms: list[Platform] = Field(default=AMD64_ONLY, min_length=1)  # with a GPU build


class CompatDocument(Strict):
    """One compat file; in an overlay every section is optional."""
    cuda: dict[CudaKey, CudaEntry] = {}
    packages: dict[Name, Annotated[str, StringConstraints(pattern=r"^[a-z0-9-]*\{suffix\}[a-z0-9-]*$")]] = {}
    os: dict[Name, OsEntry] = {}
    frameworks: dict[Name, dict[Dotted, FrameworkEntry]] = {}
    # the oldest python an entry is for -> the pip and setuptools wheels every venv gets
    venv: dict[PythonKey, VenvTools] = {}


def read(path: Path) -> CompatDocument:
    """A compat file, validated: every problem at once, each with its line."""
    raw, lines = yamlload.read_with_lines(path)
    if raw is None:
        raw = {}
    try:
        return CompatDocument.model_validate(raw)
    except ValidationError as exc:
        raise every_problem([_problem(path, error, lines) for error in exc.errors()]) from None


def _problem(path: Path, error: Any, lines: dict[yamlload.Path_, int]) -> SpecError:
    key, line = key_of(error["loc"]), line_of(error["loc"], lines)
    number = error.get("input")
    if (error["type"] == "string_type" and isinstance(number, (int, float))
            and not isinstance(number, bool)):
        typed = yamlload.written(number) if isinstance(number, float) else str(number)
        return SpecError(str(path), key, f"{typed} was read as a number", line=line,
                         hint=f"quote versions so YAML keeps them as text: '{typed}'")
    hint = nearest_key(CompatDocument, error["loc"]) if error["type"] == "extra_forbidden" else ""
    return SpecError(str(path), key, _reason(error), line=line, hint=hint)


def _reason(error: Any) -> str:
    message = str(error["msg"])
    if error["type"] == "extra_forbidden":
        return "unknown key"
    if error["type"] == "missing":
        return "required key is missing"
    if error["type"] == "string_pattern_mismatch":
        return f"{error['input']!r} is not valid here (expected {error['ctx']['pattern']})"
    return message.removeprefix("Value error, ")


def merge(shipped: CompatDocument, overlay: CompatDocument) -> CompatDocument:
    """The overlay's entries replace or add to the shipped ones: a CUDA release, a package
    name, an OS, or one build of a framework."""
    frameworks = {name: dict(builds) for name, builds in shipped.frameworks.items()}
    for name, builds in overlay.frameworks.items():
        frameworks.setdefault(name, {}).update(builds)
    return CompatDocument.model_construct(        # both sides were validated when read
        cuda={**shipped.cuda, **overlay.cuda}, packages={**shipped.packages, **overlay.packages},
        os={**shipped.os, **overlay.os}, frameworks=frameworks,
        venv={**shipped.venv, **overlay.venv})


def cross_check(data: CompatDocument, origin: dict[str, str], default: str) -> None:
    """What one entry says of another must exist: each framework build's CUDA, each CUDA
    component's package name. `origin`: the file each overlay entry came from; `default`:
    the file of every other entry."""
    for name, builds in data.frameworks.items():
        for version, build in builds.items():
            if build.cuda not in data.cuda:
                raise SpecError(origin.get(f"frameworks.{name}.{version}", default),
                                f"frameworks.{name}.{version}.cuda",
                                f"CUDA {build.cuda} is not in the compat data",
                                hint=f"add a cuda.\"{build.cuda}\" entry, or use one of: "
                                     f"{', '.join(sorted(data.cuda))}")
    for cuda, release in data.cuda.items():
        for component in [*release.components, "cudnn", "nccl"]:
            if component not in data.packages:
                raise SpecError(origin.get(f"cuda.{cuda}", default), f"cuda.{cuda}.components",
                                f"no package name for {component!r}",
                                hint=f"add packages.{component}: nvidia-...-{{suffix}}")


def origins(overlay: Path, overlay_data: CompatDocument) -> dict[str, str]:
    """The overlay's entries, each mapped to the overlay file (for error messages)."""
    found = {f"cuda.{key}": str(overlay) for key in overlay_data.cuda}
    found |= {f"os.{key}": str(overlay) for key in overlay_data.os}
    for name, builds in overlay_data.frameworks.items():
        found.update({f"frameworks.{name}.{v}": str(overlay) for v in builds})
    return found
