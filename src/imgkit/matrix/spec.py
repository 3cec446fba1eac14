"""Read and validate images/*.yaml into frozen values. Every problem of every file is
found in one run, each named by file, line and key (family_model.py is the format).

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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .. import yamlload
from ..errors import Inconsistent, SpecError, SpecErrors, every_problem
from ..selection import OVERLAY_NAME
from .custom import Custom, custom_problems, to_custom
from .extension import (
    Extension,
    extension_problems,
    missing_sources,
    pinned_twice,
    to_extension,
)
from .family_model import KINDS, ExtensionFamily, FrameworkFamily, Named, StackFamily, kind_of
from .fields import AXIS_PATTERNS, CUDA_LIBS, REPOSITORY_PATTERN, known_tf32
from .given_base import base_name
from .problems import Lines, line_of, problems
from .stand_in import stand_in_raw
from .waivers import FILE_NAME as WAIVERS
from .waivers import load_waivers, waivers_path

__all__ = ["AXIS_PATTERNS", "CUDA_LIBS", "REPOSITORY_PATTERN", "Combo", "Family", "Spec",
           "load_spec", "parse_family", "read_matrix"]
AXIS_DEFAULTS = {"os": "bookworm", "cudnn": "none", "nccl": "none", "platform": "linux/amd64"}


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
    custom: Custom = Custom()               # user, entrypoint, labels... of the images it names
    base: str | None = None                 # the team's own base image (`base:`), as written
    pip: tuple[str, ...] = ()               # a framework family's own pinned packages
    checks: str | None = None               # its declared checks' file (CST), as a path
    apt: tuple[str, ...] = ()               # and its Debian packages


@dataclass(frozen=True)
class Spec:
    families: tuple[Family, ...]


@dataclass(frozen=True)
class Broken:
    """A family file with problems: what it seems to declare, for a selection to steer by."""

    file: str
    family: str | None          # its `family:` where that could be read
    repository: str | None
    extends: str | None
    problems: tuple[SpecError, ...]
    # the family it declares with its mistakes left out, where none decides its points
    # (stand_in.py): planned beside the others, so that their problems are said in one run
    stand_in: Family | None = None


@dataclass(frozen=True)
class Matrix:
    """The families that are well formed, and the files that are not."""

    spec: Spec
    broken: tuple[Broken, ...]

    def problems(self) -> list[SpecError]:
        return [p for b in self.broken for p in b.problems]


def _axes(raw: dict[str, Any], model: StackFamily) -> dict[str, list[str]]:
    """The declared axes in the file's order (it orders the product), `platforms:` among them.
    An axis written with no value (`os:`, YAML's null, which the schema allows) is left out."""
    axes = {name: list(values) for name in raw["axes"]
            if (values := getattr(model.axes, name)) is not None}
    if model.platforms is not None:
        axes["platform"] = list(model.platforms)
    return axes


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _stack_problems(file: str, raw: dict[str, Any], kind: str) -> list[SpecError]:
    """What the model alone cannot say of a stack or framework family, read from the file's
    own data so that it is said in the same run as any problem of the file's shape."""
    axes = _mapping(raw.get("axes"))
    framework = raw.get("framework") if kind == "framework" else None
    found = []
    if raw.get("base") is not None and "os" in axes:
        found.append(SpecError(file, "axes.os", "a family with `base:` takes its OS from the base",
                               hint="remove axes.os (or `base:` to build on an OS imgkit makes)"))
    if raw.get("base") is not None and raw.get("max_base_age") is not None:
        found.append(SpecError(file, "max_base_age", "imgkit does not make your `base:`, so it "
                               "cannot make it again", hint="remove max_base_age; a new base is "
                               "a new digest, which rebuilds what stands on it"))
    if raw.get("platforms") is not None and "platform" in axes:
        found.append(SpecError(file, "platforms", "the platforms are given twice",
                               hint="keep either `platforms:` or axes.platform"))
    if kind == "framework" and axes and "framework_version" not in axes:
        found.append(SpecError(file, "axes.framework_version", "required for a framework family"))
    if kind != "framework" and "framework_version" in axes:
        found.append(SpecError(file, "axes.framework_version", "set `framework` to use this axis"))
    if isinstance(framework, str) and raw.get("tf32") is not None and known_tf32(framework):
        found.append(SpecError(file, "tf32", str(known_tf32(framework))))
    points = {key: raw[key] if isinstance(raw.get(key), list) else [] for key in ("exclude", "include")}
    found += [SpecError(file, f"{key}[{i}]", "must name at least one axis")
              for key in points for i, point in enumerate(points[key]) if point == {}]
    names = [a for a in axes if a in AXIS_PATTERNS] + (
        ["platform"] if raw.get("platforms") is not None and "platform" not in axes else [])
    found += [SpecError(file, f"include[{i}]", f"missing {', '.join(missing)}",
                        hint=f"an include names every axis of the family: {', '.join(names)}")
              for i, point in enumerate(points["include"]) if isinstance(point, dict) and point
              if (missing := [a for a in names if point.get(a) is None])]
    return found + _idle_excludes(file, axes, points["exclude"])


def _idle_excludes(file: str, axes: dict[str, Any], excludes: list[Any]) -> list[SpecError]:
    """An exclude point naming a value its axis does not take leaves nothing out: a typo
    (`framework_version: "2.7"` for 2.7.0) or an axis edited since, said rather than kept."""
    found = []
    for i, point in enumerate(excludes):
        for axis, value in (point.items() if isinstance(point, dict) else ()):
            values = axes.get(axis)
            if (isinstance(values, list) and isinstance(value, str)
                    and value not in {str(v) for v in values}):
                found.append(SpecError(
                    file, f"exclude[{i}].{axis}", f"{value!r} is not a value of axes.{axis} "
                    f"({', '.join(map(str, values))}): the point leaves nothing out",
                    hint=f"name one of the axis's values, or remove exclude[{i}]"))
    return found


def _combos(raw: dict[str, Any], model: StackFamily) -> tuple[Combo, ...]:
    """The axes' product, minus `exclude`, plus `include`, each point once; on a family with
    `base:`, the OS axis is the base's name (given_base.py reads what it is)."""
    axes = _axes(raw, model)
    if model.base is not None:
        axes = {"os": [base_name(model.base)], **axes}
    excludes = [p.model_dump(exclude_none=True) for p in model.exclude]
    points = [dict(zip(axes, values)) for values in itertools.product(*axes.values())]
    points = [p for p in points
              if not any(all(p.get(k) == v for k, v in e.items()) for e in excludes)]
    points += [{**p.model_dump(exclude_none=True), **({"os": axes["os"][0]} if model.base else {})}
               for p in model.include]
    return tuple(dict.fromkeys(_combo(p) for p in points))


def _combo(values: dict[str, str]) -> Combo:
    full = {**AXIS_DEFAULTS, **values}
    return Combo(os=full["os"], python=full.get("python"), cuda=full["cuda"],
                 cudnn=full["cudnn"], nccl=full["nccl"],
                 framework_version=full.get("framework_version"), platform=full["platform"])


def _stack_family(file: str, raw: dict[str, Any], model: StackFamily) -> Family:
    named = model if isinstance(model, FrameworkFamily) else None
    return Family(
        name=model.family, file=file, description=model.description,
        repository=named.repository if named else None,
        framework=named.framework if named else None,
        tag_template=named.tag if named else None,
        alias_templates=tuple(dict.fromkeys(named.aliases)) if named else (),
        size_budget=model.size_budget,
        cuda_libs=tuple(model.cuda_libs) if model.cuda_libs is not None else None,
        combos=_combos(raw, model), tf32=named.tf32 if named else None,
        max_base_age=int(model.max_base_age[:-1]) if model.max_base_age else None,
        custom=to_custom(named) if named else Custom(), base=model.base,
        pip=tuple(named.pip) if named else (), apt=tuple(named.apt) if named else (),
        checks=_checks_path(file, named.checks) if named else None)


def _checks_path(file: str, checks: str | None) -> str | None:
    """The declared checks' file, beside the family file."""
    return str(Path(file).parent / checks) if checks else None


def _checks_problems(file: str, checks: str | None) -> list[SpecError]:
    """The family's check file: there, and every problem of it (said at the check file:
    it is validated with the matrix, not first in a GPU job's verify)."""
    path = _checks_path(file, checks)
    if path is None:
        return []
    if not Path(path).is_file():
        return [SpecError(file, "checks", f"{path} is not a file",
                          hint="a container-structure-test YAML file beside the family file")]
    from .checkfile import load_checks
    try:
        load_checks(Path(path))
    except SpecErrors as exc:
        return list(exc.problems)
    except SpecError as exc:
        return [exc]
    return []


def _extension_family(file: str, model: ExtensionFamily) -> Family:
    return Family(name=model.family, file=file, description=model.description,
                  repository=model.repository, framework=None, tag_template=model.tag,
                  alias_templates=tuple(model.aliases), size_budget=model.size_budget,
                  cuda_libs=None, combos=(), extension=to_extension(file, model),
                  custom=to_custom(model), checks=_checks_path(file, model.checks))


def _family(file: str, raw: Any, lines: Lines) -> tuple[Family | None, list[SpecError]]:
    """The family a file declares, or every problem found in it: a key of the wrong type
    does not hide the file's other problems (the rest is checked without that key)."""
    if not isinstance(raw, dict):
        return None, [SpecError(file, "(top)", "a family file must be a YAML mapping",
                                hint="see docs/matrix.md, or start from `imgkit init`")]
    kind = kind_of(raw)
    beyond = _stack_problems(file, raw, kind) if kind != "extension" else []
    try:
        model: Named = KINDS[kind].model_validate(raw)
    except ValidationError as error:
        shape = problems(file, kind, error, lines)
        said = {p.key for p in shape}
        bad = {str(e["loc"][0]) for e in error.errors() if e["loc"]}
        rest = _without_the_shape(file, kind, {k: v for k, v in raw.items() if k not in bad}, bad)
        found = shape + [_placed(p, lines) for p in [*beyond, *rest]
                         if p.key not in said and p.key.split(".")[0].split("[")[0] not in bad]
        if kind == "extension" and "files" in bad:   # a bad destination hides no missing file
            refused = {e["loc"][1] for e in error.errors() if e["loc"][-1:] == ("[key]",)}
            files = raw.get("files")
            found += [_placed(p, lines) for p in missing_sources(file, {
                k: v for k, v in files.items() if k not in refused} if isinstance(files, dict) else {})]
        return None, sorted(dict.fromkeys(found), key=lambda p: p.line or 0)
    family, found = _checked(file, raw, model, beyond)
    return family, [_placed(p, lines) for p in found]


def _without_the_shape(file: str, kind: str, rest: dict[str, Any],
                       taken: set[str]) -> list[SpecError]:
    """The problems beyond the shape of what is left of a file once its keys of the wrong
    shape are taken out: a required key, or one `taken` out, stands in as the schema's own
    example where it has one (so that a `pip:` of the wrong shape is still something the
    family adds), and nothing is said of a stand-in; none when what is left has no shape
    either."""
    fields = KINDS[kind].model_fields
    stand_ins = {name: field.examples[0] for name, field in fields.items()
                 if name not in rest and field.examples and (field.is_required() or name in taken)}
    try:
        model: Named = KINDS[kind].model_validate({**rest, **stand_ins})
    except ValidationError:
        return []
    found = _checked(file, {**rest, **stand_ins}, model, [], build=False)[1]
    return [p for p in found if p.key.split(".")[0].split("[")[0] not in stand_ins]


def _checked(file: str, raw: dict[str, Any], model: Named, beyond: list[SpecError],
             build: bool = True) -> tuple[Family | None, list[SpecError]]:
    """What a well-shaped family file declares (when `build`), or what it asks for that
    cannot be."""
    family: Family | None = None
    if isinstance(model, ExtensionFamily):
        found = (extension_problems(file, model) + custom_problems(file, model)
                 + _checks_problems(file, model.checks))
        family = None if found or not build else _extension_family(file, model)
    elif isinstance(model, StackFamily):
        found = list(beyond)
        if isinstance(model, FrameworkFamily):
            found += (custom_problems(file, model) + pinned_twice(file, model.pip)
                      + _checks_problems(file, model.checks))
        family = None if found or not build else _stack_family(file, raw, model)
        if family is not None and not family.combos:
            found, family = [SpecError(file, "exclude", "excludes every combination")], None
    else:
        raise Inconsistent(f"{file}: a {type(model).__name__} family has no model")
    return family, found


def _placed(problem: SpecError, lines: Lines) -> SpecError:
    """`problem` with the line of its key (one that has its line, say in a check file,
    keeps it)."""
    if problem.line is not None:
        return problem
    loc = tuple(int(p) if p.isdigit() else p
                for p in problem.key.replace("[", ".").replace("]", "").split("."))
    return SpecError(problem.file, problem.key, problem.reason, hint=problem.hint,
                     line=line_of(loc, lines))


def parse_family(file: str, raw: Any, lines: Lines | None = None) -> Family:
    """One family file's family, or its problems (every one) as an error."""
    family, found = _family(file, raw, lines or {})
    if family is None:
        raise every_problem(found)
    return family


def _broken(file: str, raw: Any, found: list[SpecError],
            stand_in: Family | None = None) -> Broken:
    def said(value: Any) -> str | None:
        return value if isinstance(value, str) else None
    top = raw if isinstance(raw, dict) else {}
    extends = top.get("extends")
    return Broken(file=file, family=said(top.get("family")), repository=said(top.get("repository")),
                  extends=said(extends.get("family")) if isinstance(extends, dict) else None,
                  problems=tuple(found), stand_in=stand_in)


def _stand_in(file: str, raw: Any, found: list[SpecError],
              lines: Lines) -> tuple[Family | None, list[SpecError]]:
    """The family `raw` declares with its mistakes left out (stand_in.py), where none is in
    what decides its points, else None; and the mistakes only that showed (those a number
    in an axis hid). Its points are planned beside the others: all said in one run."""
    if not isinstance(raw, dict):
        return None, []
    more: list[SpecError] = []
    for _ in range(3):                  # each round leaves out what the one before found
        # a problem of another file (its check file) is one of the key that names it
        here = [p if p.file == file else SpecError(file, "checks", p.reason)
                for p in [*found, *more]]
        stood = stand_in_raw(raw, here, KINDS[kind_of(raw)].model_fields)
        family, left = _family(file, stood, lines)
        said = {(p.file, p.key, p.reason) for p in [*found, *more]}
        new = [p for p in left if (p.file, p.key, p.reason) not in said]
        if family is not None and not left:
            return family, more
        if not new:
            return None, more
        more += new
    return None, more


def _files(images_dir: Path) -> list[Path]:
    if images_dir.is_file():
        raise SpecError(str(images_dir), "(dir)", "is a family file, not the matrix folder",
                        hint=f"pass its folder: --images {images_dir.parent}")
    if not images_dir.is_dir():
        raise SpecError(str(images_dir), "(dir)", "matrix directory not found",
                        hint="run imgkit inside a project, or pass --images DIR "
                             "(`imgkit init` starts a project)")
    files = [f for f in sorted(images_dir.glob("*.yaml")) + sorted(images_dir.glob("*.yml"))
             if f.name not in (OVERLAY_NAME, WAIVERS)]  # the user's compat data and waivers
    if not files:
        raise SpecError(str(images_dir), "(dir)", "no *.yaml family files",
                        hint="`imgkit init` writes a starter matrix; see docs/your-matrix.md")
    return files


def read_matrix(images_dir: Path) -> Matrix:
    """Every family file of the folder, each well formed or broken (never the first error
    alone: a person fixes them all in one go)."""
    families: list[Family] = []
    broken: list[Broken] = []
    seen: dict[str, str] = {}
    for path in _files(images_dir):
        try:
            raw, lines = yamlload.read_with_lines(path)
        except SpecError as exc:
            broken.append(_broken(str(path), None, [exc]))
            continue
        family, found = _family(str(path), raw, lines)
        # a name is taken by the first file that says it, well formed or not
        name = raw.get("family") if isinstance(raw, dict) else None
        taken = isinstance(name, str) and name in seen
        if isinstance(name, str) and taken:
            found = [*found, SpecError(str(path), "family", f"{name!r} is also declared in "
                                       f"{seen[name]}", line=lines.get(("family",)))]
        elif isinstance(name, str):
            seen[name] = str(path)
        if family is None or found:
            stand_in, more = (None, []) if taken or family else _stand_in(str(path), raw, found,
                                                                         lines)
            broken.append(_broken(str(path), raw, [*found, *more], stand_in))
            continue
        families.append(family)
    broken = _with_unknown_parents(broken, seen)
    try:                                 # the team's waivers, validated with the families
        load_waivers(waivers_path(images_dir))
    except SpecError as exc:
        broken.append(Broken(file=str(waivers_path(images_dir)), family=None, repository=None,
                             extends=None, problems=tuple(getattr(exc, "problems", (exc,)))))
    return Matrix(Spec(tuple(families)), tuple(broken))


def _with_unknown_parents(broken: list[Broken], names: dict[str, str]) -> list[Broken]:
    """A broken extension's parent, when no file declares it, is one more of its problems
    (a well-formed family's is said when the plan is made): all in one run."""
    out = []
    for file in broken:
        if file.extends is not None and file.extends not in names:
            file = replace(file, stand_in=None, problems=(*file.problems, SpecError(
                file.file, "extends.family", f"unknown family {file.extends!r}",
                hint=f"families: {', '.join(sorted(names))}")))
        out.append(file)
    return out


def load_spec(images_dir: Path) -> Spec:
    """The whole matrix, or every problem of every family file as one error."""
    matrix = read_matrix(images_dir)
    if matrix.broken:
        raise every_problem(matrix.problems())
    return matrix.spec
