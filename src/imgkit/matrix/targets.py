"""What a plan is made of: a target per image (its tag, its parent, every exact version it
holds), the plan (targets parents first) and the settings that name them. Plain frozen data.

Layers, each a tagged image shared by every child that needs it:
    base OS (imported) -> python -> cuda (runtime libs) -> cudnn -> nccl -> framework
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Iterator, Mapping

from ..budget import Budget
from .compat import FrameworkBuild, OsRelease
from .custom import DEFAULT_USER, Custom
from .extension import Extension

LAYERS = ("python", "cuda", "cudnn", "nccl", "framework", "extension")


# a wheel of NVIDIA's CUDA libraries for one CUDA major, e.g. nvidia-cudnn-cu12
CUDA_WHEEL = re.compile(r"^nvidia-[a-z0-9-]+-cu([0-9]+)$")


# One directory on LD_LIBRARY_PATH with a link to every NVIDIA wheel library, versioned and
# unversioned names alike, kept by imgkit-link-libs (wheels pull in dependencies we do
# not list, e.g. cuDNN 8 needs libnvrtc at run time).
LIB_LINKS = "/opt/imgkit/lib"


@dataclass(frozen=True)
class Settings:
    namespace: str = "imgkit"   # repository prefix of the shared layer images


@dataclass(frozen=True)
class Target:
    tag: str                       # full reference, repository:tag
    layer: str                     # one of LAYERS
    family: str                    # family that first asked for it
    parent: str | None             # parent target's tag; None for python (root) layers
    base: str | None               # base OS image for root layers
    os: str
    python: str
    cuda: str | None = None
    # exact versions of everything this image holds, cumulative over its parents
    components: tuple[tuple[str, str], ...] = ()
    # pip requirements this layer installs (validated "name==version")
    packages: tuple[str, ...] = ()
    framework: FrameworkBuild | None = None
    os_release: OsRelease | None = None  # what the base OS is, for root layers
    aliases: tuple[str, ...] = ()  # further tags in registries (not local), moved on publish
    budget: Budget | None = None   # what a family allows its images to weigh
    extension: Extension | None = None  # what an extension layer adds
    env: tuple[tuple[str, str], ...] = ()  # ENV the layer sets (a family's tf32 switch)
    # every platform an image standing on it needs (one tag names the image of each)
    platforms: tuple[str, ...] = ("linux/amd64",)
    max_base_age: int | None = None  # root layers: days before their base is made again
    custom: Custom | None = None   # what a framework or extension family sets on its images
    user: str = DEFAULT_USER       # who the image runs as (an extension keeps its parent's)
    apt: tuple[str, ...] = ()      # a framework layer's Debian packages: the build's, the family's
    checks: str | None = None      # the declared checks' file of the family that names it
    # python layers: the pip and setuptools its venv gets (name, version, sha256 of the wheel)
    venv_tools: tuple[tuple[str, str, str], ...] = ()

    @property
    def component_map(self) -> dict[str, str]:
        return dict(self.components)


@dataclass(frozen=True)
class Plan:
    targets: tuple[Target, ...]    # parents always before children
    finals: tuple[str, ...] = field(default=())  # tags a family asked for by name
    named: tuple[str, ...] = field(default=())   # tags --cuda/--only selected (the rest: their parents)
    left_out: tuple[str, ...] = field(default=())  # broken family files this selection stepped round

    def get(self, tag: str) -> Target:
        for t in self.targets:
            if t.tag == tag:
                return t
        raise KeyError(tag)


def matches(target: Target, glob: str) -> bool:
    """Whether an --only glob names `target` (by its whole tag, or the tag after the colon)."""
    return fnmatch.fnmatch(target.tag, glob) or fnmatch.fnmatch(target.tag.split(":", 1)[1], glob)


def lineage(target: Target, by_tag: Mapping[str, Target]) -> Iterator[Target]:
    """`target`, then its parent, its parent's parent... up to its root layer."""
    at: Target | None = target
    while at is not None:
        yield at
        at = by_tag.get(at.parent) if at.parent else None


def given_base(target: Target, plan: Plan) -> str | None:
    """The team's own base image (`base:`) `target` stands on, as built on (by digest)."""
    root = list(lineage(target, {t.tag: t for t in plan.targets}))[-1]
    return root.base if root.os_release is not None and root.os_release.given else None


def base_ref(os_release: OsRelease, settings: Settings) -> str:
    return f"{settings.namespace}/{os_release.distro}:{os_release.name}"


def short_version(version: str, parts: int = 2) -> str:
    return ".".join(version.split(".")[:parts])


def tag_fields(target: Target) -> dict[str, str]:
    """The values a tag template may use, as far as `target`'s stack has them."""
    comps = target.component_map
    fields = {"os": target.os, "python": target.python, "cuda": target.cuda or ""}
    if "cudnn" in comps:
        fields |= {"cudnn": short_version(comps["cudnn"]), "cudnn_major": comps["cudnn"].split(".")[0]}
    if "nccl" in comps:
        fields["nccl"] = short_version(comps["nccl"])
    if "framework" in comps:
        fields |= {"framework": comps["framework"], "framework_version": comps["framework_version"],
                   "framework_minor": short_version(comps["framework_version"])}
    return fields
