"""The CI pipeline as platform-neutral jobs, from the plan: build on CPU runners (a job per
layer group and platform, shared parents first), verify each image of each platform on a
GPU runner of it, promote them all.

A group with arm64 images gets a build job per platform, each on a runner of its platform
(`--platform P`), staging its images alone; the promote job merges each multi-platform
image's index from them (`imgkit merge`) before promoting it whole. Told to emulate, one
job builds every platform of its group (the foreign one under QEMU) and stages the index.

Build jobs hand their images to later jobs through a staging registry: each stages what
others need with `imgkit publish --candidate --json candidates/<job>.json`, and a job that
needs them names the directory (`--candidates candidates`): a child build pulls its parents
by digest, a verify job judges the staged digest and attaches its verdict, signed (with a
cosign key, or keyless with the CI's OIDC identity), the promote job copies each digest
whose signed verdict verifies and passed. Only digests travel, never tags.

What did not move is not rebuilt: a build job pulls each image whose production tag was
built from the inputs this checkout renders (`--reuse-from`), and stages nothing for one
production already holds: later jobs take its production digest. A job of shared layers
(never promoted, so never in production) builds and stages them only as far as the final
images of the jobs after it need them (`--needed-by`): none, when production holds them all.

Jobs of one kind run one script, with what differs as $VARIABLES (their `values`); build
jobs after the same number of others form a wave (`waves`): GitHub writes each wave as one
matrix job, GitLab each job extending its kind's template (ci.py).

With locks, a push runs behind a gate (the locks match the matrix and still resolve as
written: `imgkit lock --check --resolve`); the weekly scheduled run relocks instead, hands
the new locks to every later job of that run (and keeps them and their diff for review),
and so rebuilds, verifies and promotes what moved. Where the project gates on scans, the
weekly run also rescans production against the day's advisories (without locks, that is
all it does).
"""
from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from ..errors import UsageError
from ..matrix.plan import Plan, Target
from ..matrix.targets import lineage
from ..options import CiSettings
from ..registry.destination import destination_ref, split_ref
from ..render.bake import slug

CANDIDATES = "candidates"       # the hand-over directory, relative to the job's checkout
Kind = Literal["check", "build", "verify", "promote", "relock", "rescan", "site"]
RELOCK_CRON = "17 4 * * 1"      # Mondays, 04:17 UTC: the weekly look at what moved
RELOCK_DIFF = "relock.diff"     # what the scheduled relock changed, kept for review
RESCANS = "rescans"             # the scheduled rescan's results: one JSON per production image
MERGED = "merged.json"          # the indexes the promote job merges, as candidates
# A build or verify job's script is the same for every job of its kind, with $VARIABLES
# for what differs (its own values): GitHub writes each kind once with a matrix of values,
# GitLab once in a template its jobs extend. Values are word lists split by the shell (the
# script says so to shellcheck), so each word must be one a shell leaves alone.
SPLIT_ON_PURPOSE = "# shellcheck disable=SC2086 # the *_ARGS are word lists, split on purpose"
HANDS_OVER_VARIABLE = "CANDIDATES_FILE"
REPORT_VARIABLE = "REPORT"
VERDICTS = "verdicts"           # where the verify jobs keep their verdicts for the site
VERDICT_VARIABLE = "VERDICT"
SITE = "public"                 # the site's folder: what GitLab Pages serves, and GitHub's upload
# the files a job writes are named after it, so a platform can name them from the job's name
NAMED_AFTER_JOB = {HANDS_OVER_VARIABLE: CANDIDATES + "/{job}.json", REPORT_VARIABLE: "{job}.xml",
                   VERDICT_VARIABLE: VERDICTS + "/{job}.json"}
SAFE_WORD = re.compile(r"^[A-Za-z0-9._/:@=+,-]+$")


@dataclass(frozen=True)
class Group:
    """Images one build job makes: one layer kind of one CUDA release (or the python roots
    of one OS, or one framework or extension family's images of one CUDA release)."""
    name: str
    tags: tuple[str, ...]      # parents first
    needs: tuple[str, ...]     # groups holding the parents of its images


@dataclass(frozen=True)
class Job:
    name: str                  # unique, [a-z0-9-], a valid job id on both platforms
    kind: Kind
    title: str
    needs: tuple[str, ...]
    script: tuple[str, ...]    # shell lines, run in order, in the repository's checkout
    values: tuple[tuple[str, str], ...] = ()   # the script's $VARIABLES, this job's values
    wave: str = ""             # the jobs of one kind and depth, written as one matrix job on
                               # GitHub ("" = a job of its own)
    reads: tuple[str, ...] = ()  # build jobs whose candidates file it reads
    gpu: bool = False
    platform: str = ""         # a verify job: the platform of the image it judges; a build
                               # job: the one platform whose images it builds ("" = every one)
    qemu: bool = False         # builds another platform's images under QEMU (emulated)
    hands_over: str = ""       # the candidates file this job writes ("" for none)
    keeps: str = ""            # a report file to keep whatever the outcome
    verdict: str = ""          # a verify job's verdict (--json), kept with its report for the site
    relocks: str = ""          # the locks folder it rewrites for the rest of a scheduled run
    takes_locks: str = ""      # in a scheduled run: the relocked folder it works from
    caches: tuple[str, ...] = ()   # folders kept from run to run (the advisory database)

    @property
    def commands(self) -> tuple[str, ...]:
        """The script as this job's shell runs it: each $VARIABLE its value's words, the
        comments left out."""
        return tuple(expand(line, dict(self.values)) for line in self.script
                     if not line.startswith("#"))


def expand(line: str, values: dict[str, str]) -> str:
    """`line` with each $VARIABLE word replaced by its value (an empty one leaves no gap),
    as the shell's word splitting reads an unquoted variable."""
    words = (values.get(w[1:], w) if w.startswith("$") else w for w in line.split(" "))
    return " ".join(w for w in words if w)


def _values(**values: str) -> tuple[tuple[str, str], ...]:
    bad = [w for v in values.values() for w in v.split() if not SAFE_WORD.match(w)]
    if bad:    # tags never hold these; a path might (a folder with a space)
        raise UsageError(f"{bad[0]!r} cannot be passed to a pipeline's jobs as a word",
                         hint="keep the matrix and its files under paths of letters, digits "
                              "and . _ - / only")
    return tuple(values.items())


def group_of(target: Target) -> str:
    if target.layer == "python":
        return f"python-{target.os}"
    if target.layer in ("framework", "extension"):
        return f"{target.family}-cuda{target.cuda}"
    return f"cuda{target.cuda}-{target.os}"


def groups(plan: Plan) -> list[Group]:
    """The plan's images in build groups, each after every group it needs."""
    by_group: dict[str, list[Target]] = {}
    for target in plan.targets:              # parents first, so groups come in build order
        by_group.setdefault(group_of(target), []).append(target)
    where = {t.tag: group_of(t) for t in plan.targets}
    out = []
    for name, members in by_group.items():
        needs = {where[t.parent] for t in members if t.parent in where} - {name}
        out.append(Group(name, tuple(t.tag for t in members), tuple(sorted(needs))))
    return out


def _handed_over(plan: Plan, group: Group, platform: str = "") -> tuple[str, ...]:
    """What the group stages (of `platform`'s images, when given): the images other groups
    build on, and the final images."""
    inside = set(group.tags)
    needed = {t.parent for t in plan.targets if t.parent in inside and t.tag not in inside}
    return tuple(t for t in group.tags if (t in needed or t in plan.finals)
                 and (not platform or platform in plan.get(t).platforms))


def _needing(plan: Plan, group: Group, platform: str = "") -> tuple[str, ...]:
    """The final images of later groups built on the group's images (of `platform`), each
    with no other of them above it: its job builds and stages its images only as far as
    they need them (`--needed-by`). An image's inputs are its parent's too, so a final image
    that moved moves every one above it: naming the topmost says as much as naming all."""
    inside = set(group.tags)
    by_tag = {t.tag: t for t in plan.targets}
    later = [f for f in plan.finals if f not in inside
             and (not platform or platform in by_tag[f].platforms)
             and any(t.tag in inside for t in lineage(by_tag[f], by_tag))]
    below = {t.tag for f in later for t in list(lineage(by_tag[f], by_tag))[1:]}
    return tuple(f for f in later if f not in below)


def _leaves(group: Group, plan: Plan, platform: str = "") -> tuple[str, ...]:
    mine = [t for t in group.tags if not platform or platform in plan.get(t).platforms]
    parents = {plan.get(t).parent for t in mine}
    return tuple(t for t in mine if t not in parents)


def split_platforms(plan: Plan, group: Group, settings: CiSettings) -> tuple[str, ...]:
    """The platforms the group's build jobs are split by, one job each on a runner of that
    platform; () for one job building every platform (emulated, or amd64 only)."""
    made = sorted({p for t in group.tags for p in plan.get(t).platforms})
    if settings.emulate_arm64 or made == ["linux/amd64"]:
        return ()
    return tuple(made)


def _arch_suffix(platform: str) -> str:
    """"" for the default runners' platform (linux/amd64, or "" for every platform), -ARCH
    for another's: what a job's name (and its report's) adds for it."""
    return "" if platform in ("", "linux/amd64") else f"-{platform.split('/')[1]}"


def build_job_name(group: str, platform: str = "") -> str:
    """build-GROUP for the default runners' platform (or every platform), build-GROUP-ARCH
    for another's."""
    return f"build-{slug(group)}{_arch_suffix(platform)}"


# what a wave of build jobs is named after, in build order: the python roots, the CUDA stacks,
# the framework families, their extensions
LAYER_KINDS = ("python", "stacks", "frameworks", "extensions")


def _layer_kind(plan: Plan, group: Group) -> str:
    layers = {plan.get(t).layer for t in group.tags}
    if "extension" in layers:
        return "extensions"
    if "framework" in layers:
        return "frameworks"
    return "python" if layers == {"python"} else "stacks"


def waves(plan: Plan, built: list[tuple[Group, Job]]) -> dict[str, str]:
    """build job -> its wave, named after what it builds (build-stacks): the build jobs
    after the same number of others, which GitHub runs as one matrix job once the wave
    before it is done. `built`: each build job with the group it builds, parents first."""
    kind = {job.name: _layer_kind(plan, group) for group, job in built}
    depth: dict[str, int] = {}
    for _, job in built:
        above = [depth[n] for n in job.needs if n in depth]
        depth[job.name] = 1 + max(above) if above else 0
    names: dict[int, str] = {}
    for level in sorted(set(depth.values())):
        found = {kind[n] for n, d in depth.items() if d == level}
        name = "build-" + "-".join(k for k in LAYER_KINDS if k in found)
        names[level] = name if name not in names.values() else f"{name}-{level + 1}"
    return {n: names[d] for n, d in depth.items()}


def _cmd(*words: str) -> str:
    return " ".join(shlex.quote(w) for w in words)


def _signing(settings: CiSettings) -> tuple[str, ...]:
    """How build jobs sign provenance and verify jobs sign verdicts."""
    return ("--keyless",) if settings.keyless else ("--signing-key", settings.signing_key)


def _kept(settings: CiSettings) -> tuple[str, ...]:
    """How a verify job keeps the signed verdict an image carries (--max-age): the age, and
    the key it must verify against (keyless: the identity in the job's environment)."""
    if not settings.max_age:
        return ()
    return ("--max-age", settings.max_age, *_trusted(settings))


def _trusted(settings: CiSettings) -> tuple[str, ...]:
    # keyless: the identity and issuer come from the job's environment (the platform's
    # renderer sets IMGKIT_CERTIFICATE_IDENTITY / _OIDC_ISSUER to this very pipeline's)
    return ("--trusted-key", settings.trusted_key) if settings.trusted_key else ()


def _build_job(plan: Plan, group: Group, settings: CiSettings, split: dict[str, tuple[str, ...]],
               platform: str = "") -> Job:
    """The job building the group's images (of `platform` alone, on a runner of it, when the
    group is split by platform); it stages them for the jobs after it."""
    only = [w for leaf in _leaves(group, plan, platform) for w in ("--only", leaf)]
    # what the jobs after it would build on it: production may hold all of it unchanged
    later = tuple(w for f in _needing(plan, group, platform) for w in ("--needed-by", f))
    given = ("--candidates", CANDIDATES) if group.needs else ()
    on = ("--platform", platform) if platform else ()
    name = build_job_name(group.name, platform)
    out = NAMED_AFTER_JOB[HANDS_OVER_VARIABLE].format(job=name)
    # a parent group split by platform: its job of this platform (or the host's)
    needs = tuple(build_job_name(n, platform if split[n] else "") for n in group.needs)
    emulated = not platform and any(p != "linux/amd64" for t in group.tags
                                    for p in plan.get(t).platforms)
    return Job(
        name=name, kind="build", needs=needs, reads=needs, platform=platform, qemu=emulated,
        title=f"build {group.name}" + (f" ({platform})" if platform else ""),
        script=(SPLIT_ON_PURPOSE,
                f"{_cmd('imgkit', 'build', *settings.matrix_args)} $BUILD_ARGS "
                f"{_cmd('--reuse-from', str(settings.registry))}",
                _cmd("mkdir", "-p", CANDIDATES),
                "imgkit publish $STAGE_ARGS "
                + _cmd(*settings.matrix_args, "--candidate", "--to", str(settings.staging),
                       *_signing(settings), "--reuse-from", str(settings.registry),
                       *(("--compression", settings.compression)
                         if settings.compression != CiSettings.compression else ()), "--json")
                + f" ${HANDS_OVER_VARIABLE}"),
        values=_values(BUILD_ARGS=" ".join((*only, *on, *given, *later)),
                       STAGE_ARGS=" ".join((*_handed_over(plan, group, platform), *on, *later)),
                       **{HANDS_OVER_VARIABLE: out}),
        hands_over=out)


def _verify_job(tag: str, build: str, settings: CiSettings, platform: str = "",
                checks: str | None = None) -> Job:
    """One platform's image of `tag` (a staged index resolves to it), judged on a runner of
    that platform; linux/amd64, the default runners' platform, needs no --platform;
    `checks`: the family's declared checks, judged in the same verdict."""
    suffix = _arch_suffix(platform)
    other = bool(suffix)
    name = f"verify-{slug(tag)}{suffix}"
    report = NAMED_AFTER_JOB[REPORT_VARIABLE].format(job=name)
    verdict = NAMED_AFTER_JOB[VERDICT_VARIABLE].format(job=name) if settings.pages else ""
    keep_verdict = (_cmd("mkdir", "-p", VERDICTS),) if verdict else ()
    # a project that gates on scans: the day's advisories first (attest scans with them)
    advisories = ("imgkit scan --update-db",) if settings.scans else ()
    return Job(
        name=name, kind="verify",
        title=f"verify {tag}" + (f" ({platform})" if other else ""), needs=(build,),
        reads=(build,),
        script=(*keep_verdict, *advisories, SPLIT_ON_PURPOSE,
                "imgkit attest $IMAGE "
                + _cmd("--candidates", CANDIDATES) + " $PLATFORM_ARGS $CHECKS_ARGS "
                + _cmd(*_signing(settings), *_kept(settings), "--gpus", settings.verify_gpus,
                       "--junit")
                + f" ${REPORT_VARIABLE}" + (f" --json ${VERDICT_VARIABLE}" if verdict else ""),),
        values=_values(IMAGE=tag, PLATFORM_ARGS=f"--platform {platform}" if other else "",
                       CHECKS_ARGS=f"--checks {_from_root(checks, settings)}" if checks else "",
                       **{REPORT_VARIABLE: report},
                       **({VERDICT_VARIABLE: verdict} if verdict else {})),
        gpu=True, platform=platform or "linux/amd64", keeps=report, verdict=verdict,
        caches=(settings.advisories,) if settings.scans else ())


def _from_root(path: str, settings: CiSettings) -> str:
    """`path` as a job in the repository's checkout names it: from its root."""
    return os.path.relpath(Path(path).resolve(), (settings.root or Path.cwd()).resolve())


def _promote_commands(plan: Plan, settings: CiSettings,
                      merged: tuple[str, ...]) -> tuple[str, ...]:
    """Promote each final image; those whose platforms were built and staged apart get
    their index first (`imgkit merge`), so the index is promoted whole."""
    lax: tuple[str, ...] = ("--allow-gpu-unverified",) if not settings.proves_gpu else ()
    lax += _trusted(settings)
    lines = [_cmd("imgkit", "merge", *merged, *settings.matrix_args, "--candidates", CANDIDATES,
                  "--json", f"{CANDIDATES}/{MERGED}")] if merged else []
    for tag in plan.finals:
        target = plan.get(tag)
        repository = f"{settings.registry.registry}/{settings.registry.repository(tag)}"
        tags = [w for t in (tag.rsplit(":", 1)[1], *target.aliases) for w in ("--tag", t)]
        lines.append(_cmd("imgkit", "promote", tag, "--candidates", CANDIDATES,
                          "--to", repository, *tags, *lax))
    return tuple(lines)


def _lock_jobs(settings: CiSettings) -> list[Job]:
    """With locks: the gate a push's builds wait for (the locks match the matrix and still
    resolve as written), and the weekly scheduled job that relocks for the rest of its run.
    The pipeline never commits: the new locks and their diff are kept for a person to
    review, and until they land the gate fails every branch (its locks are stale)."""
    if not settings.locks:
        return []
    args = (*settings.matrix_args, *settings.selection_args)
    return [Job(name="lock-check", kind="check", title="the locks match the matrix and the index",
                needs=(), script=(_cmd("imgkit", "lock", "--check", "--resolve", *args),)),
            Job(name="relock", kind="relock", title="relock: what moved on the index and mirror",
                needs=(),
                script=(_cmd("imgkit", "lock", *args),
                          _cmd("git", "diff", "--stat", "--", settings.locks),
                          f"{_cmd('git', 'diff', '--', settings.locks)} > {RELOCK_DIFF}"),
                relocks=settings.locks, keeps=RELOCK_DIFF)]


def rescan_jobs(plan: Plan, settings: CiSettings) -> list[Job]:
    """Where the project gates on scans: the weekly scheduled run scans what production
    serves (each final image's production tag, pulled by digest) against the day's
    advisories. It fails when one no longer passes the gate, naming each finding and the
    version that fixes it; every image is scanned first, and each result is kept."""
    if not settings.scans:
        return []
    lines = ["imgkit scan --update-db", _cmd("mkdir", "-p", RESCANS), "failed=0"]
    for tag in plan.finals:
        production = destination_ref(settings.registry, tag, split_ref(tag)[1])
        lines.append(_cmd("imgkit", "scan", production, "--json", f"{RESCANS}/{slug(tag)}.json")
                     + " || failed=1")
    lines.append('exit "$failed"')
    return [Job(name="rescan", kind="rescan", title="rescan production against the day's advisories",
                needs=(), script=tuple(lines), keeps=RESCANS, caches=(settings.advisories,))]


def jobs(plan: Plan, settings: CiSettings) -> list[Job]:
    """Every job of the pipeline, each after the jobs it needs."""
    gate = _lock_jobs(settings)
    every = groups(plan)
    split = {g.name: split_platforms(plan, g, settings) for g in every}
    made = [(group, _build_job(plan, group, settings, split, platform)) for group in every
            for platform in split[group.name] or ("",)]
    wave = waves(plan, made)
    built = [replace(b, wave=wave[b.name]) for _, b in made]
    if gate:          # the first builds wait for the gate, or the relock (the rest for them)
        built = [replace(b, needs=b.needs or ("lock-check", "relock")) for b in built]

    def builder(tag: str, platform: str) -> str:
        group = group_of(plan.get(tag))
        return build_job_name(group, platform if split[group] else "")
    verify = [_verify_job(tag, builder(tag, platform), settings, platform, plan.get(tag).checks)
              for tag in plan.finals for platform in plan.get(tag).platforms]
    verify = [replace(v, wave="verify-" + wave[v.needs[0]].removeprefix("build-"))
              for v in verify]
    merged = tuple(t for t in plan.finals if split[group_of(plan.get(t))]
                   and len(plan.get(t).platforms) > 1)
    promote = Job(name="promote", kind="promote", title="promote verified images",
                  needs=tuple(j.name for j in verify),
                  script=_promote_commands(plan, settings, merged),
                  reads=tuple(dict.fromkeys(builder(tag, p) for tag in plan.finals
                                            for p in plan.get(tag).platforms)))
    later = [replace(j, takes_locks=settings.locks) for j in (*built, *verify, promote)]
    # the site of every verdict, failed ones included, published from the release branch,
    # after promote: which final images production holds with a signed, passing verdict,
    # checked against the signer promote trusts (keyless: the job's environment names it)
    trusted = ("--trusted-key", settings.trusted_key) if settings.trusted_key else ()
    site = [Job(name="pages", kind="site", title="the verdict site",
                needs=(*(j.name for j in verify), promote.name),
                # (no verdict at all when every build failed: each image then says so)
                script=(_cmd("mkdir", "-p", VERDICTS),
                        _cmd("imgkit", "site", *settings.matrix_args, *settings.selection_args,
                             "--verdicts", VERDICTS, "--registry", str(settings.registry),
                             *trusted, "--out", SITE)))] if settings.pages else []
    return [*gate, *rescan_jobs(plan, settings), *later, *site]
