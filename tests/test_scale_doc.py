"""docs/scale.md quotes `imgkit list --stats`: rerun its commands and compare, so the page
cannot drift from what the command computes. And the scheduling model's own properties."""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from imgkit.matrix.load import load_plan
from imgkit.matrix.stats import costs, makespan, stats
from imgkit.selection import Selection

ROOT = Path(__file__).resolve().parent.parent


def quoted_runs() -> list[tuple[list[str], str]]:
    text = (ROOT / "docs" / "scale.md").read_text()
    return [(shlex.split(command), output.strip())
            for command, output in re.findall(r"```console\n\$ (imgkit [^\n]+)\n(.*?)```", text, re.S)]


def test_the_page_quotes_what_the_command_prints() -> None:
    runs = quoted_runs()
    assert len(runs) == 2
    for command, quoted in runs:
        done = subprocess.run([sys.executable, "-m", "imgkit", *command[1:]], cwd=ROOT,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == quoted, " ".join(command)


def test_the_farm_model_is_bounded_by_the_critical_path_and_the_total() -> None:
    plan = load_plan(Selection(ROOT / "images"))
    cost = costs(plan, {})
    found = stats(plan, {}, builders=(1, 2, 4, 1000))
    farm = dict(found.farm)
    assert abs(farm[1] - found.build_seconds) < 1e-6              # one builder: one at a time
    assert abs(farm[1000] - found.critical_seconds) < 1e-6        # unbounded: the longest chain
    assert farm[1] >= farm[2] >= farm[4] >= farm[1000]
    assert makespan(plan, cost, 3) >= found.critical_seconds
    assert found.images == len(plan.targets) == sum(n for _, n in found.by_layer)


def test_measured_numbers_replace_the_model(tmp_path: Path) -> None:
    plan = load_plan(Selection(ROOT / "images", cuda="11.8", only=("paddle:*",)))
    paddle = "paddle:2.6.2-gpu-cuda11.8-cudnn8"
    model = stats(plan)
    measured = stats(plan, {paddle: (1_000, 5.0)})
    assert measured.measured == 1 and model.measured == 0
    assert model.bytes_shared - measured.bytes_shared == 3_100_000_000 - 1_000
