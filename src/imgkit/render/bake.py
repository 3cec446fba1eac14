"""One image as a `docker buildx bake` target: its rendered context, the named context its
parent or base comes from, the BuildKit secrets its pip steps mount. Shared by the bake
export (a file for any builder) and `imgkit build --engine buildx`. Pure."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence, TypedDict

from .. import labels

if TYPE_CHECKING:
    from .contexts import Context


def slug(text: str) -> str:
    """Letters, digits and single '-' only: a name every CI system and bake accepts."""
    out = "".join(c if c.isalnum() else "-" for c in text.lower())
    return "-".join(part for part in out.split("-") if part)


CA_VARIABLE = "IMGKIT_CA_BUNDLE"
INDEX_VARIABLE = "IMGKIT_INDEX_URL"
EXTRA_INDEX_VARIABLE = "IMGKIT_EXTRA_INDEX_URL"
SECRETS = (f"id=imgkit-ca-bundle,src=${{{CA_VARIABLE}}}",
           f"id=imgkit-index-url,env={INDEX_VARIABLE}",
           f"id=imgkit-extra-index-url,env={EXTRA_INDEX_VARIABLE}")


def target_name(tag: str) -> str:
    """A bake target name for an image: letters, digits, '-' and '_' only."""
    return slug(tag)


# what `imgkit build --engine buildx` adds to a target (bake's own spelling has dashes)
_BuildOnly = TypedDict("_BuildOnly", {"no-cache": bool, "output": list[str],
                                      "args": dict[str, str]}, total=False)


class BakeTarget(_BuildOnly):
    """A target as bake's JSON file spells it."""
    context: str
    dockerfile: str
    tags: list[str]
    labels: dict[str, str]
    platforms: list[str]
    contexts: dict[str, str]
    secret: list[str]


def bake_target(context: Context, source: str, secrets: Sequence[str] = SECRETS,
                tag: str | None = None) -> BakeTarget:
    """One image as a bake target. `source`: what its parent or base named context points
    at (`target:NAME`, `docker-image://REF`); `tag`: where the image is tagged (its own name
    by default)."""
    target = context.target
    below = target.parent if target.parent is not None else target.base
    return {
        "context": context.dirname,
        "dockerfile": "Dockerfile",
        "tags": [tag or target.tag],
        "labels": {labels.LAYER: target.layer, labels.TAG: target.tag,
                   labels.INPUT_HASH: context.input_hash},
        "platforms": list(target.platforms),     # BuildKit builds each (QEMU for foreign ones)
        "contexts": {below: source} if below is not None else {},
        "secret": list(secrets),
    }
