"""A Selection of the matrix as a validated Plan: every command that works on the matrix
starts here (bad files, keys or selections are exit 2, naming what is at fault).

A broken family file stops the run, with every problem of every file, unless the selection
(--only) clearly leaves it out: then it is stepped round with a warning naming it."""
from __future__ import annotations

import fnmatch
import re
from dataclasses import replace
from pathlib import Path
from typing import Callable, Mapping

from ..console import print_warning
from ..errors import (
    CompatError,
    EngineUnavailable,
    ImgkitError,
    Inconsistent,
    SpecError,
    UsageError,
    every_problem,
)
from ..project import searched_hint
from ..selection import DEFAULT_IMAGES, Selection
from . import compat
from .compat import OsRelease
from .fields import prefix_hint
from .given_base import BaseFacts, base_name, os_release_of
from .plan import Plan, Settings, make_plan, select
from .problems import line_of
from .spec import REPOSITORY_PATTERN, Broken, Family, Matrix, Spec, read_matrix

SHARED_LAYERS = ("debian", "python", "cuda")   # the repositories of the layers imgkit names


def load_plan(selection: Selection) -> Plan:
    if not REPOSITORY_PATTERN.match(selection.namespace):
        raise UsageError(f"{_namespace_source(selection)}{selection.namespace!r} is not a valid "
                         "repository prefix", hint=prefix_hint(selection.namespace))
    _check_folder(selection)
    matrix = read_matrix(selection.images)
    stepped = steps_round(matrix, selection)
    # a run that stops on the broken files plans their stand-ins too: their points' problems
    # are said with the files' own, in one run
    spec = with_team_labels(without_unselected_bases(usable_spec(matrix, not stepped), selection),
                            selection.labels)
    overlay = selection.compat_overlay
    try:
        data = with_bases(spec, compat.load(str(overlay) if overlay else None),
                          selection.read_bases)
        plan = make_plan(spec, data, Settings(namespace=selection.namespace))
    except SpecError as exc:          # with every problem of the files, all in one run
        planned = [*getattr(exc, "problems", (exc,))]
        found = [*matrix.problems(), *planned] if matrix.broken and not stepped else planned
        raise every_problem(by_file(with_lines(found))) from None
    if matrix.broken and not stepped:
        raise every_problem(with_lines(matrix.problems()))
    _say_stepped_round(matrix)
    plan = select(plan, selection.cuda, selection.only, selection.platforms)
    _say_unprobed(plan, spec)
    return replace(plan, left_out=tuple(b.file for b in matrix.broken))


def _say_unprobed(plan: Plan, spec: Spec) -> None:
    """A warning per framework family in the selection whose framework (a compat overlay's
    own, such as tensorflow) the probe cannot run: its images build, and fail verify."""
    from ..probe.frameworks import ADAPTERS
    named = {t.family for t in plan.targets}
    for family in spec.families:
        if family.framework and family.framework not in ADAPTERS and family.name in named:
            print_warning(f"{family.file}: framework {family.framework}: imgkit's probe proves "
                          f"{', '.join(sorted(ADAPTERS))}; its images build, but verify cannot "
                          f"prove {family.framework} imports and computes on the GPU, and fails them")


def _namespace_source(selection: Selection) -> str:
    """Where the namespace came from, as the user wrote it."""
    import os
    if "namespace" in selection.from_project:
        return f"{selection.project}: namespace = "
    if os.environ.get("IMGKIT_NAMESPACE") == selection.namespace:
        return "IMGKIT_NAMESPACE="
    return "--namespace "


def with_team_labels(spec: Spec, team: tuple[tuple[str, str], ...]) -> Spec:
    """The project's [labels] on every framework and extension family's images, under the
    family's own (which win); the layers imgkit names stay as imgkit makes them."""
    if not team:
        return spec
    out = []
    for family in spec.families:
        if family.framework is not None or family.extension is not None:
            own = dict(family.custom.labels)
            merged = tuple((k, v) for k, v in team if k not in own) + family.custom.labels
            family = replace(family, custom=replace(family.custom, labels=merged))
        out.append(family)
    return Spec(tuple(out))


def without_unselected_bases(spec: Spec, selection: Selection) -> Spec:
    """The spec less the families on a team's own base (and what extends them) that the
    selection clearly leaves out (--cuda they have no image of, --only no repository of
    theirs matches), so their bases are not read: that needs the engine, or what an earlier
    read kept."""
    if not (selection.cuda or selection.only):
        return spec
    out = [f for f in spec.families if f.base is not None and _left_out(f, spec, selection)]
    lost = out + _extending(spec.families, {f.name for f in out})
    return Spec(tuple(f for f in spec.families if f not in lost)) if lost else spec


def _left_out(family: Family, spec: Spec, selection: Selection) -> bool:
    if selection.cuda and not any(c.cuda == selection.cuda for c in family.combos):
        return True
    if not selection.only:
        return False
    above = [family, *_extending(spec.families, {family.name})]
    repositories = [f.repository for f in above if f.repository] + [
        f"{selection.namespace}/{layer}" for layer in SHARED_LAYERS]   # its own python, CUDA...
    return not any(_repository_selected(r, selection) for r in repositories)


def with_bases(spec: Spec, data: compat.Compat,
               read: Callable[[list[str]], Mapping[str, object]] | None = None,
               ) -> compat.Compat:
    """The compat data with each family's own base (`base:`) as an OS release of its own,
    read from the image (`read`: base_image.read_bases); every base that cannot be used is
    said at once, at its `base:`."""
    files: dict[str, list[str]] = {}
    for family in spec.families:
        if family.base is not None:
            files.setdefault(family.base, []).append(family.file)
    if not files:
        return data
    if read is None:     # a caller of the library that gave no reader
        raise every_problem([SpecError(file, "base", "this caller cannot look inside base "
                                       "images", hint="run it through the imgkit command")
                             for ref in files for file in files[ref]])
    found = read(list(files))
    releases: dict[str, OsRelease] = {}
    named: dict[str, str] = {}
    problems: list[SpecError] = []
    for ref, facts in found.items():
        name = base_name(ref)
        try:
            if isinstance(facts, ImgkitError):
                raise facts
            if not isinstance(facts, BaseFacts):
                raise Inconsistent(f"the base reader gave {type(facts).__name__} for {ref}")
            if name in named or name in data.os:
                raise CompatError(f"{ref} and {named.get(name, 'an OS imgkit makes')} would "
                                  f"both name their layers {name}",
                                  hint="use one of them, or tag one base under another name")
            named[name] = ref
            releases[name] = os_release_of(facts, data.os)
        except EngineUnavailable as exc:   # the host's fault, exit 3: said as such
            raise EngineUnavailable(f"{files[ref][0]}: base: {exc.message}", hint=exc.hint) from None
        except ImgkitError as exc:
            problems += [SpecError(file, "base", exc.message, hint=exc.hint) for file in files[ref]]
    if problems:
        raise every_problem(problems)
    return replace(data, os={**data.os, **releases})


def with_lines(problems: list[SpecError]) -> list[SpecError]:
    """Each problem with the line of its key in its file, where the check that found it
    (the plan's, across files) could not say it: `axes (point)` at `axes:`."""
    from .. import yamlload
    lines: dict[str, dict[tuple[str | int, ...], int]] = {}
    out = []
    for problem in problems:
        if problem.line is None and problem.file.endswith((".yaml", ".yml")):
            if problem.file not in lines:
                try:
                    lines[problem.file] = yamlload.read_with_lines(Path(problem.file))[1]
                except (ImgkitError, OSError):
                    lines[problem.file] = {}
            path = tuple(int(part[1:-1]) if part.startswith("[") else part for part in
                         re.findall(r"\[\d+\]|[^.\[\]]+", problem.key.split(" ", 1)[0]))
            line = line_of(path, lines[problem.file])
            problem = SpecError(problem.file, problem.key, problem.reason, hint=problem.hint,
                                line=line)
        out.append(problem)
    return out


def by_file(problems: list[SpecError]) -> list[SpecError]:
    """The problems of each file together, by file name (a file's own problems before its
    points')."""
    return sorted(problems, key=lambda p: p.file)


def _check_folder(selection: Selection) -> None:
    """A missing matrix folder, said with where it was looked for and how to point elsewhere."""
    images = selection.images
    if images.exists():
        return
    if "images" in selection.from_project:
        raise SpecError(str(images), "(dir)", "matrix directory not found",
                        hint=f"{selection.project} says images = {images}: create the folder, "
                             "or change the setting")
    if selection.project is None and images == DEFAULT_IMAGES:
        raise SpecError(str(images), "(dir)", "matrix directory not found", hint=searched_hint())


def _lost(matrix: Matrix, families: tuple[Family, ...] | None = None) -> list[Family]:
    """Of `families` (the well-formed ones), those that extend a broken one with no family
    among them, however deep (a broken file that declares a family name another file
    declares well takes nothing with it)."""
    families = matrix.spec.families if families is None else families
    good = {f.name for f in families}
    return _extending(families, {b.family for b in matrix.broken} - good)


def steps_round(matrix: Matrix, selection: Selection) -> bool:
    """Whether the selection (--only) clearly leaves out every broken file and whatever
    extends them, so that this run may go on without them (none broken: True)."""
    if not matrix.broken:
        return True
    lost = _lost(matrix)
    return bool(selection.only) and not any(_may_select(b, selection) for b in matrix.broken) \
        and not any(_repository_selected(f.repository, selection) for f in lost)


def usable_spec(matrix: Matrix, stand_ins: bool = False) -> Spec:
    """The well-formed families less those that extend a broken one, however deep; with
    `stand_ins`, a broken file's stand-in (spec.Broken) counts as well formed."""
    families = matrix.spec.families
    if stand_ins:
        families += tuple(b.stand_in for b in matrix.broken if b.stand_in is not None)
    lost = _lost(matrix, families)
    return Spec(tuple(f for f in families if f not in lost)) if lost or stand_ins else matrix.spec


def _say_stepped_round(matrix: Matrix) -> None:
    """A warning per broken file (and per family lost with it) this run went on without."""
    for broken in matrix.broken:
        count = len(broken.problems)
        print_warning(f"{broken.file}: {count} problem{'s' if count > 1 else ''}; left out of "
                      f"this run (first: {broken.problems[0].key}: {broken.problems[0].reason})",
                      hint="`imgkit list --only '*'` shows them all")
    for family in _lost(matrix):
        print_warning(f"{family.file}: left out of this run: it extends the broken family "
                      f"{family.extension.parent_family if family.extension else '?'}")


def _extending(families: tuple[Family, ...], broken: set[str | None]) -> list[Family]:
    """The families built on a broken one, however deep."""
    lost: list[Family] = []
    gone = set(broken)
    changed = True
    while changed:
        changed = False
        for family in families:
            if family.extension and family.extension.parent_family in gone and family not in lost:
                lost.append(family)
                gone.add(family.name)
                changed = True
    return lost


def _may_select(broken: Broken, selection: Selection) -> bool:
    """Whether an --only glob could match an image of the broken file (when in doubt, yes)."""
    if broken.extends is None and broken.repository is None and broken.family is not None:
        # a CUDA stack family: its images are the shared layers
        return any(_repository_selected(f"{selection.namespace}/{layer}", selection)
                   for layer in SHARED_LAYERS)
    return _repository_selected(broken.repository, selection)


def _repository_selected(repository: str | None, selection: Selection) -> bool:
    for glob in selection.only:
        if ":" not in glob or repository is None:
            return True          # a glob on the tag alone may match any repository
        if fnmatch.fnmatch(repository, glob.split(":", 1)[0]):
            return True
    return False
