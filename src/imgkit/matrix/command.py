"""`imgkit list`: the validated matrix, parents first, or what it costs (--stats)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from ..selection import Selection
from . import report
from .load import load_plan
from .stats import measured_costs, stats


def list_plan(selection: Selection, *, json_file: Path | None = None, with_stats: bool = False,
              from_build: Path | None = None, builders: Sequence[int] = (1, 4, 16),
              gpus: Sequence[int] = (1, 8)) -> None:
    plan = load_plan(selection)
    if not with_stats:
        report.print_plan(plan)
        if json_file is not None:
            json_file.write_text(report.plan_json(plan))
        return
    measured = measured_costs(from_build) if from_build is not None else {}
    found = stats(plan, measured, tuple(builders) or (1,), tuple(gpus) or (1,))
    print(report.stats_listing(found), flush=True)
    if json_file is not None:
        json_file.write_text(json.dumps({**report.plan_document(plan),
                                         "stats": report.stats_json(found)}, indent=1))
