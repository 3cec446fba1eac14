"""What is wrong with a project file, every problem at once and each on its line, in words:
a setting of the wrong kind (`cuda = 12.8`, a number where TOML needs text in quotes), a
name imgkit does not know (with the nearest it does), a selection or label it refuses.
Standard library only, and imported only when a project file has a problem."""
from __future__ import annotations

import re
from pathlib import Path

from .errors import SpecError

SECTIONS = ("select", "cluster", "labels")
KEY = re.compile(r'^\s*"?([A-Za-z0-9_.-]+)"?\s*=\s*(.*?)\s*(?:#.*)?$')
HEADER = re.compile(r"^\s*\[([^\]]+)\]")


def where(text: str, table: str, key: str) -> tuple[int | None, str]:
    """The line (1-based) of `key` in `[table]` ("" for the file's top table; a
    pyproject.toml's tool.imgkit and tool.imgkit.select count as the same), and its value as
    written; (None, "") when the text does not show it plainly."""
    current = ""
    for number, line in enumerate(text.splitlines(), 1):
        header = HEADER.match(line)
        if header:
            current = header.group(1).strip().removeprefix("tool.imgkit").lstrip(".")
            continue
        found = KEY.match(line)
        if found and found.group(1) == key and current == table:
            return number, found.group(2)
    return None, ""


def kind(value: object) -> str:
    if isinstance(value, bool):
        return f"a true/false ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    return "a list" if isinstance(value, list) else "a table" if isinstance(value, dict) \
        else type(value).__name__


def setting(path: Path, text: str, key: str, value: object, wanted: str,
            known: tuple[str, ...]) -> SpecError:
    """A top-level key that is not a setting, or a setting whose value is not `wanted`."""
    line, written = where(text, "", key)
    if key in known and key not in SECTIONS:
        got = "an empty text" if value == "" else kind(value)
        return SpecError(str(path), key, f"expected {wanted}, got {got}", line=line,
                         hint=f'write {key} = "{written or value}"'
                         if isinstance(value, (int, float)) else f'e.g. {key} = "..."')
    if key in SECTIONS:
        return SpecError(str(path), key, f"expected a table, got {kind(value)}", line=line,
                         hint=f"write it as a [{key}] table of its own")
    from difflib import get_close_matches
    near = get_close_matches(key, known, n=1, cutoff=0.6)
    return SpecError(str(path), key, "not a setting", line=line,
                     hint=(f"did you mean {near[0]}? " if near else "") + "settings: "
                     f"{', '.join(known)} (docs/your-matrix.md#the-project-file)")


def selection(path: Path, text: str, key: str, value: object) -> SpecError:
    """A [select] entry imgkit refuses."""
    line, written = where(text, "select", key)
    example = 'cuda = "X.Y", only = [GLOB, ...], platforms = [PLATFORM, ...]'
    if key == "cuda":
        return SpecError(str(path), "select.cuda", f"expected text, got {kind(value)}", line=line,
                         hint=f'write cuda = "{written or value}"' if isinstance(value, (int, float))
                         else example)
    if key in ("only", "platforms"):
        said = f'write {key} = [{written}]' if isinstance(value, str) else example
        return SpecError(str(path), f"select.{key}", f"expected a list of text, got {kind(value)}",
                         line=line, hint=said)
    return SpecError(str(path), f"select.{key}", "not a selection setting", line=line,
                     hint=f"select: {example}")
