"""What a killed test session leaves in the engine, and who may clear it.

Each namespace the Docker tests make (`imgkit-test-…`, `imgkit-pipe-…`, `imgkit-bk-…`) is
claimed with a lock its process holds until it exits, however it exits. A session that was
killed (a CI job cancelled, a session's time running out) never reaches its teardown, and
its images would stay: a later session's "nothing left behind" checks would then see them.
So each session first clears every namespace in the engine whose lock nobody holds; a
session running beside it holds its own, and is left alone."""
from __future__ import annotations

import fcntl
import os
import re
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

LOCKS = Path(tempfile.gettempdir()) / "imgkit-test-namespaces"
TITLE = "org.imgkit.tag"           # every image imgkit builds: its final tag
NAMESPACE = re.compile(r"imgkit-(?:test|pipe|bk)-[0-9a-f]{8}")
_held: list[int] = []          # the open, locked files: closed only when the process ends
_claimed: list[str] = []       # the namespaces this process claimed


@dataclass(frozen=True)
class Listed:
    """An image as the engine lists it."""
    id: str
    tags: list[str]
    digests: list[str]           # REPO@sha256:... it was pulled or pushed by
    labels: dict[str, str]


def images(engine: Any, **filters: Any) -> list[Listed]:
    """Every (top-level) image, from one list call. docker-py's images.list() inspects each
    image it listed, and one that another session removes in between fails the call."""
    return [Listed(i["Id"], [t for t in i.get("RepoTags") or [] if t != "<none>:<none>"],
                   [d for d in i.get("RepoDigests") or [] if not d.startswith("<none>")],
                   i.get("Labels") or {})
            for i in engine.api.images(filters=filters or None)]


def claim(prefix: str) -> str:
    """A new namespace `prefix-XXXXXXXX`, locked for as long as this process lives."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    LOCKS.mkdir(exist_ok=True)
    fd = os.open(LOCKS / name, os.O_CREAT | os.O_RDWR, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    _held.append(fd)
    _claimed.append(name)
    return name


def ours(text: str) -> bool:
    """Whether `text` (an image name, a label's value) names a namespace this session claimed."""
    return any(ns in text for ns in _claimed)


def our_containers(engine: Any, **filters: Any) -> set[str]:
    """The containers (running or not) this session's tests made: the name of their image
    or one of their labels names one of its namespaces. A container carries its image's
    labels (imgkit's images begin with theirs, and so do a legacy build's step containers),
    and the tests name every image under a namespace. What another session, or another
    pytest-xdist worker, runs beside this one is not ours to judge."""
    return containers_named(engine, ours, **filters)


def containers_named(engine: Any, named: Callable[[str], bool], **filters: Any) -> set[str]:
    """The containers whose image name or one of whose labels `named` accepts."""
    return {c["Id"] for c in engine.api.containers(all=True, filters=filters or None)
            if named(c.get("Image") or "") or any(named(v) for v in (c.get("Labels") or {}).values())}


def _alive(name: str) -> bool:
    """Whether a process holds the namespace's lock now."""
    try:
        fd = os.open(LOCKS / name, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def sweep(engine: Any) -> list[str]:
    """Remove every container and image of a namespace no live session holds. Returns those
    cleared."""
    import docker.errors
    dead: dict[str, bool] = {}

    def is_dead(name: str) -> bool:
        found = set(NAMESPACE.findall(name))
        for ns in found - dead.keys():
            dead[ns] = not _alive(ns)
        return any(dead[ns] for ns in found)

    # first its containers (a killed session's verify or service container, stopped or
    # not): an image a container still uses cannot be removed
    for container in containers_named(engine, is_dead):
        try:
            engine.api.remove_container(container, force=True)
        except docker.errors.APIError:
            pass
    clear(engine, is_dead)
    cleared = sorted(ns for ns, gone in dead.items() if gone)
    for ns in cleared:
        (LOCKS / ns).unlink(missing_ok=True)
    return cleared


def clear(engine: Any, doomed: Callable[[str], bool]) -> None:
    """Remove every image name `doomed` says (tags, and HOST/REPO@sha256:… of what was
    pulled by digest), then every image left with no name at all. By name first, so an
    image that also carries a name kept (the shared Debian base) keeps it; and an image
    several repositories name is removed only once none does."""
    import docker.errors
    listed = images(engine)
    names = {i.id: i.tags + i.digests for i in listed}
    touched = {i for i, n in names.items() if any(doomed(x) for x in n)}
    # and what has no name left but says whose it is: a test's image an interrupted or
    # refused build left <none> (every imgkit image carries its own tag as its title)
    touched |= {i.id for i in listed if not names[i.id] and doomed(i.labels.get(TITLE, ""))}
    for name in (x for i in touched for x in names[i] if doomed(x)):
        try:
            # the image goes with its last name, and with it the untagged parents only it
            # stood on (the steps of its build); a parent that is named or has another
            # child stays. With noprune those parents were left, <none>, every session
            engine.client.images.remove(name)
        except docker.errors.APIError:
            pass
    for _ in range(5):            # children before their parents: a parent goes next pass
        left = [i for i in images(engine) if i.id in touched and not i.tags and not i.digests]
        for image in left:
            try:
                engine.client.images.remove(image.id)
            except docker.errors.APIError:
                pass              # a parent of one still there, or in use: the next pass
        if not left:
            break


def processes_with(variable: str) -> list[str]:
    """The command lines of the processes whose environment holds `variable` (NAME=value):
    what a command the test started with it left running (its children inherit it), and
    nothing another test or session runs beside it."""
    wanted = variable.encode()
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and wanted in (proc / "environ").read_bytes().split(b"\0"):
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip())
        except OSError:                 # gone meanwhile, or not ours to read
            continue
    return found
