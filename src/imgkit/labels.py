"""Every label name imgkit writes or reads, in one place. Templates get them as `label`.

imgkit writes under org.opencontainers.image. only what it knows of an image (its version
and the base it stands on); the rest of that namespace is the team's (TEAM_OWNED: the
project file's [labels], a family's labels:). Its own bookkeeping is under org.imgkit."""
from __future__ import annotations

OCI = "org.opencontainers.image."
DESCRIPTION = OCI + "description"                   # what the image is, unless the team says
VERSION = OCI + "version"
BASE_NAME = OCI + "base.name"
BASE_DIGEST = OCI + "base.digest"
# the OCI annotations a team owns and sets (imgkit never writes them but a description)
TEAM_OWNED = tuple(OCI + name for name in ("vendor", "authors", "url", "source", "documentation",
                                            "licenses", "title", "description"))

PREFIX = "org.imgkit."                              # + a component: its exact version
LAYER = PREFIX + "layer"
TAG = PREFIX + "tag"                                # every image and build step: its final tag
FAMILY = PREFIX + "family"                          # a framework or extension family's images
INPUT_HASH = PREFIX + "input-hash"                  # what the image was built from
BASE_SOURCE = PREFIX + "base.source"                # how a base OS image was made
BASE_RELEASE_DATE = PREFIX + "base.release-date"    # the Date: of the Release file it was made from
ROLE = PREFIX + "role"                              # on containers imgkit starts
ROLE_VERIFY = "verify"

FOR_TEMPLATES = {"tag": TAG, "family": FAMILY, "description": DESCRIPTION, "version": VERSION,
                 "base_name": BASE_NAME, "base_digest": BASE_DIGEST, "prefix": PREFIX,
                 "layer": LAYER}


def refused(name: str) -> str | None:
    """Why a team may not set label `name` (None: it may): imgkit's own bookkeeping and
    what imgkit writes of the OCI annotations."""
    if name.startswith(PREFIX):
        return f"imgkit sets and verify reads the labels under {PREFIX}"
    if name.startswith(OCI) and name not in TEAM_OWNED:
        return (f"imgkit writes {name} (what it knows of the image); a team sets "
                + ", ".join(n[len(OCI):] for n in TEAM_OWNED) + f" under {OCI}")
    return None


def component(name: str) -> str:
    """The label holding a component's exact version, e.g. org.imgkit.cudnn."""
    return PREFIX + name
