"""The check file a family of the project names (`checks:`), found by the family's name as
an image carries it (org.imgkit.family): what `imgkit verify` of a project's image judges, as
its CI verify job does. A read of the family files' text only (no validation: `imgkit list`
says what is wrong with them), so a plain verify stays light: PyYAML (about a hundredth of
a second to import) is loaded only when a file could answer, one whose text holds both the
family's name and "checks" as whole names, not inside a longer one ("app" in
"app-tools"; an extension family's file names its parent whole, so it is still read).
However a file spells them, it holds their letters so, but for a double-quoted escape
sequence."""
from __future__ import annotations

import re
from pathlib import Path


def family_checks(images: Path, family: str) -> Path | None:
    """The check file of `family` among the family files in `images`, beside its family file;
    None when no file declares that family or it names no check file."""
    if not images.is_dir():
        return None
    files = sorted([*images.glob("*.yaml"), *images.glob("*.yml")])
    texts = {path: _text(path) for path in files}
    named, key = _whole(family), _whole("checks")
    if not any(key.search(text) and named.search(text) for text in texts.values()):
        return None                  # no file names a check file for this family
    from .. import yamlload
    for path in files:
        if not named.search(texts[path]):
            continue                 # cannot declare the family
        try:
            raw = yamlload.safe_load(texts[path])     # the text read above, not the file again
        except yamlload.YAMLError:
            continue                 # a broken file: `imgkit list` says why
        if isinstance(raw, dict) and raw.get("family") == family:
            checks = raw.get("checks")
            return path.parent / checks if isinstance(checks, str) and checks else None
    return None


def _whole(name: str) -> re.Pattern[str]:
    """`name` with no letter, digit, `_`, `.` or `-` on either side: where a YAML scalar or
    key can be exactly that name."""
    return re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])")


def _text(path: Path) -> str:
    """The file's text ("" when unreadable or not UTF-8: `imgkit list` refuses it too)."""
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return ""
