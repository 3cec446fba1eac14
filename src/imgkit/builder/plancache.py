"""Remember what a validated, rendered plan amounted to, so a no-op build can skip making it.

A no-op `imgkit build` has to be much cheaper than docker's own cache check. Parsing the
matrix and compat data and rendering every template is most of its cost (imports
included), yet the result depends only on bytes that hash in a few milliseconds (the
matrix files, the templates, imgkit's own code and data, the Jinja2 and PyYAML releases,
the Python version and the selection: plankey.py). This cache maps that fingerprint to
each image's Stamp. It never answers "is the image there": the engine is asked about every
image on every run; a miss or an unreadable entry just means the plan is made again.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..budget import Budget
from ..cache import cache_dir, write_whole
from ..render.stamp import Stamp
from ..selection import Selection
from ..shipped import PACKAGE_DIR, default_templates
from .plankey import fingerprint

if TYPE_CHECKING:
    from .plankey import PlanInputs

FORMAT = 3     # of a stored entry (the key's own is plankey.FORMAT)


def _library_sources() -> list[Path]:
    """The packages whose release can change rendered output: their __init__.py (which
    carries __version__), found on sys.path the way import would, without importing them."""
    paths = []
    for name in ("jinja2", "yaml"):
        for entry in sys.path:
            init = Path(entry or ".", name, "__init__.py")
            if init.is_file():
                paths.append(init)
                break
    return paths


def inputs_for(images: Path, templates: Path, selection: dict[str, object],
               compat: Path | None = None) -> PlanInputs:
    """`compat`: a compat overlay outside the matrix folder (one inside is hashed with it)."""
    shipped = default_templates()     # what a partial templates/ folder takes from imgkit
    roots = [("pkg", PACKAGE_DIR), ("images", images), ("templates", templates)]
    return {"roots": [(label, str(root)) for label, root in
                      roots + ([("shipped", shipped)] if shipped is not None else [])],
            "libraries": [str(path) for path in _library_sources()],
            "selection": selection, "compat": str(compat) if compat is not None else None}


def plan_inputs(selection: Selection) -> PlanInputs:
    """What the plan of `selection` is made from, as fingerprint() hashes it."""
    return inputs_for(selection.images, selection.templates_dir, selection.options,
                      selection.compat_file)


def plan_key(selection: Selection) -> str:
    """The cache key of `selection`: every byte that shapes its plan."""
    return fingerprint(plan_inputs(selection))


def _entry(key: str) -> Path:
    return cache_dir() / "plans" / f"{key[:40]}.json"


@dataclass(frozen=True)
class Known:
    """What a plan amounted to: each image's stamp, and the bases a family's max_base_age
    holds to an age (base tag -> days), which a no-op build must look at too."""
    stamps: list[Stamp]
    base_ages: dict[str, int] = field(default_factory=dict)


def lookup(key: str) -> Known | None:
    try:
        raw = json.loads(_entry(key).read_text())
        if raw.get("format") != FORMAT or raw.get("key") != key:
            return None
        return Known([Stamp(s["tag"], s["parent"], s["base"], s["input_hash"],
                            Budget(*s["budget"]) if s["budget"] else None) for s in raw["stamps"]],
                     {str(ref): int(days) for ref, days in raw["base_ages"].items()})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def store(key: str, stamps: list[Stamp], base_ages: dict[str, int] | None = None) -> None:
    """Best effort: an unwritable cache only costs the next no-op its speed."""
    entry = _entry(key)
    body = json.dumps({"format": FORMAT, "key": key, "base_ages": base_ages or {}, "stamps": [
        {"tag": s.tag, "parent": s.parent, "base": s.base, "input_hash": s.input_hash,
         "budget": [s.budget.size, s.budget.file] if s.budget else None}
        for s in stamps]}, indent=1)
    try:
        write_whole(entry, body)
    except OSError:
        pass
