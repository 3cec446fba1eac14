"""The plan's fingerprint: one hash of every byte that shapes a plan.

What a validated, rendered plan amounts to depends only on the matrix files, the templates
(and those imgkit ships, which a partial templates/ folder takes from), imgkit's own code
and data, the Jinja2 and PyYAML releases, the Python version and the selection. Those hash
in a few milliseconds; making the plan takes most of a second. plancache.py keys plans by
this fingerprint, and the no-op build's memo (memo.py) makes it again from the inputs it
wrote down, so this module needs os, hashlib and json only.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys

FORMAT = 4

TYPE_CHECKING = False   # typing's import would cost the memo's replay its share
if TYPE_CHECKING:
    from typing import TypedDict

    class PlanInputs(TypedDict):
        roots: list[tuple[str, str]]    # (label, folder): each file under it is hashed
        libraries: list[str]            # the __init__.py of each rendering library
        selection: dict[str, object]    # what of the selection is not a file
        compat: str | None              # a compat overlay outside the matrix folder


def tree_files(root: str) -> list[str]:
    """Every file under `root`, in a stable order, bytecode left out."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        out += [os.path.join(dirpath, f) for f in sorted(filenames) if not f.endswith(".pyc")]
    return out


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def fingerprint(inputs: PlanInputs) -> str:
    """The hex digest of `inputs`: their files' names and bytes, and the selection."""
    digest = hashlib.sha256(f"imgkit-plan-{FORMAT}\0{sys.version}\0".encode())
    digest.update(json.dumps(inputs["selection"], sort_keys=True).encode())
    if inputs["compat"] is not None:
        try:
            digest.update(b"\0compat\0" + read_bytes(inputs["compat"]))
        except OSError:
            digest.update(b"\0compat: unreadable\0")  # the CLI then reports it properly
    for label, root in inputs["roots"]:
        for path in tree_files(root):
            content = read_bytes(path)
            digest.update(f"\0{label}/{os.path.relpath(path, root)}\0{len(content)}\0".encode())
            digest.update(content)
    for path in inputs["libraries"]:
        digest.update(b"\0lib\0" + read_bytes(path))
    return digest.hexdigest()
