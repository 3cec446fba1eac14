"""The no-op build: when the plan cache knows the selection and the engine shows every image
up to date, answer with the summary and nothing else. Light imports only: this is all a
no-op `imgkit build` loads when its memo (memo.py) does not answer (see entry.py)."""
from __future__ import annotations

import time
from pathlib import Path

from ..engine import Engine, ImageInfo, connect
from ..render.stamp import Stamp
from . import plancache, report
from .freshness import check_freshness
from .memo import Recorder, age_days, past_age
from .outcome import Result, up_to_date
from .weights import overruns, with_added


def answer_if_up_to_date(key: str, started: float, json_file: Path | None = None,
                         recorder: Recorder | None = None) -> bool:
    """The no-op path: when the plan cache knows this selection and the engine shows every
    image up to date, print the summary and return True (and write the memo the next run
    answers from, when given a `recorder`); otherwise print nothing."""
    known = plancache.lookup(key)
    if known is None:
        return False
    stamps = known.stamps
    engine = connect()                                        # unreachable: exit 3
    seen: dict[str, ImageInfo | None] = {}
    freshness = check_freshness(engine, stamps, seen)
    made = base_dates(engine, known.base_ages)
    if not all(f.fresh for f in freshness.values()) or too_old(made, known.base_ages):
        return False                                          # the full path makes them
    results = [up_to_date(s.tag, freshness[s.tag]) for s in stamps]
    if overruns(results, stamps):
        return False                                          # the full path reports them
    results = summarize(engine, results, stamps, started, json_file)
    if recorder is not None and engine.socket_path is not None:
        for ref in known.base_ages:
            if ref not in seen:
                seen[ref] = engine.image(ref)
        ids = {ref: info.id for ref, info in seen.items() if info is not None}
        if len(ids) == len(seen):
            recorder.write(engine.socket_path, ids,
                           {ref: [made[ref] or 0.0, limit] for ref, limit in known.base_ages.items()},
                           report.summary_head(results), report.summary_rows(results))
    return True


def base_days(engine: Engine, ref: str, now: float | None = None) -> int | None:
    """How many days ago the base's filesystem was made (its first layer); None when the
    engine cannot say."""
    made = engine.made_at(ref)
    return None if made is None else age_days(made, now or time.time())


def base_dates(engine: Engine, base_ages: dict[str, int]) -> dict[str, int | None]:
    """When each base held to an age was made (None where the engine cannot say)."""
    return {ref: engine.made_at(ref) for ref in base_ages}


def too_old(made: dict[str, int | None], base_ages: dict[str, int],
            now: float | None = None) -> bool:
    """Whether a base is older than its families' max_base_age allows (or cannot be dated):
    then the full path makes it again, as make_bases judges it."""
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
        json_file.write_text(report.build_json(results, seconds, builder))
    return results
