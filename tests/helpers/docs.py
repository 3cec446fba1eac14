"""The YAML examples of the docs and the README, as a team would copy them."""
from __future__ import annotations

import re
from typing import Any

import yaml

from .images import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```ya?ml\n(.*?)^```", re.S | re.M)


def examples() -> list[tuple[str, str, Any]]:
    """(where, its text, what it parses to) of every YAML block of the pages."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in BLOCK.finditer(text):
            where = f"{page.relative_to(ROOT)}:{text[:match.start()].count(chr(10)) + 1}"
            found.append((where, match.group(1), yaml.safe_load(match.group(1))))
    return found


def families() -> list[tuple[str, str, dict[str, Any]]]:
    return [(w, t, d) for w, t, d in examples() if isinstance(d, dict) and "family" in d]
