"""The GitHub Actions the generated workflows use, pinned by commit (data/actions.yaml, the
one reviewed list): `uses:` values, and the release comments added to the written file."""
from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from .. import yamlload
from ..errors import Inconsistent

DATA = Path(__file__).parent / "data" / "actions.yaml"
COMMIT = re.compile(r"^[0-9a-f]{40}$")


@functools.cache
def pins() -> dict[str, dict[str, str]]:
    """action -> {release, commit}, each commit a full SHA."""
    data: Any = yamlload.safe_load(DATA.read_text())
    bad = [name for name, pin in data.items()
           if not COMMIT.match(str(pin.get("commit"))) or not pin.get("release")]
    if bad:
        raise Inconsistent(f"{DATA}: {', '.join(bad)} not pinned to a full commit SHA")
    return {name: {"release": str(pin["release"]), "commit": str(pin["commit"])}
            for name, pin in data.items()}


def uses(action: str) -> str:
    """`owner/name@<commit>` of an action the data file pins."""
    pin = pins().get(action)
    if pin is None:
        raise Inconsistent(f"{action} is not in {DATA}: every action a workflow uses is pinned")
    return f"{action}@{pin['commit']}"


def with_releases(text: str) -> str:
    """Each `uses: owner/name@<commit>` line of a written workflow, with `# <release>`."""
    commits = {pin["commit"]: pin["release"] for pin in pins().values()}
    return re.sub(r"(uses: [\w.-]+/[\w.-]+@([0-9a-f]{40}))$",
                  lambda m: f"{m.group(1)} # {commits.get(m.group(2), 'unknown release')}",
                  text, flags=re.M)
