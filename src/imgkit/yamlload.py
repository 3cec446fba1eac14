"""The one module that uses PyYAML. Parsing goes through libyaml when PyYAML was built with
it: about ten times faster than the pure-Python loader, which matters because every command
parses the matrix and the compat data before doing anything (a no-op `imgkit build`
included). Writing (pipelines, manifests) keeps the document's key order, one line a value."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import SpecError

SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
YAMLError = yaml.YAMLError


def safe_load(text: str) -> Any:
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader, C or Python


def read_file(path: Path) -> Any:
    """A user's YAML file, or a SpecError naming the file and where it broke."""
    try:
        return safe_load(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(str(path), "(file)", f"cannot be read: {exc}")
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise SpecError(str(path), f"line {mark.line + 1}" if mark else "(parse)",
                        f"not valid YAML: {getattr(exc, 'problem', exc)}")


def dump(document: Any) -> str:
    """`document` as block-style YAML in its own key order, no line folded."""
    return yaml.safe_dump(document, sort_keys=False, width=1000, default_flow_style=False)
