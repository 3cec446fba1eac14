"""One point of a family's matrix as the chain of targets it needs, root first: python,
the CUDA runtime, cuDNN, NCCL, the framework. Every pin is resolved from the compat data, and
a point that cannot work (a framework built for another CUDA or python, a wheel missing for
its platform) is refused naming why and what would."""
from __future__ import annotations

from dataclasses import replace

from .. import tf32
from ..errors import CompatError, Inconsistent, every_incompatibility
from .compat import Compat, CudaRelease, FrameworkBuild, OsRelease
from .custom import DEFAULT_USER
from .extension import pins_of
from .given_base import check_cuda
from .spec import CUDA_LIBS, Combo, Family
from .targets import Settings, Target, base_ref, short_version, tag_fields


def chain(family: Family, combo: Combo, compat: Compat, settings: Settings) -> list[Target]:
    """The list of targets (root first) that one matrix point needs. A point's problems that
    do not hide each other (its python, its CUDA, its framework build) are said at once."""
    os_release = compat.os_release(combo.os)
    check_cuda(os_release, combo.cuda)        # a team's own base may hold a CUDA runtime
    problems: list[CompatError] = []
    python = _python(combo, os_release, problems)
    try:
        release = compat.release(combo.cuda)                  # an unknown CUDA: said first
    except CompatError as unknown:
        problems.insert(0, unknown)
    build = _framework_build(family, combo, compat, python, problems)
    if problems:
        raise every_incompatibility(problems)
    targets = [_python_target(family, combo, os_release, python, settings, compat)]
    targets.append(_cuda_target(family, combo, compat, release, targets[0], settings))
    targets += _library_targets(family, combo, compat, build, targets[-1])
    if build is not None:
        targets.append(_framework_target(family, build, targets[-1]))
    _check_platform(combo, build, _pins_by_layer(targets), compat)
    targets[0] = replace(targets[0], max_base_age=family.max_base_age)
    return [replace(t, platforms=(combo.platform,)) for t in targets]


def _python(combo: Combo, os_release: OsRelease, problems: list[CompatError]) -> str:
    """The point's python: the OS's own (the axis may only name that one)."""
    python = combo.python or os_release.python
    if python != os_release.python:
        problems.append(CompatError(f"python {python} is not what {combo.os} ships",
                                    hint=f"{combo.os} provides python {os_release.python}; "
                                         "use that or omit the axis"))
    return python


def _framework_build(family: Family, combo: Combo, compat: Compat, python: str,
                     problems: list[CompatError]) -> FrameworkBuild | None:
    """The framework build the point names, checked against its CUDA, python and layers;
    each mismatch goes to `problems`."""
    if not family.framework:
        return None
    if combo.framework_version is None:
        raise Inconsistent(f"{family.file}: a framework family without framework_version")
    try:
        build = compat.framework(family.framework, combo.framework_version)
    except CompatError as unknown:
        problems.append(unknown)
        return None
    if build.cuda != combo.cuda:
        problems.append(CompatError(
            f"{build.name} {build.version} is built for CUDA {build.cuda}, not {combo.cuda}",
            hint=f"use cuda {build.cuda} for {build.name} {build.version}"))
    if python not in build.python:
        problems.append(CompatError(f"{build.name} {build.version} has no wheel for python {python}",
                                    hint=f"pythons with wheels: {', '.join(build.python)}"))
    if combo.cudnn == "none" or combo.nccl == "none":
        problems.append(CompatError(f"{build.name} {build.version} needs cuDNN and NCCL",
                                    hint="set the cudnn and nccl axes (or 'default')"))
    return build


def _suffix(target: Target) -> str:
    return f"py{target.python}-{target.os}"


def _python_target(family: Family, combo: Combo, os_release: OsRelease, python: str,
                   settings: Settings, compat: Compat) -> Target:
    # a team's own base is built on by digest; an OS imgkit makes, by its local name
    base = os_release.image if os_release.given else base_ref(os_release, settings)
    return Target(tag=f"{settings.namespace}/python:{python}-{combo.os}", layer="python",
                  family=family.name, parent=None, base=base,
                  os=combo.os, python=python, os_release=os_release,
                  components=(("os", combo.os), ("python", python)),
                  venv_tools=compat.venv_tools(python))


def _cuda_target(family: Family, combo: Combo, compat: Compat, rel: CudaRelease, root: Target,
                 settings: Settings) -> Target:
    """The CUDA runtime layer: the family's `cuda_libs`, else every library of the release."""
    known = dict(rel.components)
    libs = family.cuda_libs or tuple(c for c in CUDA_LIBS if c in known)
    missing = [c for c in libs if c not in known]
    if missing:
        raise CompatError(f"CUDA {combo.cuda} has no {', '.join(missing)}")
    # a team's own base may hold some of them: those are its own, not installed again
    # (a second copy on the loader path is what verify fails)
    held = dict(root.os_release.cuda_libs) if root.os_release else {}
    pins = [(c, held.get(c, v)) for c, v in rel.components if c in libs]
    flavour = "runtime" if family.cuda_libs is None else "-".join(libs)
    return Target(tag=f"{settings.namespace}/cuda:{combo.cuda}-{flavour}-{_suffix(root)}",
                  layer="cuda", family=family.name, parent=root.tag, base=None, os=combo.os,
                  python=root.python, cuda=combo.cuda,
                  components=root.components + (("cuda", combo.cuda),) + tuple(pins),
                  packages=tuple(f"{compat.package(c, combo.cuda)}=={v}" for c, v in pins
                                 if c not in held),
                  env=nvidia_env("cuda", dict(pins), combo.cuda, rel.driver_minor_compat))


# What NVIDIA's own images say in their environment, written the same way by each layer, so
# tools that read NVIDIA's conventions (and verify, which holds them to the libraries) know
# what the image holds. NVIDIA_REQUIRE_CUDA's space-separated terms are alternatives to
# the NVIDIA container runtime: the CUDA release, or a driver of at least the floor of
# minor-version compatibility (which runs this runtime too).
def nvidia_env(layer: str, pins: dict[str, str], cuda: str,
               driver_floor: str = "") -> tuple[tuple[str, str], ...]:
    if layer == "cudnn":
        return (("CUDNN_VERSION", pins["cudnn"]),)
    if layer == "nccl":
        return (("NCCL_VERSION", pins["nccl"]),)
    require = f"cuda>={cuda}" + (f" driver>={driver_floor}" if driver_floor else "")
    env = [("CUDA_VERSION", pins["cudart"])] if "cudart" in pins else []
    env += [("NV_LIBCUBLAS_VERSION", pins["cublas"])] if "cublas" in pins else []
    return (*env, ("NVIDIA_VISIBLE_DEVICES", "all"),
            ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"), ("NVIDIA_REQUIRE_CUDA", require))


def _library_targets(family: Family, combo: Combo, compat: Compat, build: FrameworkBuild | None,
                     cuda: Target) -> list[Target]:
    """The cuDNN and NCCL layers the point asks for, each on the one before, each pin
    resolved from its series within what the framework build accepts; each tag is its
    parent's with the layer and its version added before the python suffix."""
    made: list[Target] = []
    suffix = f"-{_suffix(cuda)}"
    for layer, series, accepted in (("cudnn", combo.cudnn, build.cudnn if build else None),
                                    ("nccl", combo.nccl, build.nccl if build else None)):
        if series == "none":
            continue
        resolve = compat.resolve_cudnn if layer == "cudnn" else compat.resolve_nccl
        pin = resolve(combo.cuda, series, accepted)
        parent = made[-1] if made else cuda
        made.append(Target(
            tag=f"{parent.tag.removesuffix(suffix)}-{layer}{short_version(pin)}{suffix}",
            layer=layer, family=family.name, parent=parent.tag, base=None, os=combo.os,
            python=cuda.python, cuda=combo.cuda, components=parent.components + ((layer, pin),),
            packages=(f"{compat.package(layer, combo.cuda)}=={pin}",),
            env=nvidia_env(layer, {layer: pin}, combo.cuda)))
    return made


def _framework_target(family: Family, build: FrameworkBuild, parent: Target) -> Target:
    """The family's own image: the framework on its stack, named by the family's tag."""
    fields = {**tag_fields(parent), "framework": build.name, "framework_version": build.version,
              "framework_minor": short_version(build.version)}
    tag_template, repository = naming(family)
    claims = (("tf32", family.tf32), ("tf32_conv", family.tf32)) if family.tf32 else ()
    pins = tuple((f"pip.{name}", version) for name, version in pins_of(family.pip).items())
    return Target(
        aliases=tuple(dict.fromkeys(a.format(**fields) for a in family.alias_templates)),
        tag=f"{repository}:{tag_template.format(**fields)}", layer="framework",
        family=family.name, parent=parent.tag, base=None, os=parent.os, python=parent.python,
        cuda=parent.cuda, components=parent.components + (
            ("framework", build.name), ("framework_version", build.version)) + claims + pins,
        packages=(build.pip, *family.pip), apt=tuple(dict.fromkeys((*build.apt, *family.apt))),
        checks=family.checks,
        framework=build, custom=family.custom,
        user=family.custom.user.name if family.custom.user else DEFAULT_USER,
        env=tuple(sorted(tf32.ENV[build.name][family.tf32].items())) if family.tf32 else ())


def _pins_by_layer(chain: list[Target]) -> dict[str, str]:
    return {t.layer: dict(t.components)[t.layer] for t in chain if t.layer in ("cudnn", "nccl")}


def _check_platform(combo: Combo, build: FrameworkBuild | None, pins: dict[str, str],
                    compat: Compat) -> None:
    """Every wheel the point installs must exist for its platform (compat data, read from
    PyPI's files): refused now, naming the package, rather than failing in a build."""
    platform = combo.platform
    if build is not None and platform not in build.platforms:
        raise CompatError(f"{build.name} {build.version} has no GPU build for {platform} on "
                          "the package index", hint=f"its platforms: {', '.join(build.platforms)}; "
                          f"exclude {{framework_version: \"{build.version}\", platform: {platform}}}")
    gaps = [compat.platform_gap(combo.cuda, platform, "cuda")]
    gaps += [compat.platform_gap(combo.cuda, platform, layer, pin) for layer, pin in pins.items()]
    missing = [g for g in gaps if g]
    if missing:
        raise CompatError(f"no {platform} wheel of {'; '.join(missing)} on the package index",
                          hint=f"exclude {{cuda: \"{combo.cuda}\", platform: {platform}}}, or pick "
                               "cudnn/nccl versions that have one")


def naming(family: Family) -> tuple[str, str]:
    """A family's tag template and repository (spec.py requires both of a named family)."""
    if not family.tag_template or not family.repository:
        raise Inconsistent(f"{family.file}: {family.name} names images without a tag or repository")
    return family.tag_template, family.repository
