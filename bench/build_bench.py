#!/usr/bin/env python3
"""Builder benchmark, measured side by side in one run (these machines are noisy).

noop: `imgkit build --cuda 11.8` with everything up to date, against docker's own cache
      check of the same rendered contexts (`docker build` of each, every step cached).
      Rounds alternate the two so drift hits both alike; the ratio is per round.
cold (--cold): the slice built cold with shared parents, against each image's full
      Dockerfile (its whole chain flattened) built independently with no cache: time and
      disk (each layer counted once). Slow: about 20 minutes and 40 GB free here.
--max-base-age: the no-op with every stack family holding its base to an age (a copy of
      images/ with `max_base_age: 3650d`), which the fast path answers by dating each base.
--buildkit: the no-op against BuildKit's own cache check, for images BuildKit built (the
      default builder wherever the docker CLI has buildx): `imgkit build` against the one
      `docker buildx bake` imgkit would run for the whole slice, every step cached. Run
      `imgkit build --cuda 11.8 --engine buildx --force` first, so BuildKit's cache holds
      the images imgkit tagged; the bench checks that the bake gives back the very ids.
engines (--engines): the slice built cold by each engine on one Docker engine that has
      both (the host's, as `make host` sets it up, or DOCKER_HOST pointing at one): docker-py's
      legacy builder (`imgkit build`, default --jobs) and BuildKit (`--engine buildx`, with
      its build cache pruned first). Rounds alternate which goes first.
trees (--against DIR): the slice built cold with BuildKit by this tree and by the checkout
      in DIR (another commit: its own code, matrix and templates), rounds alternating which
      goes first; e.g. `git worktree add /tmp/base 68484a9` for the commit before a change.

      With --own-bases each tree builds in a namespace of its own, on a base its own code
      made (made once, not timed); --only and --platform build a part of the slice. It
      leaves the bench-this/ and bench-that/ images (their bases kept for the next run;
      `docker rmi` them when done), and a framework family's tags (paddle:…, which no
      namespace prefixes) name what the last tree built.

Usage: python bench/build_bench.py [--rounds N] [--max-base-age] [--buildkit] [--cold] [--engines]
                                   [--against DIR [--own-bases] [--only GLOB] [--platform P]]
                                   [--cuda 11.8]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from imgkit.builder.bakeplan import plan_bake  # noqa: E402
from imgkit.builder.buildenv import BuildEnv, SecretServer, default_ca_bundle  # noqa: E402
from imgkit.builder.buildx import secrets_for, write_ca_copy  # noqa: E402
from imgkit.builder.freshness import Freshness  # noqa: E402
from imgkit.engine import connect  # noqa: E402
from imgkit.matrix import compat  # noqa: E402
from imgkit.matrix.plan import make_plan, select  # noqa: E402
from imgkit.matrix.spec import load_spec  # noqa: E402
from imgkit.render.contexts import render_plan, write_context  # noqa: E402


def timed(cmd: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> float:
    start = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                   cwd=cwd)
    return time.monotonic() - start


# docker's own cache check asks the legacy builder, whose cache holds the layers imgkit's
# docker-py builds made: a docker CLI with buildx would ask BuildKit, whose cache is its own
LEGACY = {**os.environ, "DOCKER_BUILDKIT": "0"}


def imgkit_command() -> list[str]:
    """The console script users run (what `pip install` made next to this python)."""
    script = Path(sys.executable).parent / "imgkit"
    return [str(script)] if script.exists() else [sys.executable, "-m", "imgkit"]


def docker_build(context: Path) -> list[str]:
    return ["docker", "build", "-q", "--force-rm", str(context)]


def aged_matrix(folder: Path) -> Path:
    """A copy of images/ whose stack families (neither `framework:` nor `extends:`) hold
    their base to an age: the same images, the base's age looked at on every build."""
    import shutil
    shutil.copytree(ROOT / "images", folder)
    for family in folder.glob("*.yaml"):
        text = family.read_text()
        if "\nframework:" not in text and "\nextends:" not in text and "\nfamily:" in "\n" + text:
            family.write_text(text.rstrip("\n") + "\nmax_base_age: 3650d\n")
    return folder


def noop(cuda: str, rounds: int, aged: bool = False) -> None:
    plan = select(make_plan(load_spec(ROOT / "images"), compat.load()), cuda=cuda)
    contexts = render_plan(plan, ROOT / "templates")
    engine = connect()
    with tempfile.TemporaryDirectory() as tmp:
        dirs = [write_context(c, Path(tmp)) for c in contexts]
        imgkit = imgkit_command() + ["build", "--cuda", cuda]
        if aged:
            imgkit += ["--images", str(aged_matrix(Path(tmp) / "aged")),
                       "--templates", str(ROOT / "templates")]
        subprocess.run(imgkit, check=True, capture_output=True)  # everything up to date first
        for ctx, path in zip(contexts, dirs):  # docker's check must be all cache hits
            out = subprocess.run(docker_build(path), check=True, capture_output=True, text=True,
                                 env=LEGACY)
            info = engine.image(ctx.target.tag)
            if info is None or out.stdout.strip() != info.id:
                sys.exit(f"docker build of {path.name} did not reproduce {ctx.target.tag} "
                         "from cache: the comparison would not be a cache check")
        ratios, ours, docker = [], [], []
        for _ in range(rounds):
            a = timed(imgkit)
            b = sum(timed(docker_build(d), LEGACY) for d in dirs)
            ours.append(a)
            docker.append(b)
            ratios.append(a / b)
    report(f"no-op rebuild of the CUDA {cuda} slice ({len(contexts)} images), {rounds} rounds"
           + (", every stack family with max_base_age" if aged else ""),
           ours, ("docker build cache check:         ", "docker"), docker, ratios)


def report(title: str, ours: list[float], theirs_label: tuple[str, str], theirs: list[float],
           ratios: list[float]) -> None:
    """The no-op's medians, each side's, and the per-round ratio's; `theirs_label`: (the
    check's line label, its short name in the ratio)."""
    print(title)
    print(f"  imgkit build (skip by input hash): median {statistics.median(ours):.3f} s")
    print(f"  {theirs_label[0]} median {statistics.median(theirs):.3f} s")
    print(f"  ratio imgkit/{theirs_label[1]}: median {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f})")


def bake_everything(contexts, workdir: Path) -> tuple[list[str], dict[str, str]]:  # type: ignore[no-untyped-def]
    """The bake imgkit's BuildKit path runs when every image of the slice is stale (the
    same document, without --force's no-cache): with BuildKit's cache warm, its own check."""
    env = BuildEnv(ca_bundle=default_ca_bundle(None))
    secrets, environ = secrets_for(env, write_ca_copy(env, workdir))   # as imgkit does
    stale = {c.target.tag: Freshness("the bench asks BuildKit", None) for c in contexts}
    plan = plan_bake(contexts, stale, local_store=True, context_dir=workdir, secrets=secrets,
                     force=lambda tag: False)
    for context in contexts:
        write_context(context, workdir)
    bake_file = workdir / "docker-bake.json"
    bake_file.write_text(json.dumps(plan.document, indent=2))
    return (["docker", "buildx", "bake", "--file", str(bake_file), "--progress", "quiet",
             "default"], {**os.environ, **environ})


def noop_buildkit(cuda: str, rounds: int, aged: bool = False) -> None:
    plan = select(make_plan(load_spec(ROOT / "images"), compat.load()), cuda=cuda)
    contexts = render_plan(plan, ROOT / "templates", buildkit=True)
    engine = connect()
    imgkit = imgkit_command() + ["build", "--cuda", cuda]
    with tempfile.TemporaryDirectory() as tmp:
        if aged:
            imgkit += ["--images", str(aged_matrix(Path(tmp) / "aged")),
                       "--templates", str(ROOT / "templates")]
        bake, environ = bake_everything(contexts, Path(tmp))
        subprocess.run(imgkit, check=True, capture_output=True)   # everything up to date first
        ids = {c.target.tag: engine.image(c.target.tag) for c in contexts}
        done = subprocess.run(bake, capture_output=True, text=True, env=environ, cwd=tmp)
        if done.returncode != 0:
            sys.exit(f"docker buildx bake of the slice failed: {done.stderr[-800:]}")
        moved = {tag: before for tag, before in ids.items()   # BuildKit's check must be all
                 if before is None or (engine.image(tag) or before).id != before.id}  # cache hits
        if moved:
            for tag, before in reversed(moved.items()):   # the slice's images back, children
                if before is not None:                    # first: tag() removes what the bake
                    engine.tag(before.id, tag)            # made once nothing stands on it
            sys.exit(f"the bake did not give back {next(iter(moved))} from BuildKit's cache (run "
                     f"`imgkit build --cuda {cuda} --engine buildx --force` first): the "
                     "comparison would not be a cache check")
        ratios, ours, theirs = [], [], []
        for round_ in range(rounds):
            sides = [(ours, lambda: timed(imgkit)), (theirs, lambda: timed(bake, environ, tmp))]
            for times, run in sides if round_ % 2 == 0 else reversed(sides):
                times.append(run())
            ratios.append(ours[-1] / theirs[-1])
    report(f"no-op rebuild of the CUDA {cuda} slice ({len(contexts)} images, built by BuildKit), "
           f"{rounds} rounds, alternating" + (", every stack family with max_base_age" if aged else ""),
           ours,
           ("docker buildx bake, every step cached:", "BuildKit"), theirs, ratios)


def flattened(contexts, tag: str) -> str:  # type: ignore[no-untyped-def]
    """One Dockerfile with the whole chain of `tag`, as if written by hand without layers."""
    by_tag = {c.target.tag: c for c in contexts}
    chain = []
    while tag in by_tag:
        chain.append(by_tag[tag])
        tag = by_tag[tag].target.parent or ""
    parts = []
    for i, ctx in enumerate(reversed(chain)):
        lines = ctx.dockerfile.splitlines()
        parts += [line for line in lines if i == 0 or not line.startswith("FROM ")]
    return "\n".join(parts) + "\n"


def unique_bytes(engine, tags: list[str]) -> int:  # type: ignore[no-untyped-def]
    """Disk the images take together: each layer counted once, however many images share it
    (locally built layers each have an id in `docker history`)."""
    sizes: dict[str, int] = {}
    for tag in tags:
        for row in engine.api.history(tag):
            key = row["Id"] if row["Id"] != "<missing>" else f"{tag}:{row['Created']}:{row['CreatedBy']}"
            sizes[key] = int(row["Size"])
    return sum(sizes.values())


def cold(cuda: str) -> None:
    """Both sides build one at a time (--jobs 1), with no cache, through the same
    build-settings server, so the difference is the sharing of parents alone."""
    engine = connect()
    plan = select(make_plan(load_spec(ROOT / "images"), compat.load()), cuda=cuda)
    contexts = render_plan(plan, ROOT / "templates")
    for c in reversed(contexts):  # children first, so no cached layer survives
        engine.remove_image(c.target.tag)
    # the legacy builder, as the independent builds' `docker build` is: the sharing alone differs
    shared = timed(imgkit_command() + ["build", "--cuda", cuda, "--jobs", "1", "--engine", "docker"])
    shared_disk = unique_bytes(engine, [c.target.tag for c in contexts])
    total, flat_tags = 0.0, []
    env = BuildEnv(ca_bundle=default_ca_bundle(None))
    with tempfile.TemporaryDirectory() as tmp, \
            SecretServer(env, engine.bridge_gateway()) as server:
        hosts = [f"--add-host={h}:{ip}" for h, ip in server.extra_hosts.items()]
        for image in contexts:
            d = Path(tmp) / image.dirname
            write_context(image, Path(tmp))
            for ctx in contexts:  # every file any layer of the chain copies
                for path, content, mode in ctx.files:
                    if path != "Dockerfile":
                        (d / path).parent.mkdir(parents=True, exist_ok=True)
                        (d / path).write_bytes(content)
                        (d / path).chmod(mode)
            (d / "Dockerfile").write_text(flattened(contexts, image.target.tag))
            tag = f"imgkit-bench/flat:{image.dirname[-100:]}"
            flat_tags.append(tag)
            try:
                total += timed(["docker", "build", "--no-cache", "--force-rm", "-q", *hosts,
                                "-t", tag, str(d)])
            except BaseException:
                for done in flat_tags:
                    engine.remove_image(done)
                raise
    flat_disk = unique_bytes(engine, flat_tags)
    for tag in flat_tags:
        engine.remove_image(tag)
    print(f"cold build of the CUDA {cuda} slice ({len(contexts)} images): shared parents vs "
          f"each image built from its own full Dockerfile")
    print(f"  time: shared {shared:.0f} s, independent {total:.0f} s: ratio {shared / total:.2f}")
    print(f"  disk (each layer once): shared {shared_disk / 1e9:.1f} GB, independent "
          f"{flat_disk / 1e9:.1f} GB: ratio {shared_disk / flat_disk:.2f}")


def cold_slice(engine, tags: list[str], command: list[str],  # type: ignore[no-untyped-def]
               env: dict[str, str] | None = None, cwd: str | None = None) -> float:
    """`command`'s time from cold: no image of the slice and no build cache (the base kept)."""
    for tag in reversed(tags):           # children first: no layer survives as a cache
        engine.remove_image(tag)
    subprocess.run(["docker", "buildx", "prune", "--all", "--force"], check=True,
                   capture_output=True)
    return timed(command, env=env, cwd=cwd)


def alternated(rounds: int, first: Callable[[], float],
               second: Callable[[], float]) -> tuple[list[float], list[float]]:
    """Each side's times over `rounds`, which one goes first alternating round by round."""
    times: tuple[list[float], list[float]] = ([], [])
    for round_ in range(rounds):
        order = (0, 1) if round_ % 2 == 0 else (1, 0)
        for side in order:
            times[side].append((first, second)[side]())
    return times


def engines(cuda: str, rounds: int) -> None:
    """Cold means: no image of the slice and no build cache, the base kept (both engines
    start from the same Debian image; making it is not building the matrix)."""
    engine = connect()
    plan = select(make_plan(load_spec(ROOT / "images"), compat.load()), cuda=cuda)
    tags = [t.tag for t in plan.targets]

    def cold_build(extra: list[str]) -> float:
        return cold_slice(engine, tags, imgkit_command() + ["build", "--cuda", cuda, *extra])

    legacy, buildkit = alternated(rounds, lambda: cold_build(["--engine", "docker"]),
                                  lambda: cold_build(["--engine", "buildx"]))
    print(f"cold build of the CUDA {cuda} slice ({len(tags)} images) by each engine, "
          f"{rounds} round(s), alternating")
    print(f"  docker-py legacy builder: {', '.join(f'{t:.0f} s' for t in legacy)}")
    print(f"  BuildKit (--engine buildx): {', '.join(f'{t:.0f} s' for t in buildkit)}")
    ratios = [b / a for a, b in zip(legacy, buildkit)]
    print(f"  ratio buildx/legacy: {', '.join(f'{r:.2f}' for r in ratios)}")


def trees(cuda: str, rounds: int, other: Path, own_bases: bool = False,
          selection: tuple[str, ...] = ()) -> None:
    """The cold slice (no image of it, no build cache, the base kept) built with BuildKit by
    this tree and by `other`, each with its own code, matrix and templates. `own_bases`:
    each tree builds in a namespace of its own on a base its own code made (in a first
    build, not timed), for a change to how the base is made. `selection`: more of `imgkit
    build`'s options (--only, --platform) to build a part of the slice."""
    engine = connect()
    plan = select(make_plan(load_spec(ROOT / "images"), compat.load()), cuda=cuda)
    tags = {ROOT: [t.tag for t in plan.targets], other: [t.tag for t in plan.targets]}

    def command(tree: Path, report: str | None = None) -> list[str]:
        mine = ["--namespace", f"bench-{'this' if tree == ROOT else 'that'}"] if own_bases else []
        return [sys.executable, "-m", "imgkit", "build", "--cuda", cuda, "--engine", "buildx",
                *selection, *mine, *(["--json", report] if report else [])]

    def env(tree: Path) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(tree / "src")}

    if own_bases:                 # each base made once by its tree's code, then kept
        for tree in (ROOT, other):
            with tempfile.TemporaryDirectory() as tmp:
                subprocess.run(command(tree, f"{tmp}/b.json"), check=True, env=env(tree),
                               cwd=str(tree), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                built = json.loads(Path(f"{tmp}/b.json").read_text())["images"]
            tags[tree] = [row["tag"] for row in built]

    def cold_build(tree: Path) -> float:
        return cold_slice(engine, tags[tree], command(tree), env=env(tree), cwd=str(tree))

    ours, theirs = alternated(rounds, lambda: cold_build(ROOT), lambda: cold_build(other))
    what = " ".join(selection) or f"the CUDA {cuda} slice ({len(tags[ROOT])} images)"
    print(f"cold build of {what} with BuildKit, {rounds} round(s), alternating"
          + (", each tree on a base its code made" if own_bases else ""))
    print(f"  this tree: {', '.join(f'{t:.0f} s' for t in ours)}")
    print(f"  {other}: {', '.join(f'{t:.0f} s' for t in theirs)}")
    print(f"  ratio this/that: {', '.join(f'{a / b:.2f}' for a, b in zip(ours, theirs))}")
    for tree in (ROOT, other):
        sizes = [engine.image(tag) for tag in tags[tree]]
        print(f"  {'this tree' if tree == ROOT else other}: "
              + ", ".join(f"{tag} {info.size / 1e6:.1f} MB" for tag, info in zip(tags[tree], sizes)
                          if info is not None))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuda", default="11.8")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cold", action="store_true")
    parser.add_argument("--max-base-age", action="store_true",
                        help="the no-op with the stack families holding their base to an age")
    parser.add_argument("--buildkit", action="store_true",
                        help="the no-op against BuildKit's own check (images BuildKit built)")
    parser.add_argument("--engines", action="store_true",
                        help="only the cold build by each engine (--rounds rounds)")
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="only the cold BuildKit build, this tree against the checkout in DIR")
    parser.add_argument("--own-bases", action="store_true",
                        help="with --against: each tree on a base its own code made")
    parser.add_argument("--only", action="append", default=[], metavar="GLOB",
                        help="with --against: only these tags and their parents")
    parser.add_argument("--platform", action="append", default=[],
                        help="with --against: only the images of this platform")
    args = parser.parse_args()
    if args.against:
        selection = tuple(w for g in args.only for w in ("--only", g)) + \
            tuple(w for p in args.platform for w in ("--platform", p))
        trees(args.cuda, args.rounds, args.against.resolve(), args.own_bases, selection)
        return
    if args.engines:
        engines(args.cuda, args.rounds)
        return
    if args.buildkit:
        noop_buildkit(args.cuda, args.rounds, aged=args.max_base_age)
        return
    noop(args.cuda, args.rounds, aged=args.max_base_age)
    if args.cold:
        cold(args.cuda)


if __name__ == "__main__":
    main()
