"""What a build that ends with every image of its selection up to date writes down for the
next no-op (noopcache.py answers from it): the plan's inputs and their fingerprint, the ID
of every image, parent and base, when each base held to an age was made, and the summary a
no-op prints. Judged with the build's own rules (freshness, the size budgets,
max_base_age) on the images as they are when it ends."""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..engine import Engine, ImageInfo
from ..outputs import write_output
from ..render.stamp import Stamp
from ..selection import Selection
from ..shipped import PACKAGE_DIR, default_templates
from . import report
from .freshness import check_freshness
from .noopcache import age_days, past_age, write
from .outcome import Result, up_to_date
from .weights import overruns, with_added

if TYPE_CHECKING:
    from .noopcache import PlanInputs


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


def plan_inputs(selection: Selection) -> PlanInputs:
    """What the plan of `selection` is made from, as noopcache.fingerprint() hashes it."""
    shipped = default_templates()     # what a partial templates/ folder takes from imgkit
    roots = [("pkg", PACKAGE_DIR), ("images", selection.images),
             ("templates", selection.templates_dir)]
    compat = selection.compat_file
    return {"roots": [(label, str(root)) for label, root in
                      roots + ([("shipped", shipped)] if shipped is not None else [])],
            "libraries": [str(path) for path in _library_sources()],
            "selection": selection.options, "compat": str(compat) if compat is not None else None,
            "beside": str(selection.images.resolve().parent / "templates")}


def remember(engine: Engine, name: str, inputs: PlanInputs, key: str, ca_bundle: str | None,
             stamps: list[Stamp], base_ages: dict[str, int]) -> None:
    """Write the entry `name` when every image of `stamps` is up to date, within its size
    budget, on a base young enough; else leave the cache as it is (the next build judges
    again)."""
    socket = engine.socket_path
    if socket is None:                      # the replay asks the engine over its local socket
        return
    seen: dict[str, ImageInfo | None] = {}
    freshness = check_freshness(engine, stamps, seen)
    made = {ref: engine.made_at(ref) for ref in base_ages}
    if not all(f.fresh for f in freshness.values()) or too_old(made, base_ages):
        return
    results = [up_to_date(s.tag, freshness[s.tag]) for s in stamps]
    if overruns(results, stamps):
        return
    results = with_added(results, stamps, lambda ref: _size(seen, engine, ref))
    for ref in base_ages:
        if ref not in seen:
            seen[ref] = engine.image(ref)
    if any(info is None for info in seen.values()):
        return
    write(name, {"inputs": inputs, "plan_key": key, "ca_bundle": ca_bundle, "socket": socket,
                 "ids": {ref: info.id for ref, info in seen.items() if info is not None},
                 "bases": {ref: [made[ref] or 0.0, limit] for ref, limit in base_ages.items()},
                 "head": report.summary_head(results), "rows": report.summary_rows(results)})


def _size(seen: dict[str, ImageInfo | None], engine: Engine, ref: str) -> int | None:
    info = seen[ref] if ref in seen else engine.image(ref)
    return info.size if info else None


def base_days(engine: Engine, ref: str, now: float | None = None) -> int | None:
    """How many days ago the base's filesystem was made (its first layer); None when the
    engine cannot say."""
    made = engine.made_at(ref)
    return None if made is None else age_days(made, now or time.time())


def too_old(made: dict[str, int | None], base_ages: dict[str, int],
            now: float | None = None) -> bool:
    """Whether a base is older than its families' max_base_age allows (or cannot be dated):
    the next build makes it again, as make_bases judges it."""
    when = now or time.time()
    return any(past_age(made.get(ref), limit, when) for ref, limit in base_ages.items())


def summarize(engine: Engine, results: list[Result], stamps: list[Stamp], started: float,
              json_file: Path | None, builder: str | None = None) -> list[Result]:
    """The build's summary (with what each image adds to its parent) on stdout and, when
    asked, as JSON."""
    def size_of(ref: str) -> int | None:
        info = engine.image(ref)
        return info.size if info else None
    results = with_added(results, stamps, size_of)
    seconds = time.monotonic() - started
    report.print_build_summary(results, seconds)
    if json_file is not None:
        write_output(json_file, report.build_json(results, seconds, builder), "--json")
    return results
