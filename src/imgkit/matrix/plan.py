"""Expand the spec into a DAG of build targets: every point's chain of layers (chain.py),
shared parents once, extensions on the images they extend, tags and aliases checked; and
select a slice of it (--cuda, --only, --platform)."""
from __future__ import annotations

from dataclasses import replace
from typing import Collection, Sequence

from ..budget import Budget
from ..errors import CompatError, CompatErrors, Inconsistent, SpecError, SpecErrors, every_problem
from ..registry.reference import problem
from .chain import chain as point_chain
from .chain import naming
from .compat import Compat, version_key
from .custom import VENV
from .extension import Extension, canonical, pins_of
from .leave_out import exclude_entries, written
from .spec import Combo, Family, Spec
from .targets import (
    CUDA_WHEEL,
    LAYERS,
    LIB_LINKS,
    Plan,
    Settings,
    Target,
    base_ref,
    lineage,
    matches,
    tag_fields,
)
from .unmatched import cuda_hint, unmatched_hint

# What the rest of imgkit names through this module (the plan's own types live in targets.py)
__all__ = ["LIB_LINKS", "VENV", "Plan", "Settings", "Target", "base_ref", "lineage", "make_plan",
           "select", "split_given"]


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


def _narrowed_to(target: Target, narrow: tuple[tuple[str, tuple[str, ...]], ...]) -> bool:
    """Whether the extended image has every narrowing value (a series matches its pins:
    cudnn "8" matches 8.6.0.163)."""
    have = {**target.component_map, "os": target.os, "python": target.python,
            "cuda": target.cuda or ""}
    return all(any(have.get(axis) == v or str(have.get(axis, "")).startswith(v + ".")
                   for v in values) for axis, values in narrow)


def _pinned_below(target: Target, by_tag: dict[str, Target]) -> dict[str, str]:
    """Every package the image's layers pinned: normalised name -> version."""
    out: dict[str, str] = {}
    for at in lineage(target, by_tag):
        for requirement in at.packages:
            name, _, version = requirement.partition("==")
            out.setdefault(canonical(name.split("[")[0]), version)
    return out


def _wheel_majors(compat: Compat) -> dict[str, str]:
    """Every NVIDIA wheel the compat data names -> its CUDA major (the unsuffixed names of
    CUDA 13 on have no -cuXX to tell it)."""
    found: dict[str, str] = {}
    for cuda, release in compat.cuda.items():
        for component in [c for c, _ in release.components] + ["cudnn", "nccl"]:
            found.setdefault(canonical(compat.package(component, cuda)), cuda.split(".")[0])
    return found


def _check_pins(family: Family, pins: dict[str, str], parent: Target, by_tag: dict[str, Target],
                compat: Compat) -> None:
    """What a family's own pins alone say would break the parent's stack: a CUDA wheel of
    another CUDA major (a second copy of that library), or another version of a package it
    pinned (the framework too). The verifier catches what only the build shows (two copies
    on the loader path)."""
    below = _pinned_below(parent, by_tag)
    major = (parent.cuda or "").split(".")[0]
    majors = _wheel_majors(compat)
    for i, (name, version) in enumerate(pins.items()):
        wheel = CUDA_WHEEL.match(name)
        of = wheel.group(1) if wheel else majors.get(name)
        if of is not None and of != major:
            raise SpecError(family.file, f"pip[{i}]", f"{name} is a CUDA {of} wheel: "
                            f"on {parent.tag} (CUDA {parent.cuda}) it would be a second copy of "
                            "that library", hint=f"use CUDA {major}'s wheel of it, or extend an "
                            f"image of CUDA {of}")
        if name in below and below[name] != version:
            raise SpecError(family.file, f"pip[{i}]", f"{name}=={version} would replace "
                            f"{name}=={below[name]}, which {parent.tag} pins")


def _extended(family: Family, parent: Target, by_tag: dict[str, Target], compat: Compat) -> Target:
    """The extension's image on `parent`."""
    extension = _extension_of(family)
    tag_template, repository = naming(family)
    _check_pins(family, extension.pins(), parent, by_tag, compat)
    fields = {**tag_fields(parent), "parent_tag": parent.tag.rsplit(":", 1)[1]}
    try:
        tag = tag_template.format(**fields)
        aliases = tuple(dict.fromkeys(a.format(**fields) for a in family.alias_templates))
    except KeyError as exc:
        raise SpecError(family.file, "tag", f"{{{exc.args[0]}}} has no value for {parent.tag}",
                        hint="that image's stack has no such component; use {parent_tag}")
    pins = tuple((f"pip.{name}", version) for name, version in extension.pins().items())
    return Target(tag=f"{repository}:{tag}", layer="extension", family=family.name,
                  parent=parent.tag, base=None, os=parent.os, python=parent.python,
                  cuda=parent.cuda, components=parent.components + (("extension", family.name),)
                  + pins, packages=extension.pip, framework=parent.framework, aliases=aliases,
                  extension=extension, platforms=parent.platforms, custom=family.custom,
                  checks=family.checks,
                  user=family.custom.user.name if family.custom.user else parent.user)


def _extensions(spec: Spec, by_tag: dict[str, Target], named: dict[str, list[str]],
                compat: Compat, found: list[SpecError], partial: set[str]) -> None:
    """Plan every extension family on the images of the family it extends (extensions of
    extensions too, in order); `named`: family -> the images it asks for by name. Every
    problem goes to `found`; a family with one names no image (what extends it is left
    unplanned, not refused again). A narrowing to none of the possible points of a family
    in `partial` (whose impossible points are said) is not refused again."""
    pending = [f for f in spec.families if f.extension is not None]
    known = {f.name for f in spec.families}
    while pending:
        ready = [f for f in pending if f.extension and f.extension.parent_family in named]
        if not ready:
            found += _stuck(pending, known)
            return
        for family in ready:
            pending.remove(family)
            named[family.name] = []
            try:
                named[family.name] = _extended_images(family, by_tag, named, compat)
            except SpecError as exc:
                if not (exc.key == "extends" and _extension_of(family).parent_family in partial):
                    found.append(exc)
                named.pop(family.name)


def _stuck(pending: list[Family], known: set[str]) -> list[SpecError]:
    """Why the extensions left unplanned wait: an unknown parent, or a ring of families that
    extend each other. One whose parent failed (said already), or that leads into a ring
    without being on it, is not refused again."""
    parent = {f.name: _extension_of(f).parent_family for f in pending}
    found = []
    for family in pending:
        wanted = parent[family.name]
        if wanted not in known:
            found.append(SpecError(family.file, "extends.family", f"unknown family {wanted!r}",
                                   hint=f"families: {', '.join(sorted(known))}"))
        elif ring := _ring(family.name, parent):
            said = (f"{family.name} extends itself" if wanted == family.name else
                    f"{family.name} and {wanted} extend each other "
                    f"({' → '.join([*ring, family.name])})")
            found.append(SpecError(family.file, "extends.family", said))
    return found


def _ring(start: str, parent: dict[str, str]) -> list[str]:
    """The families from `start` round to it again by `extends:` (empty when `start` is on
    no ring, only leads into one or to a family that is planned or failed)."""
    path = [start]
    while parent.get(path[-1]) in parent and parent[path[-1]] not in path:
        path.append(parent[path[-1]])
    return path if parent.get(path[-1]) == start else []


def _extended_images(family: Family, by_tag: dict[str, Target], named: dict[str, list[str]],
                     compat: Compat) -> list[str]:
    """An extension family's images, one on each image of its parent's it narrows to."""
    # once per image: a family names an image once per platform point
    parents = [by_tag[t] for t in dict.fromkeys(named[_extension_of(family).parent_family])
               if _narrowed_to(by_tag[t], _extension_of(family).narrow)]
    if not parents:
        raise SpecError(family.file, "extends", f"narrows {_extension_of(family).parent_family}"
                        " to no image")
    tags = []
    for parent in parents:
        target = _extended(family, parent, by_tag, compat)
        _check_reference(family, target)
        if target.tag in by_tag:
            raise SpecError(family.file, "tag", f"{target.tag} is also made by family "
                            f"{by_tag[target.tag].family}: one tag names one image of one family",
                            hint="give one of them another repository or tag")
        by_tag[target.tag] = target
        tags.append(target.tag)
    return tags


def _set_budget(by_tag: dict[str, Target], tag: str, budget: Budget) -> None:
    """A family's budget binds the images it asks for by name; the tightest one wins."""
    known = by_tag[tag].budget
    if known is None or budget.size < known.size:
        by_tag[tag] = replace(by_tag[tag], budget=budget)


def make_plan(spec: Spec, compat: Compat, settings: Settings = Settings()) -> Plan:
    """The plan of every family, or every problem of every family at once (each said at
    its file and key)."""
    by_tag: dict[str, Target] = {}
    named: dict[str, list[str]] = {}           # family -> the images it asks for by name
    found: list[SpecError] = []
    partial: set[str] = set()                  # families with impossible points (said)
    for family in spec.families:
        if family.extension is not None:
            continue
        try:     # its possible points are named even beside impossible ones: what
            # extends the family is planned on them, and its own problems said in this run
            tags, impossible = _family_images(family, compat, settings, by_tag)
            found += impossible
            if impossible:
                partial.add(family.name)
            if tags or not impossible:      # none possible: what extends it waits (_stuck)
                named[family.name] = tags
        except SpecError as exc:
            found += exc.problems if isinstance(exc, SpecErrors) else (exc,)
    _extensions(spec, by_tag, named, compat, found, partial)
    found += _one_family_per_image(spec, named)
    finals: list[str] = []
    claimed: dict[str, tuple[str, str]] = {}   # repository:alias -> (image, file)
    for family in spec.families:
        for tag in dict.fromkeys(named.get(family.name, ())):
            finals.append(tag)
            try:
                _claim_aliases(family, by_tag[tag], claimed)
            except SpecError as exc:
                found.append(exc)
            if family.size_budget is not None:
                _set_budget(by_tag, tag, Budget(family.size_budget, family.file))
    try:
        _check_alias_owners(claimed, by_tag)
    except SpecError as exc:
        found.append(exc)
    if found:
        raise every_problem(list(dict.fromkeys(found)))
    order = {layer: i for i, layer in enumerate(LAYERS)}
    targets = sorted(by_tag.values(), key=lambda t: (order[t.layer], _depth(t, by_tag), t.tag))
    return Plan(targets=tuple(targets), finals=tuple(dict.fromkeys(finals)))


def _family_images(family: Family, compat: Compat, settings: Settings,
                   by_tag: dict[str, Target]) -> tuple[list[str], list[SpecError]]:
    """A stack or framework family's points, each a chain of layers into `by_tag` (the same
    shared layer once): the images it names, and every impossible point (each of its
    problems, the same words once) with the `exclude:` entry that would leave it out."""
    tags = []
    problems: dict[tuple[str, str], tuple[CompatError, list[Combo]]] = {}
    for combo in family.combos:
        try:
            chain = point_chain(family, combo, compat, settings)
        except CompatError as exc:
            for said in exc.problems if isinstance(exc, CompatErrors) else (exc,):
                problems.setdefault((said.message, said.hint), (said, []))[1].append(combo)
            continue
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
            else:       # the same image, maybe for one more platform or a stricter age
                ages = [a for a in (known.max_base_age, target.max_base_age) if a is not None]
                by_tag[target.tag] = replace(known, platforms=tuple(sorted(
                    {*known.platforms, *target.platforms})), max_base_age=min(ages, default=None))
        if family.pip:      # a framework family's own packages, on what its stack pinned
            _check_pins(family, pins_of(family.pip), chain[-1], by_tag, compat)
        tags.append(chain[-1].tag)
    impossible = {combo for _, combos in problems.values() for combo in combos}
    return tags, [_impossible(family, combos, said, impossible)
                  for said, combos in problems.values()]


def _impossible(family: Family, combos: list[Combo], said: CompatError,
                impossible: set[Combo]) -> SpecError:
    """Points the compat data refuses for one reason, said at the family's axes (the first,
    and how many more); where the family has other points, with the `exclude:` entries that
    leave out these and nothing that could be built."""
    point = ", ".join(f"{k}={v}" for k, v in vars(combos[0]).items() if v is not None)
    more = f"; {len(combos) - 1} more point{'s' if len(combos) > 2 else ''} like it" \
        if len(combos) > 1 else ""
    entries = exclude_entries(combos, impossible, family.combos)
    which = "the point" if len(combos) == 1 else "them"
    hint = "; ".join(filter(None, [said.hint, f"or leave {which} out: exclude: {written(entries)}"
                                   if entries else ""]))
    return SpecError(family.file, f"axes ({point}{more})", said.message, hint=hint)


def _one_family_per_image(spec: Spec, named: dict[str, list[str]]) -> list[SpecError]:
    """An image two families name (the same image or not) would carry one family's checks,
    user and labels: refused at the second, naming the first. Shared layers below named
    images are anyone's."""
    owner: dict[str, Family] = {}
    found = []
    for family in spec.families:
        for tag in dict.fromkeys(named.get(family.name, ())):
            first = owner.setdefault(tag, family)
            if first is not family:
                found.append(SpecError(family.file, "tag", f"{tag} is also named by family "
                                       f"{first.name} ({first.file}): one tag names one image "
                                       "of one family", hint="give one of them another "
                                       "repository, tag or axes"))
    return found


def _depth(target: Target, by_tag: dict[str, Target]) -> int:
    """How many images lie below it (an extension of an extension comes after its parent)."""
    return sum(1 for _ in lineage(target, by_tag)) - 1


class UnmatchedGlob(CompatError):
    """An --only glob that names no image of the selection (`glob`: which one)."""

    def __init__(self, glob: str, cuda: str | None, hint: str = "") -> None:
        super().__init__(f"nothing in the matrix matches --only {glob!r}"
                         + (f" with CUDA {cuda}" if cuda else ""), hint=hint)
        self.glob = glob


def select(plan: Plan, cuda: str | None = None, only: Sequence[str] = (),
           on: Sequence[str] = ()) -> Plan:
    """The slice asked for (every --only glob, joined), with every ancestor it needs
    (ancestors may turn out up to date); with `on`, only those platforms' images (a CI job
    on a runner of one platform)."""
    if cuda is not None and not any(t.cuda == cuda for t in plan.targets):
        known = sorted({t.cuda for t in plan.targets if t.cuda}, key=version_key)
        raise CompatError(f"no image in the matrix has CUDA {cuda!r}",
                          hint=cuda_hint(cuda, known))
    in_cuda = _with_ancestors(plan, [t for t in plan.targets if cuda is None or t.cuda == cuda])
    for glob in only:
        if not any(matches(t, glob) for t in in_cuda):
            raise UnmatchedGlob(glob, cuda, unmatched_hint(plan.targets, plan.finals, glob, cuda))
    wanted = [t for t in in_cuda if not only or any(matches(t, glob) for glob in only)]
    # a shared layer is made for the platforms the slice's images on it need, no more
    by_tag = {t.tag: t for t in plan.targets}
    needed: dict[str, set[str]] = {}
    for target in wanted:
        if only or cuda is None or target.cuda == cuda:     # asked for, not only below one
            for below in lineage(target, by_tag):
                needed.setdefault(below.tag, set()).update(target.platforms)
    if on:
        needed = {tag: made & set(on) for tag, made in needed.items() if made & set(on)}
        if not needed:
            raise CompatError(f"the selection makes no image for {', '.join(on)}",
                              hint="its platforms: " + ", ".join(sorted(
                                  {p for t in wanted for p in t.platforms})))
    # --only names what is shipped: a family's image it stands on is built, not a final
    asked = {t.tag for t in wanted} if only else set(needed)
    return Plan(targets=tuple(replace(t, platforms=tuple(sorted(needed[t.tag])))
                              for t in plan.targets if t.tag in needed),
                finals=tuple(f for f in plan.finals if f in needed and f in asked),
                named=tuple(t.tag for t in wanted if t.tag in needed))


def _with_ancestors(plan: Plan, targets: Sequence[Target]) -> list[Target]:
    """`targets` and every image below them (a CUDA slice stands on shared python layers,
    which carry no CUDA release of their own), in the plan's order."""
    by_tag = {t.tag: t for t in plan.targets}
    keep = {below.tag for target in targets for below in lineage(target, by_tag)}
    return [t for t in plan.targets if t.tag in keep]


def split_given(plan: Plan, given: Collection[str],
                roots: Collection[str] | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """With some images given (staged by an earlier CI job, pulled by digest, never rebuilt):
    (what to build, which given images that stands on). A given image needs nothing below
    it, so ancestors reached only through given images are neither built nor fetched.
    `roots`: the images wanted (default: the slice's leaves)."""
    parents = {t.parent for t in plan.targets}
    needed = set(roots) if roots is not None else \
        {t.tag for t in plan.targets if t.tag not in parents}
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


def _extension_of(family: Family) -> Extension:
    """An extension family's `extends:` (spec.py gives every extension family one)."""
    if family.extension is None:
        raise Inconsistent(f"{family.file}: {family.name} is planned as an extension without one")
    return family.extension


