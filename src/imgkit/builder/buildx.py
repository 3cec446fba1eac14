"""`imgkit build --engine buildx`: the plan through `docker buildx bake` on the user's builder,
with the docker-py builder's contract kept: only what is out of date is built (parents first,
each once), the same Result per image, failures name their step and dependents are skipped,
Ctrl-C stops the bake and leaves only whole images.

What a builder sees depends on its driver:
- `docker` (the engine's own BuildKit): bases and up-to-date parents come from the engine's
  image store (`docker-image://` resolves there first) and the images land in it.
- any other (docker-container, kubernetes, remote): it cannot see the engine's store, so the
  parents of every stale image are built in the same bake (its cache answers for unchanged
  ones), it pulls the base from the base's registry, and results are loaded into the engine.
The CA bundle and package index reach the pip steps as BuildKit secrets. Each platform's
images are targets of their own (another platform's tagged TAG-ARCH, as the docker-py
builder keeps them, on its parent's image of that platform), BuildKit running a foreign
platform's steps under QEMU.
"""
from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Collection, Iterator

from ..engine import Engine, ImageInfo
from ..errors import BuildFailed, HostError, UsageError
from ..interrupts import interrupt_sets
from ..options import BuildOptions
from ..render.bake import EXTRA_INDEX_VARIABLE, INDEX_VARIABLE, target_name
from ..stepnames import step_words
from .bakeplan import plan_bake
from .buildenv import BuildEnv
from .chains import by_parent
from .epoch import build_epochs
from .failure_hints import NOTICE, TOOL_ERROR, failure_hint
from .freshness import Freshness, check_freshness
from .outcome import BUILT, CANCELLED, FAILED, SKIPPED, UP_TO_DATE, WOULD_BUILD, Result, up_to_date
from .plugins import hidden_buildx

if TYPE_CHECKING:
    from ..render.contexts import Context

Listener = Callable[[str, str, str], None]  # (tag, event, text), as the docker-py builder's
LOG_TAIL = 30
STOP_GRACE = 20.0       # seconds buildx gets to cancel its solve after SIGINT


def buildx_command(builder: str | None) -> list[str]:
    return ["docker", "buildx"] + (["--builder", builder] if builder else [])


def driver_of(builder: str | None) -> str:
    """The builder's driver (`docker`, `docker-container`, ...); exit 3 without buildx,
    exit 2 for a builder that does not exist."""
    if shutil.which("docker") is None:
        raise HostError("no docker CLI on PATH: `--engine buildx` runs `docker buildx bake`",
                        hint="install the docker CLI and its buildx plugin")
    try:
        done = subprocess.run([*buildx_command(builder), "inspect"], capture_output=True,
                              text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise HostError("`docker buildx inspect` did not answer in 60 s")
    if done.returncode != 0:
        text = (done.stderr or done.stdout).strip()
        if builder and "no builder" in text.lower():
            raise UsageError(f"--builder {builder}: {text}", hint="`docker buildx ls` lists them")
        raise HostError(f"docker buildx is not usable: {text or 'exit ' + str(done.returncode)}",
                        hint=hidden_buildx(text) or "install the buildx plugin (Debian: docker-buildx)")
    for line in done.stdout.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Driver":
            return value.strip()
    raise HostError(f"`docker buildx inspect` named no driver:\n{done.stdout.strip()}")


# the engine's own BuildKit builds named contexts (`target:` parents) from this release on
# (it bundles BuildKit 0.11); 20.10's would have to pull a newer Dockerfile frontend
NAMED_CONTEXTS_ENGINE = (23, 0)


def refuse_podman(engine: Engine, what: str, hint: str) -> None:
    """BuildKit builds into a Docker engine (buildx drives the docker CLI's context, which
    is never Podman's own socket): `what` cannot run on Podman."""
    if engine.product() == "podman":
        raise HostError(f"{what} builds with BuildKit (`docker buildx`), into a Docker engine, "
                        "and this engine is Podman", hint=hint)


def why_not_buildkit(engine: Engine, builder: str | None) -> str | None:
    """None when `docker buildx bake` can build the plan here; else why not, in words (what
    `--engine auto` falls back to the engine's legacy builder for). A --builder that does
    not exist is still an error."""
    if shutil.which("docker") is None:
        return "no docker CLI on PATH"
    try:
        driver = driver_of(builder)
    except HostError as refused:
        hidden = hidden_buildx(refused.message)
        return "no buildx plugin for the docker CLI" + (f" ({hidden})" if hidden else "")
    if driver != "docker":
        return None                 # a builder of its own (docker-container, remote, k8s)
    return why_not_this_engine(engine.server_version())


def release(version: str) -> tuple[int, ...]:
    """An engine's (major, minor) from what it says ("26.1.5+dfsg1" -> (26, 1)); () for ""."""
    return tuple(int(n) for n in re.findall(r"\d+", version)[:2])


def why_not_this_engine(version: str) -> str | None:
    """None when an engine of this version builds named contexts with its own BuildKit."""
    if release(version) < NAMED_CONTEXTS_ENGINE:
        return (f"engine {version.split('+')[0] or '(unknown)'}'s own BuildKit cannot build "
                "named contexts (engine 23 or later can)")
    return None


# BuildKit 0.13 to 0.15.1 (engines 26.0 to 27.1) checksums a step's whole parent filesystem
# before any RUN with a secret mount, as each pip step is (moby/buildkit#5251; 27.2 has the fix)
SLOW_SECRET_STEPS = ((26, 0), (27, 2))


def slow_secret_steps_note(version: str) -> str | None:
    """A note for engines whose own BuildKit makes each pip step wait; None for others."""
    if not SLOW_SECRET_STEPS[0] <= release(version) < SLOW_SECRET_STEPS[1]:
        return None
    return (f"engine {version.split('+')[0]}'s BuildKit checksums each pip step's parent image "
            "before the step runs (moby/buildkit#5251): engine 27.2 or later builds the same "
            "images faster (the bundled slice in 0.82 to 0.86x the time: docs/building.md)")


def secrets_for(env: BuildEnv, ca_copy: Path | None = None) -> tuple[list[str], dict[str, str]]:
    """The bake `secret` entries for the build's trust settings, and the environment they
    read from (an index URL may hold credentials: never in the document). `ca_copy`: where
    the bake reads the CA bundle from instead of its own path (write_ca_copy)."""
    entries, environ = [], {}
    if env.ca_bundle is not None:
        entries.append(f"id=imgkit-ca-bundle,src={ca_copy or env.ca_bundle}")
    for name, variable, value in (("imgkit-index-url", INDEX_VARIABLE, env.index_url),
                                  ("imgkit-extra-index-url", EXTRA_INDEX_VARIABLE,
                                   env.extra_index_url)):
        if value:
            entries.append(f"id={name},env={variable}")
            environ[variable] = value
    return entries, environ


def write_ca_copy(env: BuildEnv, folder: Path) -> Path | None:
    """The CA bundle copied into the bake's folder, where bake runs: buildx 0.19 and later
    read no file outside it without `--allow fs.read=PATH` (which buildx 0.13 does not know)
    and, asked anyway, stop with "additional privileges requested". It holds certificates
    only, no secret; the folder goes when the build ends."""
    if env.ca_bundle is None:
        return None
    copy = folder / "ca-bundle.pem"
    copy.write_bytes(env.files()["ca.pem"])
    return copy


VERTEX = re.compile(r"#(\d+) (?:\d+\.\d+ )?(.*)")
NAMED = re.compile(r"naming to (\S+)(?: [0-9.]+s)? done")
RAN = re.compile(r'process ".*" did not complete successfully: (exit code: \d+)$', re.S)
# "[target 2/3] RUN ...", or "[2/3] RUN ..." where a bake of one target names none
STEP = re.compile(r"\[(?:([A-Za-z0-9_-]+)(?: [^\]]*)?|\d+/\d+)\] (.*)")


def short_ref(ref: str) -> str:
    """docker.io/library/x:1 -> x:1, docker.io/ns/x:1 -> ns/x:1 (how imgkit names them)."""
    for prefix in ("docker.io/library/", "docker.io/"):
        if ref.startswith(prefix):
            return ref[len(prefix):]
    return ref


@dataclass
class BakeProgress:
    """What the plain progress stream said, per target: when each was named (done), the
    step that failed and its last lines. BuildKit runs a step that several targets share
    once and labels it with whichever target asked first (a parent's step may carry its
    child's name), so a step belongs to the first image, parents first, whose Dockerfile
    has that instruction."""
    targets: dict[str, str]                                 # target name -> tag
    dockerfiles: dict[str, str]                             # tag -> Dockerfile, parents first
    started: float = field(default_factory=time.monotonic)
    owner: dict[str, str] = field(default_factory=dict)     # vertex -> tag
    step: dict[str, str] = field(default_factory=dict)      # vertex -> its step
    logs: dict[str, list[str]] = field(default_factory=dict)
    named: dict[str, float] = field(default_factory=dict)   # tag -> seconds it took
    began: dict[str, float] = field(default_factory=dict)   # tag -> its first step's start
    failed: dict[str, tuple[str, str]] = field(default_factory=dict)  # tag -> (step, error)
    done: set[str] = field(default_factory=set)             # tags whose step has ended in failure
    tail: list[str] = field(default_factory=list)           # the last lines of all

    def feed(self, line: str) -> tuple[str, str] | None:
        """One line; returns (tag, text) when it belongs to a target."""
        self.tail = (self.tail + [line])[-LOG_TAIL:]
        match = VERTEX.match(line)
        if match is None:
            return None
        vertex, text = match.groups()
        step = STEP.match(text)
        if step and vertex not in self.owner:
            owner = self._labelled(step.group(1), step.group(2))
            if owner is not None:
                self.owner[vertex] = owner
                self.step[vertex] = step_words(step.group(2))
                if owner not in self.done:      # an error line of a step that passed is no reason
                    self.failed.pop(owner, None)
        now = time.monotonic()
        named = NAMED.search(text)
        if named and short_ref(named.group(1)) in self.targets.values():
            done = short_ref(named.group(1))
            self.named[done] = now - self.began.get(done, self.started)
        tag = self.owner.get(vertex)
        if tag is None:
            return None
        self.began.setdefault(tag, now)
        self.logs.setdefault(tag, []).append(text)
        self.logs[tag] = self.logs[tag][-LOG_TAIL:]
        said = TOOL_ERROR.match(text)
        if said is not None:
            self._failed(tag, vertex, said.group(1).strip())
        return tag, text

    def _failed(self, tag: str, vertex: str, error: str) -> None:
        """Why `tag` failed: the last error line a tool of the step printed (pip's last one
        says most: "No matching distribution found for X"; apt's "E: Unable to locate
        package X"), else BuildKit's own line (where the step names the command, only its
        exit code is news)."""
        ran = RAN.match(error)
        step = self.step.get(vertex, "build")
        if ran is not None or tag in self.done:
            if tag not in self.failed:
                self.failed[tag] = (step, ran.group(1) if ran and vertex in self.step else error)
            self.done.add(tag)
        elif not NOTICE.match(error):
            self.failed[tag] = (step, error)

    def _labelled(self, target: str | None, step: str) -> str | None:
        """The image a step's first line belongs to; None when not one of ours."""
        if target is not None and target in self.targets:
            return self._owner(self.targets[target], step)
        if len(self.targets) == 1:            # a bake of one target: buildx names none
            return next(iter(self.targets.values()))
        return None

    def _owner(self, labelled: str, step: str) -> str:
        """The image a step belongs to: `step` is "N/M] RUN ..." or "RUN ..." text."""
        instruction = " ".join(step.split("] ", 1)[-1].split())
        if re.match(r"(RUN|COPY|ADD|ENV|WORKDIR|USER|LABEL) ", instruction):
            for tag, dockerfile in self.dockerfiles.items():  # continuation lines joined
                if instruction in " ".join(dockerfile.replace("\\\n", " ").split()):
                    return tag
        return labelled


class BakeBuilder:
    """Builds contexts with one `docker buildx bake`; same results as scheduler.Builder."""

    def __init__(self, engine: Engine, options: BuildOptions, env: BuildEnv,
                 listener: Listener, forced: Collection[str] | None = None) -> None:
        self.engine = engine
        self.options = options
        self.env = env
        self.listener = listener
        self.forced = forced
        self.cancel = threading.Event()

    def _force(self, tag: str) -> bool:
        return self.options.force and (self.forced is None or tag in self.forced)

    @cached_property
    def driver(self) -> str:
        """The builder's driver, asked of buildx once (no buildx: exit 3, before building)."""
        return driver_of(self.options.builder)

    def run(self, contexts: list[Context], freshness: dict[str, Freshness]) -> list[Result]:
        if self.driver == "docker":
            results = self._by_parent(contexts, freshness, self._force)
            if not self.cancel.is_set() and off_parent(self.engine, contexts, results):
                # seen beside another build: BuildKit gave a child another result of its
                # parent's step than the parent's tag has; built once more on the tag
                redone = self._by_parent(contexts, check_freshness(
                    self.engine, [c.stamp for c in contexts]), lambda _: False)
                results = [r2 if r2.status != UP_TO_DATE else r1 for r1, r2 in zip(results, redone)]
            return results
        workdir = Path(tempfile.mkdtemp(prefix="imgkit-bake-"))
        try:
            return self._run(contexts, freshness, False, workdir, self._force)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _by_parent(self, contexts: list[Context], freshness: dict[str, Freshness],
                   force: Callable[[str], bool]) -> list[Result]:
        """The engine's own BuildKit: a bake per image, each once its parent is built
        (chains.py says in what order), on its parent as the engine holds it, as a later
        build of a child alone does. (An image built in one bake with its parent got layers
        that list unchanged folders otherwise: BuildKit diffs it another way, and the same
        inputs gave another image.)"""
        def bake_one(context: Context, parent: Result | None) -> Result:
            tag = context.target.tag
            if parent is None:
                now = freshness[tag]
            elif parent.status in (BUILT, WOULD_BUILD):   # stale whatever the engine holds
                now = Freshness(f"parent {context.target.parent} is rebuilt", freshness[tag].info)
            else:                                         # the parent up to date: ask again
                now = check_freshness(self.engine, [context.stamp])[tag]
            workdir = Path(tempfile.mkdtemp(prefix="imgkit-bake-"))
            try:
                return self._run([context], {tag: now}, True, workdir, force)[0]
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
        found = by_parent(contexts, bake_one, self.options.jobs, self.cancel, self.listener)
        return [found[c.target.tag] for c in contexts]

    def _run(self, contexts: list[Context], freshness: dict[str, Freshness], local_store: bool,
             workdir: Path, force: Callable[[str], bool]) -> list[Result]:
        from ..render.contexts import write_context  # not at import: a no-op build renders nothing
        secrets, environ = secrets_for(self.env, write_ca_copy(self.env, workdir))
        epochs = build_epochs(self.engine, contexts) if local_store else {}  # else: undated
        plan = plan_bake(contexts, freshness, local_store=local_store, context_dir=workdir,
                         secrets=secrets, force=force, epochs=epochs)
        results = {c.target.tag: up_to_date(c.target.tag, freshness[c.target.tag])
                   for c in contexts if c.target.tag not in plan.why}
        if self.options.dry_run or not plan.build:
            results |= {tag: Result(tag, WOULD_BUILD, reason=plan.why[tag]) for tag in plan.build}
            return [results[c.target.tag] for c in contexts]
        for context in contexts:
            if context.target.tag in plan.why:
                write_context(context, workdir)
        bake_file = workdir / "docker-bake.json"
        bake_file.write_text(json.dumps(plan.document, indent=2))
        for tag in plan.build:
            self.listener(tag, "start", plan.why[tag])
        before = {tag: freshness[tag].info for tag in plan.build}
        by_tag = {c.target.tag: c for c in contexts}
        progress = BakeProgress({target_name(t): t for t in plan.build},
                                {t: by_tag[t].dockerfile for t in plan.build})
        code = self.bake(bake_file, environ, progress)
        for tag in plan.build:                              # parents first
            results[tag] = self._result(by_tag[tag], before[tag], progress, results, code)
            self.listener(tag, results[tag].status, results[tag].reason)
        for tag in reversed(plan.build):    # a moved tag leaves no <none> image: children first
            old = before[tag]
            if old is not None and results[tag].status == BUILT and results[tag].image_id != old.id:
                self.engine.remove_if_unused(old.id)
        if self.cancel.is_set():
            raise KeyboardInterrupt
        return [results[c.target.tag] for c in contexts]

    def bake(self, bake_file: Path, environ: dict[str, str], progress: BakeProgress) -> int:
        """Run the bake to its end (or stop it on Ctrl-C); returns its exit status."""
        command = [*buildx_command(self.options.builder), "bake", "--file", str(bake_file),
                   "--progress", "plain", "default"]
        # its own session: the terminal's Ctrl-C reaches imgkit, which stops the bake itself
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, errors="replace", env={**os.environ, **environ},
                                   cwd=bake_file.parent, start_new_session=True)
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_pump, args=(process, lines), daemon=True).start()
        stopped_at: float | None = None
        with interrupt_sets(self.cancel):
            for line in _drain(lines):
                if self.cancel.is_set() and stopped_at is None:
                    stopped_at = time.monotonic()
                    process.send_signal(signal.SIGINT)     # buildx cancels its solve
                if stopped_at is not None and time.monotonic() - stopped_at > STOP_GRACE:
                    process.kill()
                if line is None:
                    continue
                owned = progress.feed(line)
                if owned is not None:
                    self.listener(owned[0], "log", owned[1])
        return process.wait()

    def _result(self, context: Context, before: ImageInfo | None, progress: BakeProgress,
                results: dict[str, Result], code: int) -> Result:
        from .. import labels
        tag = context.target.tag
        info = self.engine.image(tag)
        made = info is not None and info.labels.get(labels.INPUT_HASH) == context.input_hash \
            and (tag in progress.named or before is None or before.id != info.id)
        if made and info is not None:
            seconds = progress.named.get(tag, time.monotonic() - progress.started)
            return Result(tag, BUILT, seconds, info.size, info.id)
        parent = context.target.parent
        if parent in results and results[parent].status not in (BUILT, UP_TO_DATE):
            return Result(tag, SKIPPED, reason=f"parent {parent} {results[parent].status}")
        if tag in progress.failed:
            step, reason = progress.failed[tag]
            logs = progress.logs.get(tag, [])
            error = BuildFailed(tag, step, reason, logs, hint=failure_hint([reason, *logs]))
            return Result(tag, FAILED, reason=reason, error=error)
        if self.cancel.is_set():
            return Result(tag, CANCELLED)
        reason = f"docker buildx bake exited {code} without building it"
        return Result(tag, FAILED, reason=reason, error=BuildFailed(
            tag, "bake", reason, progress.tail, hint=failure_hint(progress.tail)))


def off_parent(engine: Engine, contexts: list[Context], results: list[Result]) -> list[str]:
    """The images just built whose layers do not begin with the layers their parent's tag
    has now (their parent built in the same bake, or taken from the engine's store)."""
    built = {r.tag for r in results if r.status == BUILT}
    ours = {r.tag for r in results if r.status in (BUILT, UP_TO_DATE)}
    strays = []
    for context in contexts:
        tag, parent = context.target.tag, context.target.parent
        if tag in built and parent in ours:
            child, below = engine.image(tag), engine.image(parent)
            if child is not None and below is not None and \
                    child.layers[:len(below.layers)] != below.layers:
                strays.append(tag)
    return strays


def _pump(process: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
    for line in process.stdout or ():
        lines.put(line.rstrip("\n"))
    lines.put(None)


def _drain(lines: queue.Queue[str | None]) -> Iterator[str | None]:
    """Every line until the stream ends; None every half second, so the caller can act on a
    Ctrl-C while the bake is silent."""
    while True:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            yield None
            continue
        if line is None:            # the stream ended: the caller waits for the exit
            return
        yield line
