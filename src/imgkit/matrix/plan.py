"""Expand the spec into a DAG of build targets: resolve pins, parents, tags; select a slice.

Layers, each a tagged image shared by every child that needs it:
    base OS (imported) -> python -> cuda (runtime libs) -> cudnn -> nccl -> framework
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Collection, Sequence

from ..errors import CompatError, SpecError
from ..reference import problem
from .compat import Compat, FrameworkBuild, OsRelease, version_key
from .spec import CUDA_LIBS, Combo, Family, Spec

LAYERS = ("python", "cuda", "cudnn", "nccl", "framework")
VENV = "/opt/venv"
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

    @property
    def component_map(self) -> dict[str, str]:
        return dict(self.components)


@dataclass(frozen=True)
class Plan:
    targets: tuple[Target, ...]    # parents always before children
    finals: tuple[str, ...] = field(default=())  # tags a family asked for by name

    def get(self, tag: str) -> Target:
        for t in self.targets:
            if t.tag == tag:
                return t
        raise KeyError(tag)


def base_ref(os_release: OsRelease, settings: Settings) -> str:
    return f"{settings.namespace}/{os_release.distro}:{os_release.name}"


def _short(version: str, parts: int = 2) -> str:
    return ".".join(version.split(".")[:parts])


def _chain(family: Family, combo: Combo, compat: Compat, settings: Settings) -> list[Target]:
    """The list of targets (root first) that one matrix point needs."""
    ns = settings.namespace
    os_release = compat.os_release(combo.os)
    os_python = os_release.python
    python = combo.python or os_python
    if python != os_python:
        raise CompatError(f"python {python} is not what {combo.os} ships",
                          hint=f"{combo.os} provides python {os_python}; use that or omit the axis")
    rel = compat.release(combo.cuda)
    build: FrameworkBuild | None = None
    if family.framework:
        assert combo.framework_version is not None  # spec guarantees it
        build = compat.framework(family.framework, combo.framework_version)
        if build.cuda != combo.cuda:
            raise CompatError(
                f"{build.name} {build.version} is built for CUDA {build.cuda}, not {combo.cuda}",
                hint=f"use cuda {build.cuda} for {build.name} {build.version}")
        if python not in build.python:
            raise CompatError(f"{build.name} {build.version} has no wheel for python {python}",
                              hint=f"pythons with wheels: {', '.join(build.python)}")
        if combo.cudnn == "none" or combo.nccl == "none":
            raise CompatError(f"{build.name} {build.version} needs cuDNN and NCCL",
                              hint="set the cudnn and nccl axes (or 'default')")

    suffix = f"py{python}-{combo.os}"
    base = base_ref(os_release, settings)
    py_t = Target(tag=f"{ns}/python:{python}-{combo.os}", layer="python", family=family.name,
                  parent=None, base=base, os=combo.os, python=python, os_release=os_release,
                  components=(("os", combo.os), ("python", python)))
    libs = family.cuda_libs or tuple(c for c in CUDA_LIBS if c in dict(rel.components))
    missing = [c for c in libs if c not in dict(rel.components)]
    if missing:
        raise CompatError(f"CUDA {combo.cuda} has no {', '.join(missing)}")
    pins = [(c, v) for c, v in rel.components if c in libs]
    flavour = "runtime" if family.cuda_libs is None else "-".join(libs)
    cuda_tag = f"{combo.cuda}-{flavour}"
    chain = [py_t]
    cuda_t = Target(tag=f"{ns}/cuda:{cuda_tag}-{suffix}", layer="cuda", family=family.name,
                    parent=py_t.tag, base=None, os=combo.os, python=python, cuda=combo.cuda,
                    components=py_t.components + (("cuda", combo.cuda),) + tuple(pins),
                    packages=tuple(f"{compat.package(c, combo.cuda)}=={v}" for c, v in pins))
    chain.append(cuda_t)
    tag_so_far = cuda_tag
    for layer, series, rng in (("cudnn", combo.cudnn, build.cudnn if build else None),
                               ("nccl", combo.nccl, build.nccl if build else None)):
        if series == "none":
            continue
        resolve = compat.resolve_cudnn if layer == "cudnn" else compat.resolve_nccl
        pin = resolve(combo.cuda, series, rng)
        tag_so_far += f"-{layer}{_short(pin)}"
        parent = chain[-1]
        chain.append(Target(
            tag=f"{ns}/cuda:{tag_so_far}-{suffix}", layer=layer, family=family.name,
            parent=parent.tag, base=None, os=combo.os, python=python, cuda=combo.cuda,
            components=parent.components + ((layer, pin),),
            packages=(f"{compat.package(layer, combo.cuda)}=={pin}",)))
    if build is not None:
        parent = chain[-1]
        comps = parent.component_map
        fields = {"os": combo.os, "python": python, "cuda": combo.cuda,
                  "cudnn": _short(comps["cudnn"]), "cudnn_major": comps["cudnn"].split(".")[0],
                  "nccl": _short(comps["nccl"]), "framework": build.name,
                  "framework_version": build.version, "framework_minor": _short(build.version)}
        assert family.tag_template and family.repository
        tag = family.tag_template.format(**fields)
        chain.append(Target(
            aliases=tuple(dict.fromkeys(a.format(**fields) for a in family.alias_templates)),
            tag=f"{family.repository}:{tag}", layer="framework", family=family.name,
            parent=parent.tag, base=None, os=combo.os, python=python, cuda=combo.cuda,
            components=parent.components + (("framework", build.name),
                                            ("framework_version", build.version)),
            packages=(build.pip,), framework=build))
    return chain


def _check_reference(family: Family, target: Target) -> None:
    """Every image's name:tag must be a reference docker accepts, known at load time rather
    than after a whole build."""
    repository = target.tag.rsplit(":", 1)[0]
    for alias in target.aliases:
        why = problem(f"{repository}:{alias}")
        if why is not None:
            raise SpecError(family.file, "aliases", f"{alias!r} (for {target.tag}): {why}")
    why = problem(target.tag)
    if why is None:
        return
    if target.layer == "framework":
        raise SpecError(family.file, "tag", f"{family.tag_template!r} gives {target.tag!r}: {why}")
    raise SpecError(family.file, "(layer images)", f"{target.tag!r}: {why}",
                    hint="check --namespace and the axis values that go into layer tags")


def _claim_aliases(family: Family, target: Target, claimed: dict[str, tuple[str, str]]) -> None:
    """An alias names one image: `latest-gpu` on a family of many images is ambiguous."""
    repository = target.tag.rsplit(":", 1)[0]
    for alias in target.aliases:
        owner, _ = claimed.setdefault(f"{repository}:{alias}", (target.tag, family.file))
        if owner != target.tag:
            raise SpecError(family.file, "aliases", f"{alias!r} would name both {owner} and "
                            f"{target.tag}", hint="put a placeholder in it that tells them apart, "
                            "e.g. {cuda}, or narrow it with include/exclude")


def _check_alias_owners(claimed: dict[str, tuple[str, str]], by_tag: dict[str, Target]) -> None:
    """An alias may not be another image's own tag (publishing would move it away)."""
    for ref, (owner, file) in claimed.items():
        if ref in by_tag and ref != owner:
            raise SpecError(file, "aliases", f"{ref.rsplit(':', 1)[1]!r} (for {owner}) is the tag "
                            f"of another image, {ref}")


def make_plan(spec: Spec, compat: Compat, settings: Settings = Settings()) -> Plan:
    by_tag: dict[str, Target] = {}
    finals: list[str] = []
    claimed: dict[str, tuple[str, str]] = {}   # repository:alias -> (image, file)
    for family in spec.families:
        for combo in family.combos:
            try:
                chain = _chain(family, combo, compat, settings)
            except CompatError as exc:
                point = ", ".join(f"{k}={v}" for k, v in vars(combo).items() if v is not None)
                raise SpecError(family.file, f"axes ({point})", exc.message, hint=exc.hint)
            for target in chain:
                _check_reference(family, target)
                known = by_tag.get(target.tag)
                if known is None:
                    by_tag[target.tag] = target
                elif (known.components, known.packages, known.parent) != (
                        target.components, target.packages, target.parent):
                    raise SpecError(family.file, "tag",
                                    f"{target.tag} would name two different images "
                                    f"(also from family {known.family})")
            finals.append(chain[-1].tag)
            _claim_aliases(family, chain[-1], claimed)
    _check_alias_owners(claimed, by_tag)
    order = {layer: i for i, layer in enumerate(LAYERS)}
    targets = sorted(by_tag.values(), key=lambda t: (order[t.layer], t.tag))
    return Plan(targets=tuple(targets), finals=tuple(dict.fromkeys(finals)))


def _matches(target: Target, glob: str) -> bool:
    return fnmatch.fnmatch(target.tag, glob) or fnmatch.fnmatch(target.tag.split(":", 1)[1], glob)


def select(plan: Plan, cuda: str | None = None, only: Sequence[str] = ()) -> Plan:
    """The slice asked for (every --only glob, joined), with every ancestor it needs
    (ancestors may turn out up to date)."""
    if cuda is not None and not any(t.cuda == cuda for t in plan.targets):
        known = sorted({t.cuda for t in plan.targets if t.cuda}, key=version_key)
        raise CompatError(f"no image in the matrix has CUDA {cuda!r}",
                          hint=f"CUDA versions in the matrix: {', '.join(known)}")
    in_cuda = [t for t in plan.targets if cuda is None or t.cuda == cuda]
    for glob in only:
        if not any(_matches(t, glob) for t in in_cuda):
            raise CompatError(f"nothing in the matrix matches --only {glob!r}"
                              + (f" with CUDA {cuda}" if cuda else ""))
    wanted = [t for t in in_cuda if not only or any(_matches(t, glob) for glob in only)]
    keep: set[str] = set()
    for target in wanted:
        tag: str | None = target.tag
        while tag is not None and tag not in keep:
            keep.add(tag)
            tag = plan.get(tag).parent
    return Plan(targets=tuple(t for t in plan.targets if t.tag in keep),
                finals=tuple(f for f in plan.finals if f in keep))


def split_given(plan: Plan, given: Collection[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """With some images given (staged by an earlier CI job, pulled by digest, never rebuilt):
    (what to build, which given images that stands on). A given image needs nothing below
    it, so ancestors reached only through given images are neither built nor fetched."""
    parents = {t.parent for t in plan.targets}
    needed = {t.tag for t in plan.targets if t.tag not in parents}   # the slice's leaves
    build: list[str] = []
    fetch: list[str] = []
    for target in reversed(plan.targets):                              # children first
        if target.tag not in needed:
            continue
        if target.tag in given:
            fetch.append(target.tag)
        else:
            build.append(target.tag)
            if target.parent is not None:
                needed.add(target.parent)
    return tuple(reversed(build)), tuple(reversed(fetch))
