"""Which image of a chain brought each layer of an image. An image's layers start with all
of its parent's, so layer i came with the most distant ancestor that holds i layers. The
ancestors are found from imgkit's labels (org.imgkit.tag, org.opencontainers.image.base.name)
and kept only when their layers are a true prefix: labels are inherited, so an image built
FROM one of ours by hand carries our tag label without being that image."""
from __future__ import annotations

from ..engine import Engine, ImageInfo
from ..labels import BASE_NAME, FAMILY, TAG


def layer_origins(engine: Engine, info: ImageInfo, limit: int = 12) -> list[str]:
    """For each layer index of the image, the image that brought it (its tag, with its
    family when imgkit built it; the engine's name for it otherwise)."""
    chain = [info]
    while len(chain) < limit:
        parent = _parent(engine, chain[-1])
        if parent is None:
            break
        chain.append(parent)
    out = []
    for index in range(len(info.layers)):
        owner = next(image for image in reversed(chain) if len(image.layers) > index)
        out.append(name_of(owner))
    return out


def _parent(engine: Engine, image: ImageInfo) -> ImageInfo | None:
    for ref in (image.labels.get(TAG), image.labels.get(BASE_NAME)):
        if not ref or ref in image.tags:
            continue
        found = engine.image(ref)
        if found is not None and _is_prefix(found.layers, image.layers):
            return found
    return None


def _is_prefix(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
    return 0 < len(short) < len(long) and long[:len(short)] == short


def name_of(image: ImageInfo) -> str:
    """Its imgkit tag and family when the labels are its own (the tag is one of its names),
    else its first tag, else its id."""
    own = image.labels.get(TAG)
    if own and own in image.tags:
        family = image.labels.get(FAMILY)
        return f"{own} (family {family})" if family else own
    return image.tags[0] if image.tags else image.id[:19]
