"""The CI pipeline as platform-neutral jobs, from the plan: build on CPU runners (a job per
layer group, shared parents first), verify each image on a GPU runner, promote them all.

Build jobs hand their images to later jobs through a staging registry: each stages what
others need with `imgkit publish --candidate --json candidates/<job>.json`, and a job that
needs them names the directory (`--candidates candidates`): a child build pulls its parents
by digest, a verify job judges the staged digest and attaches its verdict, signed (with a
cosign key, or keyless with the CI's OIDC identity), the promote job copies each digest
whose signed verdict verifies and passed. Only digests travel, never tags.

What did not move is not rebuilt: a build job pulls each image whose production tag was
built from the inputs this checkout renders (`--reuse-from`), and stages nothing for one
production already holds: later jobs take its production digest.

With locks, a push runs behind a gate (the locks match the matrix and still resolve as
written: `imgkit lock --check --resolve`); the weekly scheduled run relocks instead, hands
the new locks to every later job of that run (and keeps them and their diff for review),
and so rebuilds, verifies and promotes what moved.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, replace
from typing import Literal

from ..matrix.plan import Plan, Target
from ..options import CiSettings
from ..render.bake import slug

CANDIDATES = "candidates"       # the hand-over directory, relative to the job's checkout
Kind = Literal["check", "build", "verify", "promote", "relock"]
RELOCK_CRON = "17 4 * * 1"      # Mondays, 04:17 UTC: the weekly look at what moved
RELOCK_DIFF = "relock.diff"     # what the scheduled relock changed, kept for review


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
    commands: tuple[str, ...]  # shell lines, run in order, in the repository's checkout
    reads: tuple[str, ...] = ()  # build jobs whose candidates file it reads
    gpu: bool = False
    platform: str = ""         # a verify job: the platform of the image it judges
    hands_over: str = ""       # the candidates file this job writes ("" for none)
    keeps: str = ""            # a report file to keep whatever the outcome
    relocks: str = ""          # the locks folder it rewrites for the rest of a scheduled run
    takes_locks: str = ""      # in a scheduled run: the relocked folder it works from


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


def _handed_over(plan: Plan, group: Group) -> tuple[str, ...]:
    """What the group stages: the images other groups build on, and the final images."""
    inside = set(group.tags)
    needed = {t.parent for t in plan.targets if t.parent in inside and t.tag not in inside}
    return tuple(t for t in group.tags if t in needed or t in plan.finals)


def _leaves(group: Group, plan: Plan) -> tuple[str, ...]:
    parents = {plan.get(t).parent for t in group.tags}
    return tuple(t for t in group.tags if t not in parents)


def _cmd(*words: str) -> str:
    return " ".join(shlex.quote(w) for w in words)


def _signing(settings: CiSettings) -> tuple[str, ...]:
    """How build jobs sign provenance and verify jobs sign verdicts."""
    return ("--keyless",) if settings.keyless else ("--key", settings.signing_key)


def _build_job(plan: Plan, group: Group, settings: CiSettings) -> Job:
    only = [w for leaf in _leaves(group, plan) for w in ("--only", leaf)]
    given = ("--candidates", CANDIDATES) if group.needs else ()
    out = f"{CANDIDATES}/{slug(group.name)}.json"
    return Job(
        name=f"build-{slug(group.name)}", kind="build", title=f"build {group.name}",
        needs=tuple(f"build-{slug(n)}" for n in group.needs),
        reads=tuple(f"build-{slug(n)}" for n in group.needs),
        commands=(_cmd("imgkit", "build", *settings.matrix_args, *only, *given,
                       "--reuse-from", str(settings.registry)),
                  _cmd("mkdir", "-p", CANDIDATES),
                  _cmd("imgkit", "publish", *_handed_over(plan, group), *settings.matrix_args,
                       "--candidate", "--to", str(settings.staging), *_signing(settings),
                       "--reuse-from", str(settings.registry), "--json", out)),
        hands_over=out)


def _verify_job(tag: str, build: str, settings: CiSettings, platform: str = "") -> Job:
    """One platform's image of `tag` (a staged index resolves to it), judged on a runner of
    that platform; linux/amd64, the default runners' platform, needs no --platform."""
    other = platform not in ("", "linux/amd64")
    suffix = f"-{platform.split('/')[1]}" if other else ""
    report = f"verdict-{slug(tag)}{suffix}.xml"
    return Job(
        name=f"verify-{slug(tag)}{suffix}", kind="verify",
        title=f"verify {tag}" + (f" ({platform})" if other else ""), needs=(build,),
        reads=(build,),
        commands=(_cmd("imgkit", "verify", tag, "--candidates", CANDIDATES,
                       *(("--platform", platform) if other else ()), "--attest",
                       *_signing(settings), "--gpus", settings.verify_gpus, "--junit", report),),
        gpu=True, platform=platform or "linux/amd64", keeps=report)


def _promote_commands(plan: Plan, settings: CiSettings) -> tuple[str, ...]:
    lax: tuple[str, ...] = ("--allow-gpu-unverified",) if not settings.proves_gpu else ()
    # keyless: the identity and issuer come from the job's environment (the platform's
    # renderer sets IMGKIT_CERTIFICATE_IDENTITY / _OIDC_ISSUER to this very pipeline's)
    lax += ("--key", settings.trusted_key) if settings.trusted_key else ()
    lines = []
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
                needs=(), commands=(_cmd("imgkit", "lock", "--check", "--resolve", *args),)),
            Job(name="relock", kind="relock", title="relock: what moved on the index and mirror",
                needs=(),
                commands=(_cmd("imgkit", "lock", *args),
                          _cmd("git", "diff", "--stat", "--", settings.locks),
                          f"{_cmd('git', 'diff', '--', settings.locks)} > {RELOCK_DIFF}"),
                relocks=settings.locks, keeps=RELOCK_DIFF)]


def jobs(plan: Plan, settings: CiSettings) -> list[Job]:
    """Every job of the pipeline, each after the jobs it needs."""
    gate = _lock_jobs(settings)
    built = [_build_job(plan, group, settings) for group in groups(plan)]
    if gate:          # the first builds wait for the gate, or the relock (the rest for them)
        built = [replace(b, needs=b.needs or ("lock-check", "relock")) for b in built]
    builder = {tag: f"build-{slug(group_of(plan.get(tag)))}" for tag in plan.finals}
    verify = [_verify_job(tag, builder[tag], settings, platform)
              for tag in plan.finals for platform in plan.get(tag).platforms]
    promote = Job(name="promote", kind="promote", title="promote verified images",
                  needs=tuple(j.name for j in verify), commands=_promote_commands(plan, settings),
                  reads=tuple(dict.fromkeys(builder[tag] for tag in plan.finals)))
    later = [replace(j, takes_locks=settings.locks) for j in (*built, *verify, promote)]
    return [*gate, *later]
