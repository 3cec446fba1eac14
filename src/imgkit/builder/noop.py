"""The no-op build: when the plan cache knows the selection and the engine shows every image
up to date, answer with the summary and nothing else. Light imports only: this is all a
no-op `imgkit build` loads (see entry.py)."""
from __future__ import annotations

import time
from pathlib import Path

from ..engine import Engine, connect
from ..render.stamp import Stamp
from . import plancache, report
from .freshness import check_freshness
from .outcome import Result, up_to_date
from .weights import overruns, with_added


def answer_if_up_to_date(key: str, started: float, json_file: Path | None = None) -> bool:
    """The no-op path: when the plan cache knows this selection and the engine shows every
    image up to date, print the summary and return True; otherwise print nothing."""
    known = plancache.lookup(key)
    if known is None:
        return False
    stamps = known.stamps
    engine = connect()                                        # unreachable: exit 3
    freshness = check_freshness(engine, stamps)
    if not all(f.fresh for f in freshness.values()) or too_old(engine, known.base_ages):
        return False
    results = [up_to_date(s.tag, freshness[s.tag]) for s in stamps]
    if overruns(results, stamps):
        return False                                          # the full path reports them
    summarize(engine, results, stamps, started, json_file)
    return True


def base_days(engine: Engine, ref: str, now: float | None = None) -> int | None:
    """How many days ago the base's filesystem was made (its first layer); None when the
    engine cannot say."""
    made = engine.made_at(ref)
    return None if made is None else int(((now or time.time()) - made) // 86400)


def too_old(engine: Engine, base_ages: dict[str, int], now: float | None = None) -> bool:
    """Whether a base is older than its families' max_base_age allows (or cannot be dated):
    then the full path makes it again, as make_bases judges it."""
    for ref, limit in base_ages.items():
        days = base_days(engine, ref, now)
        if days is None or days > limit:
            return True
    return False


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
        json_file.write_text(report.build_json(results, seconds, builder))
    return results
