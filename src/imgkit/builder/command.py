"""`imgkit build` and `imgkit size`: validate, render, build what is out of date (parents
first, in parallel, up-to-date images skipped), report; what an image weighs."""
from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Collection

from .. import labels, platforms
from ..console import console, stderr_line
from ..engine import Engine, connect
from ..errors import EXIT_FAILED, EXIT_OK, HostError, Inconsistent
from ..matrix.compat import OsRelease
from ..matrix.load import load_plan
from ..matrix.plan import Plan
from ..options import PUBLISH_DEFAULTS, BuildOptions
from ..outputs import write_output
from ..project import setting_or
from ..registry.destination import Destination
from ..render.command import render_selection
from ..render.contexts import Context
from ..render.stamp import Stamp
from ..selection import Selection
from . import report
from .base import base_settings, ensure_base
from .buildenv import BuildEnv, SecretServer, build_env
from .buildx import BakeBuilder, refuse_podman, slow_secret_steps_note, why_not_buildkit
from .freshness import builds_something, check_freshness
from .hostlock import one_build_at_a_time
from .noop import base_days, plan_inputs, remember, summarize
from .noopcache import fingerprint
from .outcome import Result
from .progress import BuildProgress
from .reuse import given_images, only_needed, take_given
from .scheduler import Builder, Listener
from .weights import heaviest, layers, overruns


def build(selection: Selection, *, options: BuildOptions, verbose: bool = False,
          ca_bundle: str | None = None, index_url: str | None = None, base_source: str = "auto",
          mirrors: list[str] | None = None, json_file: Path | None = None,
          candidates: Path | None = None, retry_for: float = PUBLISH_DEFAULTS.retry_for,
          reuse_from: Destination | None = None, needed_by: tuple[str, ...] = (),
          noop_name: str | None = None) -> int:
    """Validate, render, then build; returns the exit code (1 if any image failed).
    `candidates`: images staged by earlier CI jobs are pulled by digest, never rebuilt.
    `reuse_from`: images production holds built from the same inputs are pulled, not built.
    `needed_by`: (with `reuse_from`) the selected images are built only as far as these
    later images need them (a pipeline's job of shared layers).
    `noop_name`: the no-op cache's entry for this command line (a plain `imgkit build` with
    selection options only), written when the build ends with everything up to date."""
    started = time.monotonic()
    env = build_env(ca_bundle, index_url, setting_or(None, "extra_index_url"))   # bad CA: exit 2
    mirror_map = base_settings(mirrors or [], base_source)    # bad --mirror or source: exit 2
    inputs = plan_inputs(selection) if noop_name is not None else None
    key = fingerprint(inputs) if inputs is not None else ""   # before anything is read
    plan = load_plan(selection)                               # bad matrix: exit 2
    wanted = platforms_to_build(plan)                         # no emulation: exit 3
    # BuildKit takes the trust settings as secret mounts: auto renders its form first
    contexts = render_selection(selection, plan, buildkit=options.engine != "docker",
                                platforms=wanted)             # stale lock: exit 2
    engine = connect(chosen=options.engine)                   # unreachable: exit 3
    options, legacy_why = chosen_engine(engine, options)      # auto: BuildKit where it can
    if legacy_why:
        contexts = render_selection(selection, plan, platforms=wanted)   # the legacy form
    if not options.force:      # what production holds unchanged, and what it needs no more
        contexts = only_needed(engine, selection, contexts, reuse_from, needed_by)
    given = given_images(engine, plan, contexts, reuse_from, candidates, options.force)
    if given:
        contexts = take_given(engine, given, contexts, dry_run=options.dry_run,
                              retry_for=retry_for)
    replaced: list[str] = []
    if not options.dry_run:
        replaced = make_bases(engine, contexts, base_source, mirror_map, options.refresh_base)
    forced = plan.named if options.keep_parents else None     # --force: which lose the cache
    with BuildProgress(verbose) as listen:   # in a terminal, each image's step as it runs
        results = (run_bake(engine, contexts, env, options, listen, forced)
                   if options.engine == "buildx"
                   else run_builds(engine, contexts, env, options, listen, forced, legacy_why))
    for old_base in replaced:          # its chain was rebuilt: nothing stands on it now
        engine.remove_if_unused(old_base)
    code = reported(engine, results, contexts, started, json_file, options.engine)
    if inputs is not None and noop_name is not None and code == EXIT_OK \
            and _answerable(plan, contexts):
        remember(engine, noop_name, inputs, key,
                 str(env.ca_bundle) if env.ca_bundle is not None else None,
                 [c.stamp for c in contexts], base_ages(contexts))
    return code


def reported(engine: Engine, results: list[Result], contexts: list[Context], started: float,
             json_file: Path | None, builder: str) -> int:
    """The summary, each failure's story and the size budgets; the exit code they mean."""
    done = {r.tag for r in results}
    stamps = [c.stamp for c in contexts if c.target.tag in done]
    results = summarize(engine, results, stamps, started, json_file, builder)
    for result in results:
        if result.error is not None:
            report.print_build_failure(result.error)
    over = over_budget(engine, results, stamps)
    return EXIT_FAILED if over or any(r.status in ("failed", "skipped", "cancelled")
                                      for r in results) else EXIT_OK


def chosen_engine(engine: Engine, options: BuildOptions) -> tuple[BuildOptions, str]:
    """`--engine auto`: Podman's own builder on Podman; else BuildKit (one `docker buildx
    bake`) where it can build the plan here, else the engine's legacy builder and why (""
    when none was chosen for it)."""
    on_podman = engine.product() == "podman"
    if options.engine == "docker" and on_podman:
        raise HostError("--engine docker drives Docker's legacy builder, and this engine is "
                        "Podman", hint="leave --engine out, or say --engine podman: Podman's "
                        "own builder builds imgkit's contexts")
    if options.engine == "auto" and on_podman:
        return replace(options, engine="podman"), ""
    if options.engine == "buildx":
        refuse_podman(engine, "--engine buildx", "leave --engine out: on Podman, imgkit build "
                      "uses Podman's own builder (docs/runtimes.md)")
    if options.engine != "auto":
        return options, ""
    why = why_not_buildkit(engine, options.builder)
    if why is None:
        return replace(options, engine="buildx"), ""
    if options.builder is not None:
        raise HostError(f"--builder {options.builder}: BuildKit cannot build here: {why}")
    return replace(options, engine="docker"), why


def platforms_to_build(plan: Plan) -> tuple[str, ...]:
    """Every platform the plan's images are for, the host's first; each other one must run
    here (QEMU's handler), which is checked before anything is built."""
    host = platforms.host()
    wanted = sorted({p for t in plan.targets for p in t.platforms}, key=lambda p: (p != host, p))
    for platform in wanted:
        if not platforms.can_run(platform):
            needing = next(t.tag for t in plan.targets if platform in t.platforms)
            raise HostError(f"{needing} is planned for {platform}, and this {host} host cannot "
                            f"run {platform} programs to build it", hint=platforms.EMULATION_HINT)
    return tuple(wanted)


def _answerable(plan: Plan, contexts: list[Context]) -> bool:
    """Whether a later no-op may answer from what this build judged: not where a team's own
    base may be pulled anew (its tag naming another digest), or a file was left out."""
    return not plan.left_out and not any(
        c.target.os_release and c.target.os_release.given for c in contexts)


def base_ages(contexts: list[Context]) -> dict[str, int]:
    """Each base a family's max_base_age holds to an age: the youngest limit of those that
    stand on it (what make_bases holds it to)."""
    ages: dict[str, int] = {}
    for c in contexts:
        if c.target.base is not None and c.target.max_base_age is not None:
            ages[c.target.base] = min(ages.get(c.target.base, 1 << 30), c.target.max_base_age)
    return ages


def make_bases(engine: Engine, contexts: list[Context], source: str,
               mirrors: dict[str, str], refresh: bool = False) -> list[str]:
    """The base OS image under each root layer, once each: pulled, or made from the mirror;
    made again when `refresh` or older than its families' `max_base_age`. Returns the ids
    of the bases made again (removed once nothing stands on them)."""
    bases: dict[str, OsRelease] = {}
    wants: dict[str, str] = {}
    ages = base_ages(contexts)
    for context in contexts:
        if context.target.base is None:
            continue
        if context.target.os_release is None:
            raise Inconsistent(f"{context.target.tag}: the plan gives its base no OS release")
        bases[context.target.base] = context.target.os_release
        if len(context.target.platforms) == 1:   # an image of one platform (render's on_platform)
            wants[context.target.base] = context.target.platforms[0]
    err = console(stderr=True)
    replaced = []
    for ref in sorted(bases):
        if bases[ref].given:   # a team's own base, by digest: a new one is a new digest
            ensure_base(engine, ref, bases[ref], log=lambda m: err.print(f"[dim]base:[/] {m}"))
            continue
        old = engine.image(ref)
        days = base_days(engine, ref) if old is not None else None
        why = ("--refresh-base" if refresh else
               f"{days} days old, max_base_age is {ages[ref]} days"
               if ref in ages and days is not None and days > ages[ref] else "")
        if old is not None and why:
            err.print(f"[dim]base:[/] making {ref} again ({why})")
            engine.untag(ref)
            replaced.append(old.id)
        ensure_base(engine, ref, bases[ref], source=source, mirrors=mirrors,
                    log=lambda m: err.print(f"[dim]base:[/] {m}"), platform=wants.get(ref))
    return replaced


def run_builds(engine: Engine, contexts: list[Context], env: BuildEnv, options: BuildOptions,
               listen: Listener, forced: Collection[str] | None = None,
               legacy_why: str = "") -> list[Result]:
    """Every context through the scheduler: the legacy builder with the build-settings
    server up while something is really built (and, when auto chose it, why), Podman's
    builder with the settings as secret mounts."""
    freshness = check_freshness(engine, [c.stamp for c in contexts])
    builds = builds_something(options, freshness)
    podman = options.engine == "podman"       # its builder takes the settings as secrets
    serves = builds and not podman
    with (one_build_at_a_time(stderr_line) if builds else nullcontext()), \
            SecretServer(env if serves else BuildEnv(),
                         engine.bridge_gateway() if serves else "") as server:
        if builds and legacy_why:
            stderr_line(f"the engine's legacy builder builds: {legacy_why} (BuildKit builds "
                        "the bundled slice in 0.6 to 0.8x the time: docs/building.md)")
        if builds:  # holding the host's build lock, no other imgkit build runs beside this one
            stale = engine.remove_stale_build_steps([c.target.tag for c in contexts])
            if stale:
                stderr_line(f"removed {stale} stopped build step container(s) an "
                            "interrupted build left")
        return Builder(engine, options, server.extra_hosts, listen, forced,
                       env.secret_mounts() if podman else None).run(contexts, freshness)


def run_bake(engine: Engine, contexts: list[Context], env: BuildEnv, options: BuildOptions,
             listen: Listener, forced: Collection[str] | None = None) -> list[Result]:
    """Every context through one `docker buildx bake` (BuildKit runs builds side by side
    itself: no host lock and no settings server)."""
    freshness = check_freshness(engine, [c.stamp for c in contexts])
    builder = BakeBuilder(engine, options, env, listen, forced)
    if builds_something(options, freshness) and builder.driver == "docker":  # the engine's own BuildKit
        note = slow_secret_steps_note(engine.server_version())
        if note:
            stderr_line(f"note: {note}")
    return builder.run(contexts, freshness)


def over_budget(engine: Engine, results: list[Result], stamps: list[Stamp]) -> bool:
    """Report every image heavier than its family allows, with the layers that weigh most."""
    by_tag = {s.tag: s for s in stamps}
    over = overruns(results, stamps)
    for overrun in over:
        stamp = by_tag[overrun.tag]
        report.print_overrun(overrun, heaviest(layers(engine, overrun.tag,
                                                      stamp.parent or stamp.base), 3))
    return bool(over)


def size(*, image: str, top: int, json_file: Path | None = None) -> None:
    """What an image weighs, what its own layers add to its parent, and its heaviest steps."""
    engine = connect()                                        # unreachable: exit 3
    info = engine.known(image)            # not here: exit 2, with the tags its repository has
    named = info.labels.get(labels.BASE_NAME)
    below = engine.image(named) if named else None
    parent, parent_size = (named, below.size) if below else (None, 0)   # only when it is here
    steps = layers(engine, image, parent)
    print(report.size_listing(image, info.size, parent, parent_size, heaviest(steps, top)),
          flush=True)
    if json_file is not None:
        write_output(json_file, report.size_json(image, info.size, parent, parent_size, steps),
                     "--json")
