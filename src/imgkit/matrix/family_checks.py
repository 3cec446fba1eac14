"""The check file a family of the project names (`checks:`), found by the family's name as
an image carries it (org.imgkit.family): what `imgkit verify` of a project's image judges, as
its CI verify job does. A read of the family files' text only (no validation: `imgkit list`
says what is wrong with them), so a plain verify stays light."""
from __future__ import annotations

from pathlib import Path

from .. import yamlload
from ..errors import SpecError


def family_checks(images: Path, family: str) -> Path | None:
    """The check file of `family` among the family files in `images`, beside its family file;
    None when no file declares that family or it names no check file."""
    if not images.is_dir():
        return None
    for path in sorted([*images.glob("*.yaml"), *images.glob("*.yml")]):
        try:
            raw, _ = yamlload.read_with_lines(path)
        except SpecError:
            continue                 # a broken file: `imgkit list` says why
        if isinstance(raw, dict) and raw.get("family") == family:
            checks = raw.get("checks")
            return path.parent / checks if isinstance(checks, str) and checks else None
    return None
