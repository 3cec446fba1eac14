"""The no-op build's memo: an "everything is up to date" answer, given again while nothing
it rested on has changed.

A no-op `imgkit build` should cost at most a tenth of docker's own cache check (BuildKit's
check of the bundled slice takes about 0.3 s). The fast path in noop.py answers from the
plan cache and one inspect per image, but the imports its types need (pathlib,
dataclasses, typing) cost about that tenth on their own. So each time that path answers
"up to date", it writes down what the answer rested on, and the next run checks only that,
with os, hashlib, json and socket:

- the memo's name: the command line, the current folder, the IMGKIT_* and DOCKER_*
  variables, the Python and the imgkit that run, and what each folder from the current one
  up holds (its names, and the bytes of its project files): all that chose the matrix, the
  templates and the selection;
- the plan's fingerprint (plankey.py), made again from the same matrix, templates and code,
  and the names beside the matrix folder (a templates/ folder appearing there);
- the ID of every image, parent and base the answer inspected: an ID is the digest of the
  image's config, so the same IDs mean the same labels and layers, all that freshness
  looks at, and the same sizes (the size budgets, the summary's columns);
- when each base held to a max_base_age was made, and the age its families allow.

Anything changed, missing or unreadable is a miss and never an error: the fast path in
noop.py (then the CLI) answers as before, and writes the memo again.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time

from .. import localhttp
from ..cache import cache_root
from .plankey import fingerprint, read_bytes

TYPE_CHECKING = False   # typing's import would cost the replay its share
if TYPE_CHECKING:
    from typing import Any

    from .plankey import PlanInputs

FORMAT = 1
PROJECT_FILES = ("imgkit.toml", "pyproject.toml")   # what project.find_project reads
UNRESERVED = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
ENGINE_TIMEOUT = 30


def age_days(made: float, now: float) -> int:
    """Whole days from `made` to `now` (seconds since the epoch)."""
    return int((now - made) // 86400)


def past_age(made: float | None, limit: int, now: float) -> bool:
    """Whether a base made at `made` is older than `limit` days allow (or cannot be dated)."""
    return made is None or age_days(made, now) > limit


def _entries(folder: str) -> list[list[object]]:
    """The names in `folder` and whether each is a folder."""
    try:
        with os.scandir(folder) as found:
            return sorted([e.name, e.is_dir()] for e in found)
    except OSError:
        return [["<unreadable>", False]]


def memo_name(argv: list[str]) -> str:
    """What chose the selection, hashed: the command line, the current folder, the
    variables, the Python and imgkit, and every folder from here up (the project search)."""
    here = os.path.realpath(os.getcwd())
    variables = sorted((k, v) for k, v in os.environ.items() if k.startswith(("IMGKIT_", "DOCKER_")))
    digest = hashlib.sha256(json.dumps([f"imgkit-noop-{FORMAT}", sys.version, __file__,
                                        argv, here, variables]).encode())
    folder = here
    while True:
        entries = _entries(folder)
        digest.update(json.dumps([folder, entries]).encode())
        for name in PROJECT_FILES:
            if [name, False] in entries:
                try:
                    digest.update(b"\0" + read_bytes(os.path.join(folder, name)))
                except OSError:
                    digest.update(b"\0<unreadable>")
        parent = os.path.dirname(folder)
        if parent == folder:
            return digest.hexdigest()
        folder = parent


def _memo_file(name: str) -> str:
    return os.path.join(cache_root(), "noop", f"{name[:40]}.json")


def memo_file(argv: list[str]) -> str:
    """Where the memo of `argv`, run here and now, is kept."""
    return _memo_file(memo_name(argv))


class Recorder:
    """What the fast path knew before it asked the engine: the memo's name (memo_name), the
    plan's inputs and fingerprint, the CA bundle it checked. write() adds what the engine
    showed."""

    def __init__(self, name: str, inputs: PlanInputs, plan_key: str,
                 ca_bundle: str | None) -> None:
        self.name = name
        self.body: dict[str, object] = {
            "format": FORMAT, "name": self.name, "inputs": inputs, "plan_key": plan_key,
            "ca_bundle": ca_bundle, "beside": {}}
        for label, root in inputs["roots"]:
            if label == "images":
                beside = os.path.dirname(os.path.realpath(root))
                self.body["beside"] = {beside: _entries(beside)}

    def write(self, socket_path: str, ids: dict[str, str], bases: dict[str, list[float]],
              head: str, rows: list[str]) -> None:
        """`ids`: every reference inspected -> its image ID; `bases`: a base held to an age
        -> [when it was made, the days allowed]; `head` with {seconds} to fill, and `rows`:
        the summary. Best effort: an unwritable memo costs the next no-op only its speed."""
        body = {**self.body, "socket": socket_path, "ids": ids, "bases": bases,
                "head": head, "rows": rows}
        path = _memo_file(self.name)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            partial = f"{path}.{os.getpid()}.tmp"     # readers see the old memo or the new
            with open(partial, "w") as out:
                json.dump(body, out)
            os.replace(partial, path)
        except OSError:
            pass


def _still_holds(memo: dict[str, Any], now: float) -> bool:
    """Whether everything `memo` rested on is as it was."""
    if any(_entries(folder) != entries for folder, entries in memo["beside"].items()):
        return False
    if fingerprint(memo["inputs"]) != memo["plan_key"]:
        return False
    if memo["ca_bundle"] is not None and not os.access(memo["ca_bundle"], os.R_OK):
        return False
    if any(past_age(made, int(limit), now) for made, limit in memo["bases"].values()):
        return False
    return _engine_ids(memo["socket"], list(memo["ids"])) == memo["ids"]


def _quoted(text: str) -> str:
    """`text` percent-encoded for a URL's query (urllib.parse's import costs ~2 ms)."""
    return "".join(chr(b) if b in UNRESERVED else f"%{b:02X}" for b in text.encode())


def _engine_ids(socket_path: str, refs: list[str]) -> dict[str, str]:
    """The image ID each of `refs` names now, in one call: the engine lists the images those
    references match. A reference it shows in another form (say, a docker.io/library/ name)
    is left out, so the memo misses: never a wrong answer."""
    query = _quoted(json.dumps({"reference": refs}))
    status, body = localhttp.get(socket_path, f"/images/json?filters={query}", ENGINE_TIMEOUT)
    if status != 200:
        return {}
    shown = {name: image["Id"] for image in json.loads(body)
             for name in (image.get("RepoTags") or []) + (image.get("RepoDigests") or [])}
    return {ref: shown[ref] for ref in refs if ref in shown}


def replay(name: str, started: float) -> bool:
    """Print the summary the memo `name` (memo_name) keeps and return True when it still
    holds; else print nothing."""
    try:
        memo = json.loads(read_bytes(_memo_file(name)))
        if memo["format"] != FORMAT or memo["name"] != name or not _still_holds(memo, time.time()):
            return False
        summary = "\n".join([memo["head"].format(seconds=time.monotonic() - started), *memo["rows"]])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return False
    print(summary, flush=True)
    return True
