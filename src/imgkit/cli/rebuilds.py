"""`imgkit reproduce`: declarations only, as in commands.py (one call into builder/)."""
from __future__ import annotations

from ..project import setting_or
from ..selection import Selection
from . import flags
from .commands import command
from .framework import MAKE, selects


@command(MAKE, "Build an image again from its inputs and compare the digests.")
@selects("templates")
def reproduce(selection: Selection, image: flags.MatrixImage, builder: flags.Builder = None,
              ca_bundle: flags.CaBundle = None, index_url: flags.IndexUrl = None,
              on: flags.OtherEngine = None) -> int:
    """Build the image and its parents again from the inputs they were built from (the
    matrix, templates and locks, on the same base) with BuildKit and no cache, under
    throwaway names, and compare: the same image id, or the first layer that differs and
    the files that differ in it. Your images and tags are left as they were.

    With --on, the rebuild runs on another machine's Docker engine, and its images are
    compared with this engine's: a second machine's proof.

    Exit 0: the same image; 1: it differs; 2: not an image of the matrix; 3: it cannot be
    built again here (an input is gone or moved: the log names it), or the other engine
    does not answer."""
    from ..builder.reproduce import reproduce as run
    return run(selection, image, builder=builder, ca_bundle=ca_bundle,
               index_url=setting_or(index_url, "index_url"), on=on)
