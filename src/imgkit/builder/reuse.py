"""What a build takes rather than makes: images earlier CI jobs staged (`--candidates`),
images production holds built from the same inputs (`--reuse-from`), and, for a pipeline's
job of shared layers, which of its images a later job will need at all (`--needed-by`).

A shared layer (the python roots, a CUDA stack) is never promoted, so production never
holds it; it is needed only while an image built on it must be built. When production
holds every final image above it unchanged, the later jobs take those by digest and
nothing is built on the layer: its job neither builds nor stages it."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from .. import labels, platforms
from ..console import stderr_line
from ..engine import Engine
from ..errors import UsageError
from ..matrix.load import load_plan
from ..matrix.plan import Plan, UnmatchedGlob, matches, split_given
from ..registry import published
from ..registry.candidates import Candidate, Staged, load_staged
from ..registry.destination import Destination
from ..registry.remote import fetch
from ..render.command import render_selection
from ..render.contexts import Context
from ..selection import Selection


@dataclass(frozen=True)
class Given:
    """An image of the selection that is pulled by digest rather than built."""
    candidate: Candidate
    how: str                    # "took" (staged by an earlier job) or "reused" (production's)
    platform: str | None = None  # of a staged index: the platform whose image it is


def staged(found: Staged) -> dict[str, Given]:
    """What earlier jobs staged, by the local name of each image: a staged index gives each
    of its platforms' images (another platform's under TAG-ARCH, as the builder names it),
    as does each platform's image a job of that platform staged alone."""
    out: dict[str, Given] = {}
    for tag, candidate in found.images.items():
        if candidate.platforms:
            out.update({platforms.local_ref(tag, p): Given(candidate, "took", p)
                        for p in candidate.platforms})
        else:
            out.setdefault(tag, Given(candidate, "took"))
    for (tag, platform), candidate in found.per_platform.items():
        out.setdefault(platforms.local_ref(tag, platform), Given(candidate, "took", platform))
    return out


def unchanged_in_production(engine: Engine, reuse_from: Destination, plan: Plan,
                            contexts: list[Context], *,
                            even_here: bool = False) -> dict[str, Given]:
    """The images whose production tag was built from the inputs this checkout renders
    (asked only for those not already up to date here, unless `even_here`); an image of
    several platforms is reused when production's index holds each platform's, every one
    from those inputs."""
    hashes = {c.target.tag: c.input_hash for c in contexts}         # by local name
    wanted: dict[str, str] = {}
    names: dict[str, dict[str, str]] = {}                           # tag -> local name -> platform
    for target in plan.targets:
        mine = {platforms.local_ref(target.tag, p): p for p in target.platforms
                if platforms.local_ref(target.tag, p) in hashes}
        stale = [n for n in mine if even_here or built_from(engine, n) != hashes[n]]
        if stale:
            wanted[target.tag], names[target.tag] = hashes[stale[0]], mine
    found = published.unchanged(engine, reuse_from, wanted, stderr_line) if wanted else {}
    out: dict[str, Given] = {}
    for tag, candidate in found.items():
        if candidate.platforms:                          # an index: each platform's image
            if set(names[tag].values()) <= set(candidate.platforms):
                out.update({name: Given(candidate, "reused", p) for name, p in names[tag].items()})
        elif list(names[tag]) == [tag]:                  # one image, for this host's platform
            out[tag] = Given(candidate, "reused")
    return out


def built_from(engine: Engine, ref: str) -> str | None:
    """The input hash the local image `ref` was built from (None: no such image)."""
    info = engine.image(ref)
    return None if info is None else info.labels.get(labels.INPUT_HASH)


def take_given(engine: Engine, given: dict[str, Given], contexts: list[Context], *,
               dry_run: bool, retry_for: float) -> list[Context]:
    """The images of the selection that are given (staged by earlier jobs, or unchanged in
    production) are pulled by digest and tagged as the matrix names them; returns the
    contexts still to build (on top of them). Nothing below a given image is built."""
    to_build, fetched = split_given(Plan(tuple(c.target for c in contexts)), given.keys())
    for tag in fetched:
        candidate, how, platform = given[tag].candidate, given[tag].how, given[tag].platform
        why = (" (built from the same inputs" + (f", {platform})" if platform else ")")
               if how == "reused" else f" ({platform})" if platform else "")
        if dry_run:
            stderr_line(f"would take {tag} from {candidate.reference}{why}")
            continue
        _, info = fetch(engine, candidate.remote, retry_for=retry_for, platform=platform)
        if candidate.image_id and info.id != candidate.image_id:
            raise UsageError(f"{candidate.reference} holds another image than {tag} was "
                             f"({candidate.image_id})")
        engine.tag(info.id, tag)
        stderr_line(f"{how} {tag} from {candidate.reference}{why}")
    return [c for c in contexts if c.target.tag in to_build]


def only_needed(engine: Engine, selection: Selection, contexts: list[Context],
                reuse_from: Destination | None, needed_by: tuple[str, ...]) -> list[Context]:
    """The contexts of the images the `needed_by` images need (all of them without it)."""
    if not needed_by or reuse_from is None:
        return contexts
    keep = needed(engine, reuse_from, selection, selection.only, needed_by)
    not_needed([c.target.tag for c in contexts], keep)
    return [c for c in contexts if c.target.tag in keep]


def given_images(engine: Engine, plan: Plan, contexts: list[Context],
                 reuse_from: Destination | None, candidates: Path | None,
                 force: bool) -> dict[str, Given]:
    """The images of the selection to take rather than build: production's unchanged ones
    (not with --force) and those earlier jobs staged."""
    given: dict[str, Given] = {}
    if reuse_from is not None and not force:
        given.update(unchanged_in_production(engine, reuse_from, plan, contexts))
    if candidates is not None:                                # a bad file: exit 2
        given.update(staged(load_staged(candidates)))
    return given


def needed(engine: Engine, reuse_from: Destination, selection: Selection,
           wanted: tuple[str, ...], needed_by: tuple[str, ...]) -> set[str]:
    """Of the images `wanted` names (as --only does) and those they stand on, the local
    names of those needed: each that must be built for the images `needed_by` names or for
    a final image of `wanted` (with what it stands on), or taken as production's. An image
    production holds, built from the inputs this checkout renders, needs nothing below it
    (one this engine holds up to date does not count: a later job runs on another runner);
    a final image of `wanted` production holds is taken (its verify job judges it)."""
    try:
        plan = load_plan(replace(selection, only=(*wanted, *needed_by)))
    except UnmatchedGlob as exc:
        unknown = exc.glob
        raise UsageError(f"{'--needed-by ' if unknown in needed_by else ''}{unknown}: no "
                         f"image of the matrix ({selection.images}, namespace "
                         f"{selection.namespace}) is named so",
                         hint="with --needed-by, name images of the matrix, as `imgkit list` "
                              "shows them") from None
    every = tuple(sorted({p for t in plan.targets for p in t.platforms},
                         key=lambda p: (p != platforms.host(), p)))
    contexts = render_selection(selection, plan, platforms=every)
    # production is what every later job's runner shares; what this engine holds is not
    given = unchanged_in_production(engine, reuse_from, plan, contexts, even_here=True)
    roots = {platforms.local_ref(t.tag, p) for t in plan.targets for p in t.platforms
             if any(matches(t, g) for g in needed_by)
             or (t.tag in plan.finals and any(matches(t, g) for g in wanted))}
    to_build, taken = split_given(Plan(tuple(c.target for c in contexts)), given.keys(), roots)
    return {*to_build, *taken}


def not_needed(names: list[str], keep: set[str]) -> None:
    """Say which selected images are left out."""
    for name in names:
        if name not in keep:
            stderr_line(f"not needed: {name} (nothing that must be built stands on it)")
