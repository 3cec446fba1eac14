"""Which images one `docker buildx bake` builds, and its document. Pure."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from ..render.bake import bake_target, target_name
from .epoch import ARG
from .freshness import Freshness

if TYPE_CHECKING:
    from ..render.contexts import Context


@dataclass(frozen=True)
class BakePlan:
    """What one bake builds: the targets (parents first), why each, and the document."""
    build: tuple[str, ...]                 # tags, parents first
    why: dict[str, str]
    document: dict[str, object]


def plan_bake(contexts: list[Context], freshness: dict[str, Freshness], *, local_store: bool,
              context_dir: Path, secrets: list[str], force: Callable[[str], bool],
              epochs: Mapping[str, int] | None = None,
              names: Mapping[str, str] | None = None) -> BakePlan:
    """Pure: which images the bake builds and the bake document for them. With the engine's
    own store (`local_store`), up-to-date parents and bases are used from it; otherwise the
    ancestors of what is stale are built too and each result is loaded into the engine.
    `epochs`: tag -> its build date (builder/epoch.py); `names`: tag -> the name it is
    tagged under instead, and taken from as a parent (`imgkit reproduce`'s throwaways)."""
    names = names or {}
    by_tag = {c.target.tag: c for c in contexts}
    why: dict[str, str] = {}
    for context in contexts:                          # parents first
        tag, parent = context.target.tag, context.target.parent
        if force(tag):
            why[tag] = "--force: no layer cache"
        elif parent in why:
            why[tag] = f"parent {parent} is rebuilt"
        elif not freshness[tag].fresh:
            why[tag] = freshness[tag].why
    if not local_store:                               # the builder needs every parent built
        for tag in list(why):
            parent = by_tag[tag].target.parent
            while parent in by_tag and parent not in why:
                why[parent] = f"a parent of {tag} (the builder cannot see the engine's images)"
                parent = by_tag[parent].target.parent
    build = tuple(c.target.tag for c in contexts if c.target.tag in why)
    targets: dict[str, object] = {}
    for tag in build:
        context = by_tag[tag]
        below = context.target.parent or context.target.base
        if context.target.parent in why:
            source = f"target:{target_name(context.target.parent)}"
        elif context.target.parent is None and not local_store:
            release = context.target.os_release
            source = f"docker-image://{release.image if release else below}"
        else:
            source = f"docker-image://{names.get(below or '', below)}"
        target = bake_target(context, source, secrets, tag=names.get(tag))
        target["context"] = str(context_dir / context.dirname)
        if force(tag):
            target["no-cache"] = True
        if epochs and tag in epochs:
            target["args"] = {ARG: str(epochs[tag])}
        if not local_store:
            target["output"] = ["type=docker"]
        targets[target_name(tag)] = target
    document = {"group": {"default": {"targets": [target_name(t) for t in build]}},
                "target": targets}
    return BakePlan(build, why, document)
