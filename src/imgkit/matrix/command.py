"""`imgkit list`: the validated matrix, parents first, what it costs (--stats), or what
builds on which CUDA (--known)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from ..outputs import write_output
from ..selection import Selection
from . import report
from .load import load_plan
from .stats import measured_costs, stats


def list_plan(selection: Selection, *, json_file: Path | None = None, with_stats: bool = False,
              from_build: Path | None = None, builders: Sequence[int] = (1, 4, 16),
              gpus: Sequence[int] = (1, 8), known: bool = False) -> None:
    if known:          # what builds on which CUDA: the compat data, the project's merged in
        from .compat import load
        from .known import known_listing
        overlay = selection.compat_overlay
        print(known_listing(load(str(overlay) if overlay else None)), flush=True)
        return
    plan = load_plan(selection)
    if not with_stats:
        report.print_plan(plan)
        if json_file is not None:
            write_output(json_file, report.plan_json(plan), "--json")
        return
    measured = measured_costs(from_build) if from_build is not None else {}
    found = stats(plan, measured, tuple(builders) or (1,), tuple(gpus) or (1,))
    print(report.stats_listing(found), flush=True)
    if json_file is not None:
        write_output(json_file, json.dumps({**report.plan_document(plan),
                                            "stats": report.stats_json(found)}, indent=1), "--json")
