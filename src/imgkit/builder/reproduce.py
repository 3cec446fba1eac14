"""`imgkit reproduce IMAGE`: build the image again from its recorded inputs (the matrix,
templates and locks it was built from, on the same base) with BuildKit and no cache, under
throwaway names, and compare: the same image id for every image of its chain, or the first
layer that differs and the files that differ within it. The user's images are never touched:
the throwaway names go, and with them whatever the rebuild made that nothing else uses.

With `--on ADDRESS` the rebuild runs on another Docker engine (another machine's, by its
DOCKER_HOST address): the base is copied there under a throwaway name, the chain is built
there from nothing, and its images are compared with this engine's. Nothing but the
throwaway names is made there, and they go too.

Exit 0: the same image; 1: it differs; 2: not an image of the matrix; 3: it cannot be
rebuilt here (no BuildKit of the engine's own, an input gone: the image, its base, or the
inputs it was built from no longer what the matrix says; the other engine unreachable)."""
from __future__ import annotations

import json
import secrets as random
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .. import labels, platforms
from ..console import console, print_warning, stderr_line
from ..engine import Engine, connect
from ..errors import EXIT_FAILED, EXIT_OK, EngineUnavailable, HostError, UsageError
from ..lock.files import read_locks, requirements
from ..matrix.load import load_plan
from ..matrix.plan import Plan, Target, lineage
from ..options import BuildOptions
from ..render.bake import target_name
from ..render.command import render_selection
from ..render.contexts import Context, write_context
from ..reproduction import Reproduction, keep
from ..selection import Selection
from .bakeplan import plan_bake
from .buildenv import build_env
from .buildx import BakeBuilder, BakeProgress, driver_of, refuse_podman, secrets_for, write_ca_copy
from .epoch import build_epochs
from .freshness import Freshness
from .layerdiff import differences, first_difference, layer_entries

SHOWN = 20          # differing files named per image


@dataclass(frozen=True)
class Compared:
    tag: str
    original: str       # image id
    rebuilt: str        # image id, "" when the rebuild made none
    layer: int | None = None     # first differing layer
    files: tuple[str, ...] = ()

    @property
    def same(self) -> bool:
        return self.original == self.rebuilt


def chain_of(plan: Plan, image: str) -> list[Target]:
    """The image and its parents, root first; exit 2 for an image the matrix lacks."""
    by_tag = {t.tag: t for t in plan.targets}
    if image not in by_tag:
        raise UsageError(f"{image!r} is not an image of this matrix: reproduce builds an image "
                         "again from the matrix's inputs", hint="`imgkit list` names them")
    return list(reversed(list(lineage(by_tag[image], by_tag))))


def floating_inputs(chain: list[Target], locks: dict[str, bytes]) -> list[str]:
    """What another machine or another day would resolve differently: unlocked pip
    requirements, an unlocked apt step, a base made from a moving mirror."""
    floats = []
    for target in chain:
        if target.tag in locks:
            continue
        if target.layer == "python":
            floats.append(f"{target.tag}: apt installs what the mirror holds that day (no lock)")
        elif requirements(target):
            asked = requirements(target)
            floats.append(f"{target.tag}: pip resolves {', '.join(asked[:3])}"
                          f"{' ...' if len(asked) > 3 else ''} and what they need on the "
                          "index that day (no lock)")
    return floats


def check_inputs(engine: Engine, contexts: list[Context]) -> str:
    """The base's ref; exit 3 naming the input that is gone or that moved."""
    base = contexts[0].target.base or ""
    below = engine.image(base)
    if below is None:
        raise HostError(f"the base {base} is gone: the chain cannot be built on it again",
                        hint="`imgkit build` makes or pulls it (a new base is a new input)")
    for context in contexts:
        tag = context.target.tag
        info = engine.image(tag)
        if info is None:
            raise HostError(f"{tag} is not in the engine: nothing to compare",
                            hint="build it first (imgkit build)")
        built_from = info.labels.get(labels.INPUT_HASH, "")
        if built_from != context.input_hash:
            raise HostError(f"{tag} was built from other inputs ({built_from or 'unknown'}) "
                            f"than the matrix gives now ({context.input_hash})",
                            hint="check out the commit it was built from, or build it again")
        if info.layers[:len(below.layers)] != below.layers:
            raise HostError(f"{tag} is not built on the {context.target.parent or base} the "
                            "engine holds now: it is out of date", hint="imgkit build, then "
                            "reproduce what it built")
        below = info
    return base


def rebuild(engine: Engine, contexts: list[Context], epochs: dict[str, int], *, builder: str | None,
            ca_bundle: str | None, index_url: str | None, names: dict[str, str]) -> int:
    """Every image of the chain built anew under its throwaway name, one bake each, parents
    first, each on its parent as the engine holds it (as `imgkit build` builds on an image
    that is up to date: BuildKit's layers differ in what they list by where the parent
    came from); the first failed bake's exit code, else 0."""
    env = build_env(ca_bundle, index_url)
    quiet = BakeBuilder(engine, BuildOptions(builder=builder), env, lambda *_: None)
    where = {"DOCKER_HOST": engine.docker_host} if engine.docker_host else {}   # buildx's engine
    for context in contexts:
        workdir = Path(tempfile.mkdtemp(prefix="imgkit-reproduce-"))
        try:
            secrets, environ = secrets_for(env, write_ca_copy(env, workdir))
            tag = context.target.tag
            plan = plan_bake([context], {tag: Freshness("reproduce", None)}, local_store=True,
                             context_dir=workdir, secrets=secrets, force=lambda _: True,
                             epochs=epochs, names=names)
            write_context(context, workdir)
            bake_file = workdir / "docker-bake.json"
            bake_file.write_text(json.dumps(plan.document, indent=2))
            progress = BakeProgress({target_name(tag): tag}, {tag: context.dockerfile})
            code = quiet.bake(bake_file, {**environ, **where}, progress)
            if quiet.cancel.is_set():
                raise KeyboardInterrupt          # the throwaway names go on the way out
            if code != 0:
                stderr_line("the rebuild failed:\n" + "\n".join(progress.tail[-15:]))
                return code
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


def compare(engine: Engine, tag: str, rebuilt_ref: str, rebuilt_on: Engine | None = None) -> Compared:
    """`tag` as `engine` holds it against its rebuild (on `rebuilt_on`, else the same engine)."""
    other = rebuilt_on or engine
    original, rebuilt = engine.image(tag), other.image(rebuilt_ref)
    if original is None or rebuilt is None:
        return Compared(tag, original.id if original else "", "")
    if original.id == rebuilt.id:
        return Compared(tag, original.id, rebuilt.id)
    index = first_difference(original.layers, rebuilt.layers)
    if index is None or index >= min(len(original.layers), len(rebuilt.layers)):
        return Compared(tag, original.id, rebuilt.id, index)   # the config alone, or a layer more
    files = differences(layer_entries(engine, original.id, original.layers[index]),
                        layer_entries(other, rebuilt.id, rebuilt.layers[index]))
    return Compared(tag, original.id, rebuilt.id, index, tuple(files))


def remove_throwaways(engine: Engine, names: dict[str, str]) -> None:
    """The throwaway names, children first, and what they alone named."""
    for ref in reversed(list(names.values())):
        info = engine.image(ref)
        engine.untag(ref)
        if info is not None:
            engine.remove_if_unused(info.id)


def say(line: str) -> None:
    console().print(line, highlight=False, markup=False)


def report(results: list[Compared]) -> None:
    for result in results:
        if result.same:
            say(f"{result.tag}: the same image ({result.original[:19]})")
            continue
        say(f"{result.tag}: differs ({result.original[:19]} built, "
                    f"{result.rebuilt[:19] or 'none'} rebuilt)")
        if result.layer is not None:
            say(f"  first layer that differs: {result.layer + 1}")
        elif result.rebuilt:
            say("  every layer is the same: the image's config differs")
        for line in result.files[:SHOWN]:
            say(f"    {line}")
        if len(result.files) > SHOWN:
            say(f"    ... and {len(result.files) - SHOWN} more")


def reproduce(selection: Selection, image: str, *, builder: str | None = None,
              ca_bundle: str | None = None, index_url: str | None = None,
              on: str | None = None) -> int:
    plan = load_plan(selection)
    chain = chain_of(plan, image)
    wanted = {t.tag for t in chain}
    contexts = [c for c in render_selection(selection, plan, buildkit=True,
                                            platforms=(platforms.host(),))
                if c.target.tag in wanted]
    engine = connect()
    refuse_podman(engine, "imgkit reproduce", "run it where a Docker engine holds the image "
                  "(docs/reproducible.md): Podman's builder is not one it compares with")
    engine.refuse_containerd_store("imgkit reproduce")
    other = elsewhere(on, builder)
    if other is None and driver_of(builder) != "docker":
        raise HostError("reproduce builds with the engine's own BuildKit (the `docker` driver), "
                        "whose images it compares", hint="--builder default (`docker buildx ls` "
                        "lists the builders and their drivers)")
    base = check_inputs(engine, contexts)
    floating = tuple(floating_inputs(chain, read_locks(selection.images, plan)))
    for line in floating:
        print_warning(f"not reproducible elsewhere or later: {line}",
                      hint="`imgkit lock` pins it (docs/reproducible.md)")
    epochs = build_epochs(engine, contexts)
    run = random.token_hex(4)
    # on another engine the base, an input, is copied there under a throwaway name too
    # (first: the throwaways go children first, and it last)
    names = {base: f"imgkit-reproduce/base:{run}"} if other else {}
    names.update({c.target.tag: f"imgkit-reproduce/{target_name(c.target.tag)}:{run}"
                  for c in contexts})
    builds_on = other or engine
    stderr_line(f"building {len(contexts)} image(s) again with no cache, on {base}"
                + (f", on the engine at {on}" if other else ""))
    try:
        if other is not None:
            copy_image(engine, base, other, names[base])
        if rebuild(builds_on, contexts, epochs, builder=builder, ca_bundle=ca_bundle,
                   index_url=index_url, names=names) != 0:
            raise HostError(f"{image} could not be built again "
                            + (f"on {on}" if other else "here"), hint="the log above says why")
        results = [compare(engine, c.target.tag, names[c.target.tag], builds_on) for c in contexts]
    finally:
        remove_throwaways(builds_on, names)
    report(results)
    builder_name = f"BuildKit on Docker engine {builds_on.server_version().split('+')[0]}"
    builder_name += f" at {on}" if other else ""
    for result in results:    # what verify records in the verdict (reproduction.py)
        if result.same:
            keep(Reproduction(result.original, result.tag, builder_name, time.time(), floating))
    return EXIT_OK if all(r.same for r in results) else EXIT_FAILED


def elsewhere(on: str | None, builder: str | None) -> Engine | None:
    """The other engine `--on` names (a Docker engine that answers), or None."""
    if on is None:
        return None
    if builder is not None:
        raise UsageError("--on and --builder: the rebuild on another engine uses that engine's "
                         "own BuildKit", hint="give one of them")
    if "://" not in on:                  # a host name alone: the user's to complete
        raise UsageError(f"--on {on}: not an engine's address (it names no way to reach one)",
                         hint=f"--on ssh://{on} (its engine over ssh), or tcp://{on}:2376 with "
                              "DOCKER_TLS_VERIFY=1")
    other = Engine(docker_host=on)
    try:
        other.ping()
    except EngineUnavailable as exc:                           # exit 3, saying which
        raise HostError(f"--on {on}: {exc.message}", hint="the other machine's engine must "
                        "answer at that address (`docker -H ADDRESS info` tries it)") from None
    refuse_podman(other, f"imgkit reproduce --on {on}", "name a Docker engine's address")
    return other


def copy_image(engine: Engine, ref: str, other: Engine, name: str) -> None:
    """`ref` as `engine` holds it, loaded into `other` and named `name` there."""
    info = engine.image(ref)
    if info is None:
        raise HostError(f"{ref} is gone: nothing to copy")
    other.load(engine.save(info.id), ref)
    other.tag(info.id, name)
