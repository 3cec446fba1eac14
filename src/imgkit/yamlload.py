"""YAML parsing through libyaml when PyYAML was built with it: about ten times faster than
the pure-Python loader, which matters because every command parses the matrix and the
compat data before doing anything (a no-op `imgkit build` included)."""
from __future__ import annotations

from typing import Any

import yaml

SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
YAMLError = yaml.YAMLError


def safe_load(text: str) -> Any:
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader, C or Python
