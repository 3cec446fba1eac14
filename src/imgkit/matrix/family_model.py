"""The three kinds of family file as typed models: the one description of the format, from
which come validation (spec.py), the JSON Schema (`imgkit schema`) and docs/matrix.md.

- a CUDA stack family (no `framework:`, no `extends:`): python, the CUDA runtime, cuDNN and
  NCCL, each a layer imgkit names;
- a framework family (`framework:`): the same stack with a framework on top, tagged by you;
- an extension family (`extends:`): packages, files and settings added on top of every image
  of another family.
"""
from __future__ import annotations

import re
import string
from typing import Annotated, Any, Mapping

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from .fields import (
    EACH_ONCE,
    IS_LIST,
    IS_MAPPING,
    NON_EMPTY,
    Age,
    AptPackage,
    CudaLibs,
    CudaValue,
    CudnnValue,
    Destination,
    EnvName,
    FrameworkVersion,
    ImageRef,
    LabelName,
    Line,
    Name,
    NcclValue,
    OnOff,
    OsValue,
    Pin,
    PlatformValue,
    Port,
    PythonValue,
    Repository,
    Shell,
    Size,
    Source,
    TemplateText,
    UserName,
    meant,
    refusal,
)

TAG_FIELDS = ("os", "python", "cuda", "cudnn", "cudnn_major", "nccl", "framework",
              "framework_version", "framework_minor")
EXTENSION_FIELDS = (*TAG_FIELDS, "parent_tag")     # the extended image's own tag
NARROWING = ("os", "python", "cuda", "cudnn", "nccl", "framework_version")
DEFAULT_TAG = "{parent_tag}"


def _placeholders(fields: tuple[str, ...]) -> Any:
    def check(template: str) -> str:
        try:
            parts = list(string.Formatter().parse(template))
        except ValueError as exc:
            raise refusal(f"{template!r}: {exc}")
        unknown = [field for _, field, spec, conv in parts
                   if field is not None and (field not in fields or spec or conv)]
        if unknown:
            near = [(u, meant(u, list(fields), cutoff=0.6)) for u in unknown]
            raise refusal(f"unknown placeholder{'s' if len(unknown) > 1 else ''} "
                          + ", ".join(f"{{{u}}}" for u in unknown),
                          hint="; ".join(f"{{{m}}} for {{{u}}}?" for u, m in near if m) or
                          f"placeholders: {', '.join('{' + f + '}' for f in fields)}")
        literals = "".join(literal for literal, *_ in parts)
        wrong = "".join(dict.fromkeys(re.sub(r"[A-Za-z0-9_.-]", "", literals)))
        if wrong:
            fixed = "".join(literal.translate({ord(c): "-" for c in wrong})
                            + ("" if field is None else f"{{{field}}}")
                            for literal, field, *_ in parts)
            raise refusal(f"{template!r} has characters a docker tag cannot hold: "
                          f"{' '.join(repr(c) for c in wrong)}",
                          hint=f"a tag takes letters, digits, '.', '_' and '-' (the repository "
                               f"is `repository:`, before the ':'); {fixed!r} would do")
        return template
    return AfterValidator(check)


def _description(value: Any) -> Any:
    return "" if value is None else str(value) if isinstance(value, (int, float)) else value


StackTemplate = Annotated[TemplateText, _placeholders(TAG_FIELDS)]
ExtensionTemplate = Annotated[TemplateText, _placeholders(EXTENSION_FIELDS)]
Description = Annotated[str, BeforeValidator(_description)]
Os = Annotated[list[OsValue], IS_LIST, NON_EMPTY, EACH_ONCE]
Python = Annotated[list[PythonValue], IS_LIST, NON_EMPTY, EACH_ONCE]
Cuda = Annotated[list[CudaValue], IS_LIST, NON_EMPTY, EACH_ONCE]
Cudnn = Annotated[list[CudnnValue], IS_LIST, NON_EMPTY, EACH_ONCE]
Nccl = Annotated[list[NcclValue], IS_LIST, NON_EMPTY, EACH_ONCE]
FrameworkVersions = Annotated[list[FrameworkVersion], IS_LIST, NON_EMPTY, EACH_ONCE]
Platforms = Annotated[list[PlatformValue], IS_LIST, NON_EMPTY, EACH_ONCE]
Narrowing = Annotated[list[Line], IS_LIST, NON_EMPTY]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Axes(Strict):
    """Each axis lists values; the family's images are every combination of them."""

    os: Os | None = Field(None, description="the OS release imgkit makes the root filesystem "
                                         "from: bookworm (the default), trixie, jammy, noble",
                                         examples=[["bookworm"], ["trixie"]])
    python: Python | None = Field(
        None, description="only the OS's own python is allowed; omit to take it",
        examples=[["3.11"]])
    cuda: Cuda = Field(description="CUDA releases (major.minor), required",
                                      examples=[["12.8", "13.0"]])
    cudnn: Cudnn | None = Field(
        None, description="cuDNN series or version; `default` is the release's, `none` "
        "leaves it out (the default)", examples=[["9"], ["8.6"], ["default"]])
    nccl: Nccl | None = Field(
        None, description="NCCL series or version; `default` or `none` (the default)",
        examples=[["default"], ["2.21"]])
    framework_version: FrameworkVersions | None = Field(
        None, description="versions of `framework:` (framework families only)",
        examples=[["2.6.2"]])
    platform: Platforms | None = Field(
        None, description="prefer the family key `platforms:`", examples=[["linux/amd64"]])


class Point(Strict):
    """One combination of axis values, for `include:` and `exclude:`."""

    os: OsValue | None = None
    python: PythonValue | None = None
    cuda: CudaValue | None = None
    cudnn: CudnnValue | None = None
    nccl: NcclValue | None = None
    framework_version: FrameworkVersion | None = None
    platform: PlatformValue | None = None


class Extends(Strict):
    """The family extended, optionally narrowed to some of its images."""

    family: Name = Field(description="the family whose images are extended")
    os: Narrowing | None = Field(None, description="only its images on these OS releases")
    python: Narrowing | None = Field(None, description="only those with these pythons")
    cuda: Narrowing | None = Field(None, description="only those of these CUDA releases")
    cudnn: Narrowing | None = Field(None, description="only those with these cuDNN series")
    nccl: Narrowing | None = Field(None, description="only those with these NCCL series")
    framework_version: Narrowing | None = Field(None, description="only those of these "
                                                "framework versions")


class Named(Strict):
    family: Name = Field(description="the family's name, unique in the matrix",
                         examples=["pytorch"])
    description: Description = Field("", description="one line for `imgkit list`")


class UserModel(Strict):
    """The user the image runs as."""

    name: UserName = Field(description="the user's name; `root` needs a reason")
    uid: Annotated[int, Field(ge=0, le=2**31 - 1)] = Field(1000, description="its uid")
    gid: Annotated[int, Field(ge=0, le=2**31 - 1)] | None = Field(
        None, description="its group's gid (default: the uid)")
    reason: Line | None = Field(None, description="why the image runs as root")


class Custom(Strict):
    """What a team sets on the images a framework or extension family names."""

    user: UserModel | None = Field(None, description="the user the image runs as (default: "
                                   "the extended image's, else imgkit, uid 1000)",
                                   examples=[{"name": "ml", "uid": 1001}])
    entrypoint: Annotated[list[Line], IS_LIST] = Field(
        [], description="the entrypoint, as a list of arguments", examples=[["tini", "--"]])
    cmd: Annotated[list[Line], IS_LIST] = Field(
        [], description="the default command, as a list of arguments",
        examples=[["jupyter", "lab"]])
    env: Annotated[dict[EnvName, Line], IS_MAPPING] = Field(
        {}, description="environment variables", examples=[{"HF_HOME": "/workspace/.hf"}])
    labels: Annotated[dict[LabelName, Line], IS_MAPPING] = Field(
        {}, description="image labels: your own prefix, or the OCI annotations a team owns "
        "(org.opencontainers.image. vendor, authors, url, source, documentation, licenses, "
        "title, description); never under org.imgkit.",
        examples=[{"com.example.team": "ml-platform"}])
    workdir: Destination | None = Field(None, description="the working folder (made, and "
                                        "owned by the user; default /workspace)",
                                        examples=["/workspace/app"])
    ports: Annotated[list[Port], IS_LIST] = Field(
        [], description="ports the image exposes", examples=[[8888]])
    run: Annotated[list[Shell], IS_LIST] = Field(
        [], description="shell steps run as root before the switch to the user, with the "
        "build's CA and package index", examples=[["update-ca-certificates"]])


class Packages(Strict):
    """What a framework or extension family installs on its images besides the framework."""

    pip: Annotated[list[Pin], IS_LIST] = Field(
        [], description="Python packages, each pinned to one version (held to the stack's "
        "own pins: a package the layers below pinned is not replaced)",
        examples=[["jupyterlab==4.2.5"]])
    apt: Annotated[list[AptPackage], IS_LIST] = Field(
        [], description="Debian packages, optionally pinned (name=version)",
        examples=[["libgl1"]])


class Declared(Strict):
    """What a family's images must hold beyond imgkit's own checks."""

    checks: Source | None = Field(
        None, description="a container-structure-test file beside the family file (schema "
        "2.0.0): its tests are judged in each image's verdict (`imgkit ci` passes it to the "
        "verify jobs; locally: `imgkit verify IMAGE --checks FILE`)",
        examples=["checks/pytorch.yaml"])


class StackFamily(Named):
    """A CUDA stack: python, the CUDA runtime, cuDNN and NCCL, each a layer imgkit tags."""

    axes: Axes = Field(description="the values each axis takes; `cuda` is required")
    exclude: Annotated[list[Point], IS_LIST] = Field(
        [], description="combinations left out; a point matches every combination with its "
        "values", examples=[[{"cuda": "12.8", "cudnn": "8"}]])
    include: Annotated[list[Point], IS_LIST] = Field(
        [], description="combinations added; each names every axis of the family",
        examples=[[{"cuda": "12.4", "cudnn": "9.1", "nccl": "2.21"}]])
    platforms: Platforms | None = Field(
        None, description="platforms every image is built for, one tag for all",
        examples=[["linux/amd64", "linux/arm64"]])
    cuda_libs: CudaLibs | None = Field(None, description="the CUDA runtime layer's libraries "
                                       "(default: every library of the release)",
                                       examples=[["cudart", "cublas"]])
    size_budget: Size | None = Field(None, description="the most each image may weigh; a "
                                     "heavier build fails", examples=["7.5GB"])
    max_base_age: Age | None = Field(None, description="an older base OS image is made again "
                                     "before building, so the chain rebuilds on fresh packages",
                                     examples=["30d"])
    base: ImageRef | None = Field(
        None, description="your own base image instead of an OS imgkit makes (a golden image, "
        "NVIDIA's CUDA runtime image): its OS, glibc, python and CUDA are read from the image, "
        "and it is built on by digest; no `axes.os` then",
        examples=["registry.example.com/golden/ubuntu:24.04",
                  "nvcr.io/nvidia/cuda:12.8.1-runtime-ubuntu24.04"])


class FrameworkFamily(Custom, Packages, Declared, StackFamily):
    """A framework (torch, paddle, jax) on a CUDA stack, tagged as you say."""

    framework: Name = Field(description="the framework built on the stack; the compat data "
                            "knows its builds", examples=["torch", "paddle", "jax"])
    repository: Repository = Field(description="the repository the family's images are "
                                   "tagged in", examples=["ml/pytorch"])
    tag: StackTemplate = Field(description="the images' tag, with {placeholders}",
                               examples=["{framework_version}-cuda{cuda}-cudnn{cudnn_major}"])
    aliases: Annotated[list[StackTemplate], IS_LIST] = Field(
        [], description="further tags, moved in registries only after a publish reached every "
        "destination", examples=[["latest-gpu"]])
    tf32: OnOff | None = Field(None, description="the FP32 math the image claims, made true "
                               "with the framework's own switch and proven by verify",
                               examples=["on", "off"])


class ExtensionFamily(Custom, Packages, Declared, Named):
    """Packages, files and settings added on top of every image of another family."""

    extends: Extends = Field(description="the family extended, optionally narrowed by axis",
                             examples=[{"family": "paddle"}, {"family": "pytorch",
                                                              "cuda": ["12.8"]}])
    repository: Repository = Field(description="the repository of the family's images",
                                   examples=["pytorch-jupyter"])
    tag: ExtensionTemplate = Field(DEFAULT_TAG, description="the images' tag; {parent_tag} "
                                   "is the extended image's own")
    aliases: Annotated[list[ExtensionTemplate], IS_LIST] = Field(
        [], description="further tags in registries")
    size_budget: Size | None = Field(None, description="the most each image may weigh")
    files: Annotated[dict[Source, Destination], IS_MAPPING] = Field(
        {}, description="files copied in: a path beside the family file to a path in the "
        "image", examples=[{"jupyter/config.py": "/etc/jupyter/jupyter_server_config.py"}])


KINDS: dict[str, type[Named]] = {"stack": StackFamily, "framework": FrameworkFamily,
                                 "extension": ExtensionFamily}
KIND_WORDS = {"stack": "a CUDA stack family (no `framework:` or `extends:`)",
              "framework": "a framework family (one with `framework:`)",
              "extension": "an extension family (one with `extends:`)"}


def kind_of(raw: Mapping[str, object]) -> str:
    """Which kind a family file is: `extends:` makes an extension, `framework:` a framework."""
    if "extends" in raw:
        return "extension"
    return "framework" if "framework" in raw else "stack"


def homes_of(key: str) -> list[str]:
    """The kinds of family that have `key`."""
    return [kind for kind, model in KINDS.items() if key in model.model_fields]
