"""Read and validate images/*.yaml into frozen values. Every error names file and key.

A family file declares axes whose cartesian product (minus `exclude`, plus `include`) is
the family's matrix:

    family: paddle                 # name, unique across files
    repository: paddle             # image repository of the family's final images
    framework: paddle              # optional; needs framework_version on the axes
    tag: "{framework_version}-gpu-cuda{cuda}-cudnn{cudnn_major}"
    axes:
      os: [bookworm]
      cuda: ["11.8"]
      cudnn: ["8.6"]               # series resolved by compat; "default" or "none" allowed
      nccl: [default]
      framework_version: ["2.6.2"]
"""
from __future__ import annotations

import itertools
import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import tf32, yamlload
from ..budget import SIZE_PATTERN, parse_size
from ..errors import SpecError
from ..selection import OVERLAY_NAME
from .extension import DEFAULT_TAG, Extension, parse_extension

# Every value that can reach a Dockerfile is checked against one of these first.
AXIS_PATTERNS: dict[str, re.Pattern[str]] = {
    "os": re.compile(r"^[a-z][a-z0-9]{1,19}$"),
    "python": re.compile(r"^3\.[0-9]{1,2}$"),
    "cuda": re.compile(r"^[0-9]{1,2}\.[0-9]{1,2}$"),
    "cudnn": re.compile(r"^([0-9]{1,2}(\.[0-9]{1,4}){0,3}|default|none)$"),
    "nccl": re.compile(r"^([0-9]{1,2}(\.[0-9]{1,4}){0,3}|default|none)$"),
    "framework_version": re.compile(r"^[0-9]{1,4}(\.[0-9]{1,4}){0,3}$"),
    # the family key `platforms:` fills this axis; one tag names the image of every platform
    "platform": re.compile(r"^linux/(amd64|arm64)$"),
}
AXIS_DEFAULTS = {"os": "bookworm", "cudnn": "none", "nccl": "none", "platform": "linux/amd64"}
REQUIRED_AXES = ("cuda",)
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
REPOSITORY_PATTERN = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*$")
TAG_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
CUDA_LIBS = ("cudart", "nvrtc", "cublas", "cufft", "curand", "cusolver", "cusparse", "nvjitlink")
TAG_FIELDS = ("os", "python", "cuda", "cudnn", "cudnn_major", "nccl", "framework",
              "framework_version", "framework_minor")
EXTENSION_FIELDS = (*TAG_FIELDS, "parent_tag")     # the extended image's own tag
TOP_KEYS = {"family", "description", "repository", "framework", "tag", "aliases", "axes",
            "exclude", "include", "cuda_libs", "size_budget", "extends", "tf32", "platforms",
            "max_base_age"}


@dataclass(frozen=True)
class Combo:
    """One point of a family's matrix, as declared (series, not resolved pins)."""

    os: str
    python: str | None
    cuda: str
    cudnn: str
    nccl: str
    framework_version: str | None
    platform: str = "linux/amd64"


@dataclass(frozen=True)
class Family:
    name: str
    file: str
    description: str
    repository: str | None
    framework: str | None
    tag_template: str | None
    cuda_libs: tuple[str, ...] | None
    combos: tuple[Combo, ...]
    alias_templates: tuple[str, ...] = ()   # registry-only extra tags, e.g. "latest-gpu"
    size_budget: int | None = None          # bytes each of the family's images may weigh
    extension: Extension | None = None      # set: built on another family's images
    tf32: str | None = None                 # "on"/"off": the FP32 math the image claims (label)
    max_base_age: int | None = None         # days: an older base OS image is made again


@dataclass(frozen=True)
class Spec:
    families: tuple[Family, ...]


def _text(file: str, key: str, value: Any, pattern: re.Pattern[str], what: str) -> str:
    """Turn a YAML scalar into a validated string, or refuse with file/key/reason."""
    if isinstance(value, bool) or value is None:
        raise SpecError(file, key, f"expected {what}, got {value!r}")
    if isinstance(value, float):
        raise SpecError(file, key, f"{value!r} was read as a number",
                        hint=f"quote versions so YAML keeps them as text: '{value}'")
    if isinstance(value, int):
        value = str(value)
    if not isinstance(value, str):
        raise SpecError(file, key, f"expected {what}, got a {type(value).__name__}")
    if value.strip() == "":
        raise SpecError(file, key, f"empty value; expected {what}")
    if not pattern.match(value):
        raise SpecError(file, key, f"{value!r} is not a valid {what}",
                        hint=f"allowed pattern: {pattern.pattern}")
    return value


def _axis_values(file: str, axes: Any) -> dict[str, list[str]]:
    if not isinstance(axes, dict) or not axes:
        raise SpecError(file, "axes", "must be a mapping of axis name to a list of values")
    out: dict[str, list[str]] = {}
    for axis, values in axes.items():
        if axis not in AXIS_PATTERNS:
            raise SpecError(file, f"axes.{axis}", "unknown axis",
                            hint=f"known axes: {', '.join(AXIS_PATTERNS)}")
        if not isinstance(values, list) or not values:
            raise SpecError(file, f"axes.{axis}", "must be a non-empty list")
        out[axis] = [_text(file, f"axes.{axis}[{i}]", v, AXIS_PATTERNS[axis], f"{axis} value")
                     for i, v in enumerate(values)]
        if len(set(out[axis])) != len(out[axis]):
            raise SpecError(file, f"axes.{axis}", "lists a value twice")
    return out


def _point(file: str, key: str, raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict) or not raw:
        raise SpecError(file, key, "must be a mapping of axis to value")
    point = {}
    for axis, value in raw.items():
        if axis not in AXIS_PATTERNS:
            raise SpecError(file, f"{key}.{axis}", "unknown axis")
        point[axis] = _text(file, f"{key}.{axis}", value, AXIS_PATTERNS[axis], f"{axis} value")
    return point


def _listed(file: str, key: str, raw: dict[str, Any]) -> list[Any]:
    value = raw.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise SpecError(file, key, f"must be a list of points, got a {type(value).__name__}")
    return value


def _included(file: str, index: int, raw: Any, axes: list[str]) -> dict[str, str]:
    """An `include` point names every axis the family declares: no half-specified image."""
    point = _point(file, f"include[{index}]", raw)
    missing = [axis for axis in axes if axis not in point]
    if missing:
        raise SpecError(file, f"include[{index}]", f"missing {', '.join(missing)}",
                        hint=f"an include names every axis of the family: {', '.join(axes)}")
    return point


def _combo(values: dict[str, str]) -> Combo:
    full = {**AXIS_DEFAULTS, **values}
    return Combo(os=full["os"], python=full.get("python"), cuda=full["cuda"],
                 cudnn=full["cudnn"], nccl=full["nccl"],
                 framework_version=full.get("framework_version"), platform=full["platform"])


def _check_tag_template(file: str, template: str, key: str = "tag",
                        fields: tuple[str, ...] = TAG_FIELDS) -> None:
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise SpecError(file, key, f"{template!r}: {exc}")
    for _, field, spec, conv in parts:
        if field is None:
            continue
        if field not in fields or spec or conv:
            raise SpecError(file, key, f"unknown placeholder {{{field}}}",
                            hint=f"placeholders: {', '.join('{' + f + '}' for f in fields)}")
    literal = "".join(lit for lit, *_ in parts)
    if not re.match(r"^[A-Za-z0-9_.-]*$", literal):
        raise SpecError(file, key, f"{template!r} has characters a docker tag cannot hold")


def _alias_templates(file: str, raw: Any, fields: tuple[str, ...] = TAG_FIELDS) -> tuple[str, ...]:
    """Extra tags a family's images get in registries (published last, by digest)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SpecError(file, "aliases", "must be a list of tag templates")
    out = []
    for i, value in enumerate(raw):
        key = f"aliases[{i}]"
        template = _text(file, key, value, re.compile(r"^[^\n\r]{1,128}$"), "tag template")
        _check_tag_template(file, template, key, fields)
        out.append(template)
    return tuple(out)


def _size_budget(file: str, raw: Any) -> int | None:
    if raw is None:
        return None
    text = _text(file, "size_budget", raw, SIZE_PATTERN, "size such as 7.5GB or 800MB")
    budget = parse_size(text)
    if budget <= 0:
        raise SpecError(file, "size_budget", f"{text!r} leaves no room for any image")
    return budget


AGE_PATTERN = re.compile(r"^[1-9][0-9]{0,3}d$")


def _max_base_age(file: str, raw: Any) -> int | None:
    """`max_base_age: 30d`: a base OS image older than that is made again before building
    (so the chain above it rebuilds on this week's packages)."""
    if raw is None:
        return None
    return int(_text(file, "max_base_age", raw, AGE_PATTERN, "age in days such as 30d")[:-1])


def _extension_family(file: str, raw: dict[str, Any]) -> Family:
    """A family built on another family's images (matrix/extension.py)."""
    extension = parse_extension(file, raw)
    name = _text(file, "family", raw.get("family"), NAME_PATTERN, "family name")
    if raw.get("repository") is None:
        raise SpecError(file, "repository", "an extension family needs the repository of its images")
    repository = _text(file, "repository", raw["repository"], REPOSITORY_PATTERN, "image repository")
    template = _text(file, "tag", raw.get("tag", DEFAULT_TAG), re.compile(r"^[^\n\r]{1,128}$"),
                     "tag template")
    _check_tag_template(file, template, "tag", EXTENSION_FIELDS)
    return Family(name=name, file=file, description=str(raw.get("description") or ""),
                  repository=repository, framework=None, tag_template=template,
                  alias_templates=_alias_templates(file, raw.get("aliases"), EXTENSION_FIELDS),
                  size_budget=_size_budget(file, raw.get("size_budget")), cuda_libs=None,
                  combos=(), extension=extension)


def parse_family(file: str, raw: Any) -> Family:
    if not isinstance(raw, dict):
        raise SpecError(file, "(top)", "a family file must be a YAML mapping")
    if "extends" in raw:
        return _extension_family(file, raw)
    unknown = set(raw) - TOP_KEYS
    if unknown:
        raise SpecError(file, sorted(unknown)[0], "unknown key",
                        hint=f"known keys: {', '.join(sorted(TOP_KEYS))}")
    name = _text(file, "family", raw.get("family"), NAME_PATTERN, "family name")
    repository = None
    if raw.get("repository") is not None:
        repository = _text(file, "repository", raw["repository"], REPOSITORY_PATTERN,
                           "image repository")
    framework = None
    if raw.get("framework") is not None:
        framework = _text(file, "framework", raw["framework"], NAME_PATTERN, "framework name")
    template = None
    if raw.get("tag") is not None:
        template = _text(file, "tag", raw["tag"], re.compile(r"^[^\n\r]{1,128}$"), "tag template")
        _check_tag_template(file, template)
    if framework and not (repository and template):
        raise SpecError(file, "framework", "a framework family needs `repository` and `tag`")
    aliases = _alias_templates(file, raw.get("aliases"))
    if aliases and not framework:
        raise SpecError(file, "aliases", "only a framework family (with `tag`) has aliases")
    cuda_libs = _cuda_libs(file, raw.get("cuda_libs"))
    combos = _combos(file, raw, _family_axes(file, raw, framework))
    return Family(name=name, file=file, description=str(raw.get("description") or ""),
                  repository=repository, framework=framework, tag_template=template,
                  alias_templates=aliases, size_budget=_size_budget(file, raw.get("size_budget")),
                  cuda_libs=cuda_libs, combos=combos, tf32=_tf32(file, raw.get("tf32"), framework),
                  max_base_age=_max_base_age(file, raw.get("max_base_age")))


def _cuda_libs(file: str, libs: Any) -> tuple[str, ...] | None:
    """`cuda_libs: [cudart, cublas]`: the runtime layer's libraries (None: the release's)."""
    if libs is None:
        return None
    if not isinstance(libs, list) or not libs:
        raise SpecError(file, "cuda_libs", "must be a non-empty list")
    for i, lib in enumerate(libs):
        if lib not in CUDA_LIBS:
            raise SpecError(file, f"cuda_libs[{i}]", f"unknown CUDA library {lib!r}",
                            hint=f"known: {', '.join(CUDA_LIBS)}")
    if "cudart" not in libs:
        raise SpecError(file, "cuda_libs", "must include cudart")
    return tuple(libs)


def _family_axes(file: str, raw: dict[str, Any], framework: str | None) -> dict[str, list[str]]:
    """The family's axes, `platforms:` among them, with the ones it must have."""
    axes = _axis_values(file, raw.get("axes"))
    if raw.get("platforms") is not None:
        if "platform" in axes:
            raise SpecError(file, "platforms", "the platforms are given twice",
                            hint="keep either `platforms:` or axes.platform")
        axes["platform"] = _platforms(file, raw["platforms"])
    for axis in REQUIRED_AXES:
        if axis not in axes:
            raise SpecError(file, f"axes.{axis}", "required axis is missing")
    if framework and "framework_version" not in axes:
        raise SpecError(file, "axes.framework_version", "required for a framework family")
    if not framework and "framework_version" in axes:
        raise SpecError(file, "axes.framework_version", "set `framework` to use this axis")
    return axes


def _combos(file: str, raw: dict[str, Any], axes: dict[str, list[str]]) -> tuple[Combo, ...]:
    """The axes' product, minus `exclude`, plus `include`, each point once."""
    excludes = [_point(file, f"exclude[{i}]", e) for i, e in enumerate(_listed(file, "exclude", raw))]
    names = list(axes)
    points = [dict(zip(names, values)) for values in itertools.product(*axes.values())]
    points = [p for p in points
              if not any(all(p.get(k) == v for k, v in e.items()) for e in excludes)]
    points += [_included(file, i, e, names) for i, e in enumerate(_listed(file, "include", raw))]
    combos = tuple(dict.fromkeys(_combo(p) for p in points))
    if not combos:
        raise SpecError(file, "exclude", "excludes every combination")
    return combos


def _platforms(file: str, raw: Any) -> list[str]:
    """`platforms: [linux/amd64, linux/arm64]`: the platforms every image of the family is
    built for (one tag, one index); exclude/include may name `platform:` per point."""
    if not isinstance(raw, list) or not raw:
        raise SpecError(file, "platforms", "must be a non-empty list",
                        hint="e.g. [linux/amd64, linux/arm64]")
    out = [_text(file, f"platforms[{i}]", v, AXIS_PATTERNS["platform"], "platform")
           for i, v in enumerate(raw)]
    if len(set(out)) != len(out):
        raise SpecError(file, "platforms", "lists a platform twice")
    return out


def _tf32(file: str, raw: Any, framework: str | None) -> str | None:
    """`tf32: on|off` (YAML may read them as booleans): the claim the image labels and makes
    true with its framework's own switch."""
    if raw is None:
        return None
    value = {True: "on", False: "off"}.get(raw, raw) if isinstance(raw, bool) else raw
    if value not in ("on", "off"):
        raise SpecError(file, "tf32", f"expected on or off, got {raw!r}")
    if framework is None:
        raise SpecError(file, "tf32", "only a framework family says how its FP32 math runs")
    if framework not in tf32.ENV:
        raise SpecError(file, "tf32", f"imgkit knows how to switch TF32 for "
                        f"{', '.join(sorted(tf32.ENV))}, not {framework!r}")
    return str(value)


def load_spec(images_dir: Path) -> Spec:
    if not images_dir.is_dir():
        raise SpecError(str(images_dir), "(dir)", "matrix directory not found")
    files = [f for f in sorted(images_dir.glob("*.yaml")) + sorted(images_dir.glob("*.yml"))
             if f.name != OVERLAY_NAME]  # the user's compat data, not a family
    if not files:
        raise SpecError(str(images_dir), "(dir)", "no *.yaml family files")
    families: list[Family] = []
    seen: dict[str, str] = {}
    for path in files:
        family = parse_family(str(path), yamlload.read_file(path))
        if family.name in seen:
            raise SpecError(str(path), "family", f"{family.name!r} is also declared in "
                            f"{seen[family.name]}")
        seen[family.name] = str(path)
        families.append(family)
    return Spec(families=tuple(families))
