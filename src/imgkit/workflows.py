"""The core of each command, as keyword-argument functions (the CLI is a thin layer).

Modules that parse, render or build (PyYAML, Jinja2, docker-py behind them) are imported
inside the functions that need them: a no-op `imgkit build` answers from the plan cache
and the engine's inspect calls alone, and start-up is most of its cost.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from . import report
from .build import plancache
from .build.buildenv import BuildEnv, SecretServer, default_ca_bundle
from .build.freshness import check_freshness
from .build.interrupts import terminate_interrupts
from .engine import Engine, connect
from .errors import EXIT_FAILED, EXIT_OK, UsageError
from .options import PUBLISH_DEFAULTS, PublishOptions, VerifyOptions

if TYPE_CHECKING:
    from .build.freshness import Stamp
    from .build.outcome import Result
    from .export.k8s import JobSettings
    from .matrix.plan import Plan
    from .publish.push import Published, Wanted
    from .render import Context


def compat_overlay(images: Path, compat_file: Path | None) -> Path | None:
    """The user's compat data: --compat FILE, else compat.yaml in the matrix folder."""
    from .matrix.compat import OVERLAY_NAME
    if compat_file is not None:
        return compat_file
    beside = images / OVERLAY_NAME
    return beside if beside.is_file() else None


def load_plan(images: Path, namespace: str, cuda: str | None, only: Sequence[str],
              compat_file: Path | None = None) -> Plan:
    from .matrix import compat
    from .matrix.plan import Settings, make_plan, select
    from .matrix.spec import REPOSITORY_PATTERN, load_spec
    if not REPOSITORY_PATTERN.match(namespace):
        raise UsageError(f"--namespace {namespace!r} is not a valid repository prefix")
    spec = load_spec(images)
    overlay = compat_overlay(images, compat_file)
    data = compat.load(str(overlay) if overlay else None)
    return select(make_plan(spec, data, Settings(namespace=namespace)), cuda, only)


def templates_dir(images: Path, templates: Path | None) -> Path:
    path = templates if templates is not None else images.resolve().parent / "templates"
    if not path.is_dir():
        raise UsageError(f"template directory {path} not found", hint="pass --templates DIR")
    return path


def render_contexts(images: Path, templates: Path | None, namespace: str, cuda: str | None,
                    only: Sequence[str], compat_file: Path | None = None) -> list[Context]:
    from .render import render_plan
    plan = load_plan(images, namespace, cuda, only, compat_file)
    return render_plan(plan, templates_dir(images, templates))


def render(*, out: Path, cuda: str | None, only: Sequence[str], images: Path,
           templates: Path | None, namespace: str, compat_file: Path | None = None) -> list[Path]:
    from .render import write_context
    contexts = render_contexts(images, templates, namespace, cuda, only, compat_file)
    out.mkdir(parents=True, exist_ok=True)
    written = [write_context(c, out) for c in contexts]
    for path in written:
        print(path)
    return written


def list_plan(*, cuda: str | None, only: Sequence[str], images: Path, namespace: str,
              compat_file: Path | None = None, json_file: Path | None = None,
              stats: bool = False, from_build: Path | None = None,
              builders: Sequence[int] = (1, 4, 16), gpus: Sequence[int] = (1, 8)) -> None:
    import json
    plan = load_plan(images, namespace, cuda, only, compat_file)
    if not stats:
        report.print_plan(plan)
        if json_file is not None:
            json_file.write_text(report.plan_json(plan))
        return
    from .matrix.stats import measured_costs
    from .matrix.stats import stats as plan_stats
    measured = measured_costs(from_build) if from_build is not None else {}
    found = plan_stats(plan, measured, tuple(builders) or (1,), tuple(gpus) or (1,))
    print(report.stats_listing(found), flush=True)
    if json_file is not None:
        json_file.write_text(json.dumps({**report.plan_document(plan),
                                         "stats": report.stats_json(found)}, indent=1))


def _progress(verbose: bool) -> Callable[[str, str, str], None]:
    console = report.console(stderr=True)

    def listener(tag: str, event: str, text: str) -> None:
        if event == "log":
            if verbose:
                console.print(f"[dim]{tag}[/] {text}", markup=True)
        elif event == "start":
            console.print(f"[cyan]building[/] {tag} ({text})")
        else:
            console.print(f"[bold]{event}[/] {tag}" + (f": {text}" if text else ""))
    return listener


DEFAULT_IMAGES = Path("images")
DEFAULT_NAMESPACE = "imgkit"


def build_env(ca_bundle: str | None, index_url: str | None) -> BuildEnv:
    env = BuildEnv(ca_bundle=default_ca_bundle(ca_bundle), index_url=index_url)
    env.files()                                               # bad --ca-bundle: exit 2 now
    return env


def plan_key(images: Path, templates: Path | None, namespace: str, cuda: str | None,
             only: Sequence[str], compat_file: Path | None = None) -> str:
    return plancache.fingerprint(images, templates_dir(images, templates),
                                 {"namespace": namespace, "cuda": cuda, "only": list(only),
                                  "compat": str(compat_file) if compat_file else None}, compat_file)


def build(*, cuda: str | None, only: Sequence[str], jobs: int, force: bool, dry_run: bool,
          verbose: bool, images: Path, templates: Path | None, namespace: str,
          ca_bundle: str | None, index_url: str | None, base_source: str,
          mirrors: list[str], compat_file: Path | None = None, json_file: Path | None = None,
          candidates: Path | None = None) -> int:
    """Validate, render, then build; returns the exit code (1 if any image failed).
    `candidates`: images staged by earlier CI jobs are pulled by digest, never rebuilt."""
    from .build.base import parse_mirrors
    started = time.monotonic()
    env = build_env(ca_bundle, index_url)
    mirror_map = parse_mirrors(mirrors)                       # bad --mirror: exit 2
    key = plan_key(images, templates, namespace, cuda, only, compat_file)
    if not (force or dry_run or candidates) and answer_if_up_to_date(key, started, json_file):
        return EXIT_OK
    contexts = render_contexts(images, templates, namespace, cuda, only, compat_file)  # bad: exit 2
    if candidates is None:
        plancache.store(key, [c.stamp for c in contexts])
    engine = connect()                                        # unreachable: exit 3
    if candidates is not None:
        contexts = take_staged(engine, candidates, contexts, dry_run=dry_run)
    return _build(engine, contexts, env, jobs=jobs, force=force, dry_run=dry_run,
                  verbose=verbose, base_source=base_source, mirrors=mirror_map, started=started,
                  json_file=json_file)


def take_staged(engine: Engine, candidates: Path, contexts: list[Context], *,
                dry_run: bool) -> list[Context]:
    """The images of the selection that earlier jobs staged are pulled by digest and tagged
    as the matrix names them; returns the contexts still to build (on top of them)."""
    from .matrix.plan import Plan, split_given
    from .publish.candidates import load
    from .publish.remote import fetch
    staged = load(candidates)                                 # a bad file: exit 2
    build, given = split_given(Plan(tuple(c.target for c in contexts)), staged.keys())
    for tag in given:
        candidate = staged[tag]
        if dry_run:
            _stderr_line(f"would take {tag} from {candidate.reference}")
            continue
        pulled = fetch(engine, candidate.remote, retry_for=PUBLISH_DEFAULTS.retry_for)
        info = engine.image(pulled.local_ref)
        if info is None or info.id != candidate.image_id:
            raise UsageError(f"{candidate.reference} holds another image than {candidates} says "
                             f"{tag} was ({candidate.image_id})")
        engine.tag(candidate.image_id, tag)
        _stderr_line(f"took {tag} from {candidate.reference}")
    return [c for c in contexts if c.target.tag in build]


def answer_if_up_to_date(key: str, started: float, json_file: Path | None = None) -> bool:
    """The no-op path: when the plan cache knows this selection and the engine shows every
    image up to date, print the summary and return True; otherwise print nothing."""
    from .build.outcome import up_to_date
    from .build.sizes import overruns
    stamps = plancache.lookup(key)
    if stamps is None:
        return False
    engine = connect()                                        # unreachable: exit 3
    freshness = check_freshness(engine, stamps)
    if not all(f.fresh for f in freshness.values()):
        return False
    results = [up_to_date(s.tag, freshness[s.tag]) for s in stamps]
    if overruns(results, stamps):
        return False                                          # the full path reports them
    _summarize(engine, results, stamps, started, json_file)
    return True


def _summarize(engine: Engine, results: list[Result], stamps: list[Stamp], started: float,
               json_file: Path | None) -> list[Result]:
    """The build's summary (with what each image adds to its parent) on stdout and, when
    asked, as JSON."""
    from .build.sizes import with_added

    def size_of(ref: str) -> int | None:
        info = engine.image(ref)
        return info.size if info else None
    results = with_added(results, stamps, size_of)
    seconds = time.monotonic() - started
    report.print_build_summary(results, seconds)
    if json_file is not None:
        json_file.write_text(report.build_json(results, seconds))
    return results


def _over_budget(engine: Engine, results: list[Result], stamps: list[Stamp]) -> bool:
    """Report every image heavier than its family allows, with the layers that weigh most."""
    from .build.sizes import heaviest, layers, overruns
    by_tag = {s.tag: s for s in stamps}
    over = overruns(results, stamps)
    for overrun in over:
        stamp = by_tag[overrun.tag]
        report.print_overrun(overrun, heaviest(layers(engine, overrun.tag,
                                                      stamp.parent or stamp.base), 3))
    return bool(over)


def _build(engine: Engine, contexts: list[Context], env: BuildEnv, *, jobs: int, force: bool,
           dry_run: bool, verbose: bool, base_source: str, mirrors: dict[str, str],
           started: float, json_file: Path | None = None) -> int:
    from .build.base import ensure_base
    from .build.scheduler import Builder
    from .options import BuildOptions
    console = report.console(stderr=True)
    if not dry_run:
        bases = {c.target.base: c.target.os_release for c in contexts if c.target.base}
        for ref in sorted(bases):
            os_release = bases[ref]
            assert os_release is not None  # the plan resolves it for every root layer
            ensure_base(engine, ref, os_release, source=base_source, mirrors=mirrors,
                        log=lambda m: console.print(f"[dim]base:[/] {m}"))
    options = BuildOptions(jobs=jobs, force=force, dry_run=dry_run)
    freshness = check_freshness(engine, [c.stamp for c in contexts])
    # The settings server only runs while something is really built.
    builds = not dry_run and (force or not all(f.fresh for f in freshness.values()))
    with SecretServer(env if builds else BuildEnv(),
                      engine.bridge_gateway() if builds else "") as server:
        if builds:  # holding the server's port, no other imgkit build runs on this host
            stale = engine.remove_stale_build_steps([c.target.tag for c in contexts])
            if stale:
                console.print(f"removed {stale} stopped build step container(s) an interrupted "
                              "build left", highlight=False)
        results = Builder(engine, options, server.extra_hosts, _progress(verbose)).run(
            contexts, freshness)
    done = {r.tag for r in results}
    stamps = [c.stamp for c in contexts if c.target.tag in done]
    results = _summarize(engine, results, stamps, started, json_file)
    for result in results:
        if result.error is not None:
            report.print_build_failure(result.error)
    over = _over_budget(engine, results, stamps)
    return EXIT_FAILED if over or any(r.status in ("failed", "skipped", "cancelled")
                                      for r in results) else EXIT_OK


def verify(*, image: str, options: VerifyOptions, json_file: Path | None = None,
           junit_file: Path | None = None, markdown_file: Path | None = None,
           attest: bool = False, candidates: Path | None = None,
           from_report: Path | None = None) -> int:
    """Judge one image; every output the user asked for is written whatever the verdict.
    A registry reference is pulled by digest first; with `attest` the verdict is attached
    next to that digest in its registry. With `candidates`, `image` is the matrix's tag of
    an image an earlier job staged: that digest is judged."""
    import os

    from .errors import EXIT_HOST
    from .publish.candidates import lookup
    from .publish.remote import attach_sbom, attach_verdict, fetch, remote_ref
    from .verify import tickets
    from .verify.run import check_gpus, judge_report
    from .verify.run import verify as run_verify
    check_gpus(options.gpus)                                  # bad --gpus: exit 2 first
    if candidates is not None:
        image = lookup(candidates, image).reference           # not staged: exit 2
    remote = remote_ref(image)
    if attest and remote is None:
        raise UsageError(f"--attest needs a registry reference, not {image!r}",
                         hint="e.g. imgkit verify registry.example.com/ml/paddle@sha256:... --attest")
    engine = connect()
    if remote is not None:
        remote = fetch(engine, remote, retry_for=PUBLISH_DEFAULTS.retry_for)  # pull by digest
    local = image if remote is None else remote.local_ref
    if from_report is not None:                               # a Job ran the probe elsewhere
        verdict = judge_report(engine, local, _report_text(from_report), options)
    else:
        verdict = run_verify(engine, local, options)
    tickets.record(verdict)                                   # what publish gates on
    if attest and remote is not None:
        tag = attach_verdict(engine, remote, verdict.image_id, retry_for=PUBLISH_DEFAULTS.retry_for)
        _stderr_line(f"attached the verdict to {remote.registry}/{remote.repository}@"
                     f"{remote.digest} ({tag})")
        if not verdict.failed:                                # what promotion copies along
            tag = attach_sbom(engine, remote, sbom_document(engine, image, verdict.image_id),
                              retry_for=PUBLISH_DEFAULTS.retry_for)
            _stderr_line(f"attached the SBOM ({tag})")
    report.print_verdict(verdict)
    if json_file is not None:
        json_file.write_text(report.verdict_json(verdict))
    if junit_file is not None:
        junit_file.write_text(report.verdict_junit(verdict))
    if markdown_file is not None:
        markdown_file.write_text(report.verdict_markdown(verdict))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a") as out:
            out.write(report.verdict_markdown(verdict))
    if verdict.host_failure:
        return EXIT_HOST
    return EXIT_FAILED if verdict.failed else EXIT_OK


def _report_text(path: Path) -> str:
    """The probe's JSON from a Job's log (anything printed before it is left out)."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise UsageError(f"--from-report {path}: {exc.strerror}")
    start = text.find("{")
    return text[start:] if start >= 0 else text


def publish(*, tags: list[str], cuda: str | None, only: Sequence[str], images: Path, namespace: str,
            compat_file: Path | None, to: list[str], options: PublishOptions,
            json_file: Path | None = None) -> int:
    """Gate, push once, copy by digest, attach verdicts, move human tags last; returns the
    exit code (1 when anything was refused or failed)."""
    from .publish.destination import parse_destination
    from .publish.push import Publisher
    started = time.monotonic()
    destinations = list(dict.fromkeys(parse_destination(d) for d in to))  # bad --to: exit 2
    if not destinations:
        raise UsageError("say where to publish: --to REGISTRY[/NAMESPACE] (repeatable)")
    wanted = publish_selection(tags, cuda, only, images, namespace, compat_file)
    if not wanted:
        raise UsageError("nothing to publish: the selection names no image")
    engine = connect()                                                         # no engine: exit 3
    with report.PushBars() as bars:
        publisher = Publisher(engine, destinations, options, log=_stderr_line, progress=bars.update,
                              describe=lambda ref, image_id: sbom_document(engine, ref, image_id))
        try:
            with terminate_interrupts():
                results = publisher.run(wanted)
        finally:
            publisher.close()
    return _published(results, started, json_file)


def _stderr_line(line: str) -> None:
    """A progress line of publish/promote, whole and unstyled."""
    report.console(stderr=True).print(line, highlight=False, markup=False)


def _published(results: list[Published], started: float, json_file: Path | None) -> int:
    """The publish/promote summary on stdout, as JSON and as the job summary; the exit code."""
    import os
    seconds = time.monotonic() - started
    print(report.publish_summary(results, seconds), flush=True)
    if json_file is not None:
        json_file.write_text(report.publish_json(results, seconds))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a") as out:
            out.write(report.publish_markdown(results))
    return EXIT_FAILED if any(r.status in ("refused", "held", "failed", "pushed")
                              for r in results) else EXIT_OK


def promote(*, source: str, to: list[str], tags: list[str], options: PublishOptions,
            json_file: Path | None = None, candidates: Path | None = None) -> int:
    """Copy a candidate by digest to every --to repository, if its attached verdict passes.
    With `candidates`, `source` is the matrix's tag of an image an earlier job staged."""
    from .publish.candidates import lookup
    from .publish.promote import Promoter, check_tags, parse_source, parse_target
    started = time.monotonic()
    if candidates is not None:
        source = lookup(candidates, source).reference         # not staged: exit 2
    repository, digest = parse_source(source)                  # a tag, not a digest: exit 2
    targets = list(dict.fromkeys(parse_target(t) for t in to))
    if not targets:
        raise UsageError("say where to promote to: --to HOST/REPOSITORY (repeatable)")
    check_tags(tags)
    promoter = Promoter(connect(), options, log=_stderr_line)
    try:
        with terminate_interrupts():
            results = promoter.run(repository, digest, targets, tags)
    finally:
        promoter.close()
    return _published(results, started, json_file)


def publish_selection(tags: list[str], cuda: str | None, only: Sequence[str], images: Path,
                      namespace: str, compat_file: Path | None) -> list[Wanted]:
    """The images named (with the aliases the matrix gives them), else the matrix's final
    images in the --cuda/--only selection."""
    from .publish.push import Wanted
    from .reference import problem
    for tag in tags:
        why = problem(tag)
        if why is not None:
            raise UsageError(f"{tag!r} is not an image reference: {why}")
    if tags and (cuda or only):
        raise UsageError("name images or select them with --cuda/--only, not both")
    if tags and not images.is_dir():    # images built elsewhere: no matrix, no aliases
        return [Wanted(tag) for tag in dict.fromkeys(tags)]
    plan = load_plan(images, namespace, cuda, only, compat_file)
    aliases = {t.tag: t.aliases for t in plan.targets}
    return [Wanted(tag, aliases.get(tag, ())) for tag in (dict.fromkeys(tags) or plan.finals)]


def ci(*, platform: str, cuda: str | None, only: Sequence[str], images: Path, namespace: str,
       compat_file: Path | None, registry: str, staging: str | None, gpu_runner: str,
       cpu_runner: str, install: str, verify_gpus: str, out: Path) -> None:
    """Write the CI pipeline (build -> verify on GPU -> promote) of the selection."""
    from .export.ci import PLATFORMS, RENDERERS
    from .export.jobs import CiSettings, jobs
    from .publish.destination import Destination, parse_destination
    from .verify.run import check_gpus
    if platform not in PLATFORMS:
        raise UsageError(f"no pipeline for {platform!r}", hint=f"one of: {', '.join(PLATFORMS)}")
    production = parse_destination(registry, "--registry")                # bad: exit 2
    staged = (parse_destination(staging, "--staging") if staging else Destination(
        production.registry, "/".join(filter(None, (production.namespace, "staging")))))
    if staged == production:
        raise UsageError("--staging must differ from --registry: candidates wait apart from "
                         "what was promoted")
    for flag, path in (("--images", images), ("--compat", compat_file)):
        if path is not None and path.is_absolute():
            raise UsageError(f"{flag} {path}: the jobs run in the repository's checkout; give "
                             "the path relative to its root")
    plan = load_plan(images, namespace, cuda, only, compat_file)          # bad matrix: exit 2
    matrix_args = _matrix_args(images, namespace, compat_file)
    settings = CiSettings(registry=production, staging=staged, gpu_runner=gpu_runner,
                          cpu_runner=cpu_runner, install=install,
                          verify_gpus=check_gpus(verify_gpus), matrix_args=matrix_args)
    command = _ci_command(platform, cuda, only, registry, staging, gpu_runner, cpu_runner,
                          install, verify_gpus, matrix_args, out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(RENDERERS[platform](jobs(plan, settings), settings, command))
    _stderr_line(f"wrote {out}")


def _matrix_args(images: Path, namespace: str, compat_file: Path | None) -> tuple[str, ...]:
    """The options every job's imgkit needs to see the same matrix as this command did."""
    args: list[str] = []
    if images != DEFAULT_IMAGES:
        args += ["--images", str(images)]
    if namespace != DEFAULT_NAMESPACE:
        args += ["--namespace", namespace]
    if compat_file is not None:
        args += ["--compat", str(compat_file)]
    return tuple(args)


def _ci_command(platform: str, cuda: str | None, only: Sequence[str], registry: str,
                staging: str | None, gpu_runner: str, cpu_runner: str, install: str,
                verify_gpus: str, matrix_args: tuple[str, ...], out: Path) -> str:
    """The command line that regenerates the file (defaults left out)."""
    import shlex

    from .export.jobs import CiSettings
    words = ["imgkit", "ci", platform, *matrix_args]
    words += ["--cuda", cuda] if cuda else []
    words += [w for glob in only for w in ("--only", glob)]
    words += ["--registry", registry] + (["--staging", staging] if staging else [])
    for flag, value, default in (("--gpu-runner", gpu_runner, CiSettings.gpu_runner),
                                 ("--cpu-runner", cpu_runner, CiSettings.cpu_runner),
                                 ("--install", install, CiSettings.install),
                                 ("--verify-gpus", verify_gpus, CiSettings.verify_gpus)):
        words += [flag, value] if value != default else []
    return shlex.join([*words, "--out", str(out)])


def size(*, image: str, top: int, json_file: Path | None = None) -> None:
    """What an image weighs, what its own layers add to its parent, and its heaviest steps."""
    from . import labels
    from .build.sizes import heaviest, layers
    engine = connect()                                        # unreachable: exit 3
    info = engine.image(image)
    if info is None:
        raise UsageError(f"no local image {image!r}", hint="build or pull it first")
    named = info.labels.get(labels.BASE_NAME)
    below = engine.image(named) if named else None
    parent, parent_size = (named, below.size) if below else (None, 0)   # only when it is here
    steps = layers(engine, image, parent)
    print(report.size_listing(image, info.size, parent, parent_size, heaviest(steps, top)),
          flush=True)
    if json_file is not None:
        json_file.write_text(report.size_json(image, info.size, parent, parent_size, steps))


def sbom_document(engine: Engine, ref: str, image_id: str, timeout: int = 600) -> bytes:
    """The CycloneDX SBOM of image `image_id` (named `ref` in it), read inside a throwaway
    container of exactly that image."""
    from .export.sbom import sbom
    from .verify.run import inventory
    info, facts = inventory(engine, image_id, VerifyOptions(timeout=timeout), name=ref)
    assert facts.inventory is not None  # inventory() guarantees it
    return sbom(ref, info.id, info.labels, facts.libraries, facts.inventory).encode()


def sbom(*, image: str, out: Path, timeout: int) -> None:
    """Write the image's CycloneDX SBOM to `out`."""
    engine = connect()                                        # unreachable: exit 3
    info = engine.image(image)
    if info is None:
        raise UsageError(f"image {image!r} not found in the local engine",
                         hint="build it (imgkit build) or pull it first")
    document = sbom_document(engine, image, info.id, timeout)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(document)
    _stderr_line(f"wrote {out}")


def export_bake(*, out: Path, cuda: str | None, only: Sequence[str], images: Path,
                templates: Path | None, namespace: str, compat_file: Path | None = None,
                registry: str | None = None) -> None:
    """The rendered contexts (pip steps mounting BuildKit secrets) and docker-bake.json."""
    from .export.bake import bake_file
    from .publish.destination import parse_destination
    from .render import render_plan, write_context
    where = parse_destination(registry, "--registry") if registry else None   # bad: exit 2
    plan = load_plan(images, namespace, cuda, only, compat_file)
    contexts = render_plan(plan, templates_dir(images, templates), buildkit_secrets=True)
    out.mkdir(parents=True, exist_ok=True)
    for context in contexts:
        write_context(context, out)
    (out / "docker-bake.json").write_text(bake_file(contexts, plan, where))
    _stderr_line(f"wrote {len(contexts)} contexts and {out / 'docker-bake.json'}")


def export_k8s(*, out: Path, registry: str, cuda: str | None, only: Sequence[str], images: Path,
               namespace: str, compat_file: Path | None, settings: JobSettings,
               candidates: Path | None = None) -> None:
    """A ConfigMap with the probe and a verification Job per image the selection names."""
    from .export.jobs import slug
    from .export.k8s import dump, probe_configmap, verify_job
    from .publish.candidates import load
    from .publish.destination import parse_destination
    from .shipped import probe_zip
    where = parse_destination(registry, "--registry")                  # bad: exit 2
    plan = load_plan(images, namespace, cuda, only, compat_file)
    staged = load(candidates) if candidates is not None else {}
    probe = probe_zip()
    out.mkdir(parents=True, exist_ok=True)
    (out / "probe-configmap.yaml").write_text(dump(probe_configmap(probe, settings)))
    for tag in plan.finals:
        image = (staged[tag].reference if tag in staged else
                 f"{where.registry}/{where.repository(tag)}:{tag.rsplit(':', 1)[1]}")
        (out / f"verify-{slug(tag)}.yaml").write_text(dump(verify_job(tag, image, probe, settings)))
    _stderr_line(f"wrote {out}/probe-configmap.yaml and {len(plan.finals)} Jobs; then "
                 f"`kubectl apply -f {out}` and, per Job, `kubectl logs job/NAME > report.json; "
                 "imgkit verify --from-report report.json IMAGE`")
