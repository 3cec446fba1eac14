"""`imgkit publish` and `imgkit promote`: push verified images once and copy them by digest;
promote a staged candidate by digest when its attached verdict passes."""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from .. import labels, platforms
from ..builder.reuse import needed, not_needed
from ..console import stderr_line
from ..engine import Engine, connect
from ..errors import EXIT_FAILED, EXIT_OK, UsageError
from ..interrupts import terminate_interrupts
from ..matrix.load import load_plan
from ..matrix.plan import select
from ..matrix.targets import given_base
from ..options import PublishOptions
from ..registry import published
from ..registry.candidates import lookup
from ..registry.destination import Destination, check_names, parse_destination
from ..registry.reference import problem
from ..render.command import render_selection
from ..selection import Selection
from ..verify.attach import sbom_document
from . import report
from .promote import Promoter, check_tags, parse_source, parse_target
from .provenance import predicate, read_source
from .push import Published, Publisher, Wanted


def publish(selection: Selection, *, tags: list[str], to: list[str], options: PublishOptions,
            json_file: Path | None = None, reuse_from: Destination | None = None,
            needed_by: tuple[str, ...] = ()) -> int:
    """Gate, push once, copy by digest, attach verdicts, move human tags last; returns the
    exit code (1 when anything was refused or failed). `reuse_from` (candidates only): an
    image production holds as this very image is not staged; its production digest is.
    `needed_by`: only what these later images need is staged (what `build` built)."""
    started = time.monotonic()
    if reuse_from is not None and not options.candidate:
        raise UsageError("--reuse-from only says what staging may skip", hint="add --candidate")
    if selection.platforms and not options.candidate:
        raise UsageError("--platform stages one platform's images for a later merge: a "
                         "published tag names the images of every platform",
                         hint="add --candidate, or publish every platform's images together")
    destinations = list(dict.fromkeys(parse_destination(d) for d in to))  # bad --to: exit 2
    if not destinations:
        raise UsageError("say where to publish: --to REGISTRY[/NAMESPACE] (repeatable)")
    wanted = publish_selection(selection, tags)
    if not wanted:
        raise UsageError("nothing to publish: the selection names no image")
    names = [w.index or w.ref for w in wanted]                     # the matrix's tags
    check_names(destinations, names)                               # a namespace twice: exit 2
    engine = connect()                                                         # no engine: exit 3
    engine.refuse_containerd_store("imgkit publish")
    reused: list[Published] = []
    if reuse_from is not None and needed_by:
        keep = needed(engine, reuse_from, selection, tuple(dict.fromkeys(names)), needed_by)
        not_needed([w.ref for w in wanted], keep)
        wanted = [w for w in wanted if w.ref in keep]
        if not wanted:
            return summarized([], started, json_file)
    if reuse_from is not None and not options.dry_run:
        reused, wanted = in_production(engine, reuse_from, wanted)
        if not wanted:
            return summarized(reused, started, json_file)
    with report.PushBars() as bars:
        publisher = Publisher(engine, destinations, options, log=stderr_line,
                              progress=bars.update,
                              describe=lambda ref, image_id: sbom_document(
                                  engine, ref, engine.known(image_id)),
                              provenance=provenance_of(engine, selection, options))
        try:
            with terminate_interrupts():
                results = publisher.run(wanted)
        finally:
            publisher.close()
    return summarized(reused + results, started, json_file)


def in_production(engine: Engine, reuse_from: Destination,
                  wanted: list[Wanted]) -> tuple[list[Published], list[Wanted]]:
    """(the images whose production tag is this very image, or an index of exactly these
    platforms' images, as results naming that digest; the rest, still to stage)."""
    ids: dict[str, dict[str, str]] = {}          # tag -> {platform ("" alone): local id}
    for want in wanted:
        info = engine.image(want.ref)
        if info is not None:
            ids.setdefault(want.index or want.ref, {})[want.platform if want.index else ""] = info.id
    there = published.same_images(engine, reuse_from, ids, stderr_line) if ids else {}
    reused = [Published(image=tag, image_id=c.image_id, destination=c.repository,
                        status="reused", digest=c.digest, platforms=c.platforms,
                        detail=f"{reuse_from} holds this very image: not staged again")
              for tag, c in there.items()]
    return reused, [w for w in wanted if (w.index or w.ref) not in there]


def promote(*, source: str, to: list[str], tags: list[str], options: PublishOptions,
            json_file: Path | None = None, candidates: Path | None = None) -> int:
    """Copy a candidate by digest to every --to repository, if its attached verdict passes.
    With `candidates`, `source` is the matrix's tag of an image an earlier job staged."""
    started = time.monotonic()
    if options.allow_unsigned and options.trust.configured:
        raise UsageError("--allow-unsigned and a trusted key or identity: choose one")
    if candidates is not None:
        source = lookup(candidates, source).reference         # not staged: exit 2
    repository, digest = parse_source(source)                  # a tag, not a digest: exit 2
    targets = list(dict.fromkeys(parse_target(t) for t in to))
    if not targets:
        raise UsageError("say where to promote to: --to HOST/REPOSITORY (repeatable)")
    check_tags(tags)
    promoter = Promoter(connect(), options, log=stderr_line)
    try:
        with terminate_interrupts():
            results = promoter.run(repository, digest, targets, tags)
    finally:
        promoter.close()
    return summarized(results, started, json_file)


def summarized(results: list[Published], started: float, json_file: Path | None) -> int:
    """Report what was published or promoted; the exit code."""
    report.write_published(results, time.monotonic() - started, json_file)
    return EXIT_FAILED if any(r.status in ("refused", "held", "failed", "pushed")
                              for r in results) else EXIT_OK


def provenance_of(engine: Engine, selection: Selection,
                  options: PublishOptions) -> Callable[[str, str], bytes | None] | None:
    """(ref, image id) -> the SLSA provenance of an image this checkout's matrix builds, when
    the image's input hash is what the checkout renders now; None when nothing is signed."""
    if not options.signer.signs or not selection.images.is_dir():
        return None
    plan = load_plan(selection)
    rendered = {c.target.tag: (c.input_hash, c.target.parent, given_base(c.target, plan))
                for c in render_selection(selection, plan)}
    source = read_source(selection.images, selection.templates_dir)

    def made(ref: str, image_id: str) -> bytes | None:
        info = engine.image(image_id)
        if ref not in rendered or info is None:
            return None
        input_hash, parent, base = rendered[ref]
        if info.labels.get(labels.INPUT_HASH) != input_hash:
            stderr_line(f"no provenance for {ref}: it was built from other inputs than "
                        "this checkout's")
            return None
        return predicate(source, ref, image_id, input_hash, parent, base)
    return made


def publish_selection(selection: Selection, tags: list[str]) -> list[Wanted]:
    """The images named (with the aliases the matrix gives them), else the matrix's final
    images in the --cuda/--only selection; an image the matrix makes for several platforms
    as each platform's image, under one index."""
    for tag in tags:
        if "@" in tag:
            raise UsageError(f"{tag!r}: publish takes local images by name:tag; a registry "
                             "digest is promoted", hint=f"imgkit promote {tag} --to HOST/REPOSITORY")
        why = problem(tag)
        if why is not None:
            raise UsageError(f"{tag!r} is not an image reference: {why}")
    if tags and (selection.cuda or selection.only):
        raise UsageError("name images or select them with --cuda/--only, not both")
    if tags and not selection.images.is_dir():    # images built elsewhere: no matrix, no aliases
        return [Wanted(tag) for tag in dict.fromkeys(tags)]
    # with --platform, an image the matrix makes for more platforms is staged alone: the
    # whole selection says its platforms, that platform's slice of it what is staged here
    every_platform = load_plan(replace(selection, platforms=()))
    plan = select(every_platform, on=selection.platforms) if selection.platforms else every_platform
    by_tag = {t.tag: t for t in plan.targets}
    whole = {t.tag: t.platforms for t in every_platform.targets} if selection.platforms else {}
    out = []
    for tag in dict.fromkeys(tags) or plan.finals:
        target = by_tag.get(tag)
        if target is None and tag in whole:
            raise UsageError(f"{tag} is not made for {', '.join(selection.platforms)}",
                             hint=f"its platforms: {', '.join(whole[tag])}")
        aliases, made_for = (target.aliases, target.platforms) if target else ((), ())
        every = whole.get(tag, made_for)
        if not made_for or every == (platforms.host(),):
            out.append(Wanted(tag, aliases))
        else:     # one tag for every platform: each platform's image, then their index
            out += [Wanted(platforms.local_ref(tag, p), aliases, platform=p, index=tag,
                           alone=every != made_for) for p in made_for]
    return out
