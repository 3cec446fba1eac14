"""Reading an SBOM imgkit wrote: valid CycloneDX, and its components by name."""
from __future__ import annotations

import json
from typing import Any

from .validators import cyclonedx_error


def valid(text: str) -> dict[str, Any]:
    error = cyclonedx_error(text)
    assert error is None, error
    return json.loads(text)


def components(document: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    """(kind, name) -> versions, kind being the purl type or the component's group."""
    out: dict[tuple[str, str], set[str]] = {}
    for c in document.get("components", []):
        kind = c["purl"].split(":")[1].split("/")[0] if "purl" in c else c.get("group", c["type"])
        out.setdefault((kind, c["name"]), set()).add(c.get("version", ""))
    return out
