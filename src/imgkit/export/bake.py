"""The matrix as a `docker buildx bake` file, for any BuildKit builder (local, remote, or the
Kubernetes driver): one target per image, its parent reached through a `target:` named
context so BuildKit builds shared parents once and in order, a group per family and a
default group. The CA bundle and package index reach pip as BuildKit secrets mounted for
the pip steps only (the contexts are rendered with `RUN --mount=type=secret`): the file
names where they come from (a path variable, an environment variable), never their content.
Pure: contexts in, a JSON document out.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..registry.destination import Destination, destination_ref
from ..render.bake import CA_VARIABLE, BakeTarget, bake_target, slug, target_name

if TYPE_CHECKING:
    from ..matrix.plan import Plan
    from ..render.contexts import Context

def _target(context: Context, base_images: dict[str, str],
            registry: Destination | None) -> BakeTarget:
    target = context.target
    if target.parent is not None:
        source = f"target:{target_name(target.parent)}"
    else:                                       # the base OS image imgkit would import
        source = f"docker-image://{base_images[target.base]}" if target.base else ""
    return bake_target(context, source, tag=destination_ref(
        registry, target.tag, target.tag.rsplit(":", 1)[1]) if registry else None)


def bake_file(contexts: list[Context], plan: Plan, registry: Destination | None = None) -> str:
    """docker-bake.json for the rendered `contexts` (written beside it, one folder each);
    with `registry`, images are tagged there (what `--push` pushes), else by their local
    names. Parents are named contexts either way, so the tags never decide what is built on."""
    base_images = {t.base: t.os_release.image for t in plan.targets
                   if t.base is not None and t.os_release is not None}
    targets = {target_name(c.target.tag): _target(c, base_images, registry) for c in contexts}
    families: dict[str, list[str]] = {}       # a family's group: the images it names
    for tag in plan.finals:
        families.setdefault(slug(plan.get(tag).family), []).append(target_name(tag))
    # what a plain `docker buildx bake` builds: the images families name, or, for a selection
    # of shared layers only (--only imgkit/python:...), the layers it selected
    parents = {c.target.parent for c in contexts}
    default = plan.finals or tuple(c.target.tag for c in contexts if c.target.tag not in parents)
    groups = {"default": {"targets": [target_name(t) for t in default]}}
    groups |= {f"family-{name}": {"targets": names} for name, names in sorted(families.items())}
    document = {
        # the CA bundle's path on the machine that runs bake (override: IMGKIT_CA_BUNDLE=...)
        "variable": {CA_VARIABLE: {"default": "/etc/ssl/certs/ca-certificates.crt"}},
        "group": groups,
        "target": targets,
    }
    return json.dumps(document, indent=2) + "\n"
