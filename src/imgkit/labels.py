"""Every label name imgkit writes or reads, in one place. Templates get them as `label`."""
from __future__ import annotations

TITLE = "org.opencontainers.image.title"          # every image and build step: its final tag
DESCRIPTION = "org.opencontainers.image.description"
VERSION = "org.opencontainers.image.version"
VENDOR = "org.opencontainers.image.vendor"
BASE_NAME = "org.opencontainers.image.base.name"

PREFIX = "org.imgkit."                              # + a component: its exact version
LAYER = PREFIX + "layer"
INPUT_HASH = PREFIX + "input-hash"                  # what the image was built from
BASE_SOURCE = PREFIX + "base.source"                # how a base OS image was made
BASE_RELEASE_DATE = PREFIX + "base.release-date"    # the Date: of the Release file it was made from
ROLE = PREFIX + "role"                              # on containers imgkit starts
ROLE_VERIFY = "verify"

FOR_TEMPLATES = {"title": TITLE, "description": DESCRIPTION, "version": VERSION,
                 "vendor": VENDOR, "base_name": BASE_NAME, "prefix": PREFIX, "layer": LAYER}


def component(name: str) -> str:
    """The label holding a component's exact version, e.g. org.imgkit.cudnn."""
    return PREFIX + name
