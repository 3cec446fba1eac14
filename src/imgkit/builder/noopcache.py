"""The no-op build's one cache: an "everything is up to date" answer, given again while
nothing it rested on has changed.

A no-op `imgkit build` should cost at most a tenth of BuildKit's own cache check (about
0.3 s for the bundled slice), and Python's start-up is most of that; making the plan
(parsing the matrix, rendering every template) takes most of a second. So each time a build
ends with every image of its selection up to date, it writes down what that rested on, and
the next `imgkit build` with the same selection checks only that, with os, hashlib, json
and a socket (entry.py calls replay() before anything else is imported):

- the entry's name: the selection options as given, the current folder, the IMGKIT_* and
  DOCKER_* variables, the Python and the imgkit that run, and the project files from the
  current folder up (what project.find_project reads): all that chose the matrix, the
  templates and the selection;
- the plan's fingerprint: every byte that shapes the plan (the matrix files, the templates
  and those imgkit ships, imgkit's own code and data, the Jinja2 and PyYAML releases,
  the Python), and whether a templates/ folder stands beside the matrix folder;
- the ID of every image, parent and base the answer inspected: an ID is the digest of the
  image's config, so the same IDs mean the same labels and layers (all that freshness
  looks at) and the same sizes (the size budgets, the summary's columns);
- when each base held to a max_base_age was made, and the age its families allow.

It is not a second freshness rule: freshness is judged by the build (freshness.py) when it
writes the entry; the replay only sees that nothing it judged has changed. Anything
changed, missing or unreadable is a miss, never an error: the build runs as it would have.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time

from .. import localhttp
from ..cache import cache_root
from ..docker_context import current_name

TYPE_CHECKING = False   # typing's import would cost the replay a tenth of its time
if TYPE_CHECKING:
    from typing import Any, TypedDict

    class PlanInputs(TypedDict):
        roots: list[tuple[str, str]]    # (label, folder): each file under it is hashed
        libraries: list[str]            # the __init__.py of each rendering library
        selection: dict[str, object]    # what of the selection is not a file
        compat: str | None              # a compat overlay outside the matrix folder
        beside: str                     # where a templates/ folder beside the matrix would be

FORMAT = 1
# The options a no-op build may carry: they only choose what to check; everything that
# changes how images are built (and --platform, which the replay does not take) goes to
# the CLI's full path. Each is taken once.
SELECTION_OPTIONS = ("--cuda", "--only", "--images", "--templates", "--namespace", "--compat")
PROJECT_FILES = ("imgkit.toml", "pyproject.toml")   # what project.find_project reads
UNRESERVED = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
ENGINE_TIMEOUT = 30


def age_days(made: float, now: float) -> int:
    """Whole days from `made` to `now` (seconds since the epoch)."""
    return int((now - made) // 86400)


def past_age(made: float | None, limit: int, now: float) -> bool:
    """Whether a base made at `made` is older than `limit` days allow (or cannot be dated)."""
    return made is None or age_days(made, now) > limit


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def plain_build(argv: list[str]) -> list[list[str]] | None:
    """The [flag, value] pairs of `build` with only SELECTION_OPTIONS (`--opt value` or
    `--opt=value`, each once), sorted by flag; None for any other command line."""
    if not argv or argv[0] != "build":
        return None
    found: dict[str, str] = {}
    args = argv[1:]
    i = 0
    while i < len(args):
        flag, eq, value = args[i].partition("=")
        if flag not in SELECTION_OPTIONS or flag in found:
            return None
        if not eq:
            if i + 1 >= len(args) or args[i + 1].startswith("-"):
                return None
            value = args[i + 1]
            i += 1
        found[flag] = value
        i += 1
    return [[flag, found[flag]] for flag in sorted(found)]


def entry_name(asked: list[list[str]]) -> str:
    """What chose the selection, hashed: the selection options as given (plain_build), the
    current folder, the variables, the docker CLI's context, the Python and imgkit, and the
    project files from here up."""
    here = os.path.realpath(os.getcwd())
    variables = sorted((k, v) for k, v in os.environ.items() if k.startswith(("IMGKIT_", "DOCKER_")))
    context = current_name(os.environ)          # `docker context use` moves to another engine
    digest = hashlib.sha256(json.dumps([f"imgkit-noop-{FORMAT}", sys.version, __file__,
                                        asked, here, variables, context]).encode())
    folder = here
    while True:
        for name in PROJECT_FILES:
            try:
                digest.update(f"\0{folder}/{name}\0".encode() + read_bytes(os.path.join(folder, name)))
            except FileNotFoundError:
                pass
            except OSError:
                digest.update(f"\0{folder}/{name}: unreadable\0".encode())
        parent = os.path.dirname(folder)
        if parent == folder:
            return digest.hexdigest()
        folder = parent


def _tree_files(root: str) -> list[str]:
    """Every file under `root`, in a stable order, bytecode left out."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        out += [os.path.join(dirpath, f) for f in sorted(filenames) if not f.endswith(".pyc")]
    return out


def fingerprint(inputs: PlanInputs) -> str:
    """The hex digest of `inputs`: their files' names and bytes, the selection, and whether
    a templates/ folder stands beside the matrix folder."""
    digest = hashlib.sha256(f"imgkit-plan-{FORMAT}\0{sys.version}\0".encode())
    digest.update(json.dumps(inputs["selection"], sort_keys=True).encode())
    digest.update(f"\0beside: {os.path.isdir(inputs['beside'])}\0".encode())
    if inputs["compat"] is not None:
        try:
            digest.update(b"\0compat\0" + read_bytes(inputs["compat"]))
        except OSError:
            digest.update(b"\0compat: unreadable\0")
    for label, root in inputs["roots"]:
        for path in _tree_files(root):
            content = read_bytes(path)
            digest.update(f"\0{label}/{os.path.relpath(path, root)}\0{len(content)}\0".encode())
            digest.update(content)
    for path in inputs["libraries"]:
        digest.update(b"\0lib\0" + read_bytes(path))
    return digest.hexdigest()


def _entry_file(name: str) -> str:
    return os.path.join(cache_root(), "noop", f"{name[:40]}.json")


def write(name: str, body: dict[str, object]) -> None:
    """Keep `body` as the entry `name`. Best effort: an unwritable cache costs the next
    no-op only its speed."""
    path = _entry_file(name)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        partial = f"{path}.{os.getpid()}.tmp"     # readers see the old entry or the new
        with open(partial, "w") as out:
            json.dump({**body, "format": FORMAT, "name": name}, out)
        os.replace(partial, path)
    except OSError:
        pass


def _still_holds(entry: dict[str, Any], now: float) -> bool:
    """Whether everything `entry` rested on is as it was."""
    if fingerprint(entry["inputs"]) != entry["plan_key"]:
        return False
    if entry["ca_bundle"] is not None and not os.access(entry["ca_bundle"], os.R_OK):
        return False
    if any(past_age(made, int(limit), now) for made, limit in entry["bases"].values()):
        return False
    return _engine_ids(entry["socket"], list(entry["ids"])) == entry["ids"]


def _quoted(text: str) -> str:
    """`text` percent-encoded for a URL's query (urllib.parse's import costs ~2 ms)."""
    return "".join(chr(b) if b in UNRESERVED else f"%{b:02X}" for b in text.encode())


def _engine_ids(socket_path: str, refs: list[str]) -> dict[str, str]:
    """The image ID each of `refs` names now, in one call: the engine lists the images those
    references match. A reference it shows in another form (say, a docker.io/library/ name)
    is left out, so the entry misses: never a wrong answer."""
    query = _quoted(json.dumps({"reference": refs}))
    status, body = localhttp.get(socket_path, f"/images/json?filters={query}", ENGINE_TIMEOUT)
    if status != 200:
        return {}
    shown = {name: image["Id"] for image in json.loads(body)
             for name in (image.get("RepoTags") or []) + (image.get("RepoDigests") or [])}
    return {ref: shown[ref] for ref in refs if ref in shown}


def replay(name: str, started: float) -> bool:
    """Print the summary the entry `name` (entry_name) keeps and return True when it still
    holds; else print nothing."""
    try:
        entry = json.loads(read_bytes(_entry_file(name)))
        if entry["format"] != FORMAT or entry["name"] != name or not _still_holds(entry, time.time()):
            return False
        summary = "\n".join([entry["head"].format(seconds=time.monotonic() - started), *entry["rows"]])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return False
    print(summary, flush=True)
    return True
