"""What pydantic found wrong in a family file, in imgkit's words: each problem with its file,
line, key and a hint, a key of another kind of family named as such."""
from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..errors import SpecError
from .family_model import KIND_WORDS, KINDS, NARROWING, homes_of
from .fields import AXIS_PATTERNS, as_list_hint, kind_of

Lines = dict[tuple[Any, ...], int]
AXIS_HOLDERS = ("axes", "exclude", "include")


def key_of(loc: tuple[Any, ...]) -> str:
    """('axes', 'cuda', 0) -> 'axes.cuda[0]'; a mapping's key stands for itself."""
    out = ""
    for part in loc:
        if part == "[key]":
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top)"


def line_of(loc: tuple[Any, ...], lines: Lines) -> int | None:
    """The line of the deepest part of `loc` the file has."""
    path = tuple(p for p in loc if p != "[key]")
    while path not in lines and path:
        path = path[:-1]
    return lines.get(path)


def plainly(error: Any, unknown: str) -> tuple[str, str]:
    """(reason, hint) for one pydantic error of a file that is not a family file, in imgkit's
    words: `unknown` for a key the model has not, "required" for one it lacks, a value of
    another kind named as YAML read it (with how to write it), else pydantic's own message."""
    kind_of_error, given = error["type"], error.get("input")
    if kind_of_error == "extra_forbidden":
        return unknown, ""
    if kind_of_error == "missing":
        return "required", ""
    if kind_of_error == "list_type":
        return f"must be a list, got {kind_of(given)}", as_list_hint(given)
    if kind_of_error == "string_type":
        return f"expected text, got {kind_of(given)}", "write it in quotes"
    return str(error["msg"])[:1].lower() + str(error["msg"])[1:], ""


def problems(file: str, kind: str, error: ValidationError, lines: Lines) -> list[SpecError]:
    found = []
    for e in error.errors():
        reason, hint = _said(kind, e)
        found.append(SpecError(file, key_of(e["loc"]), reason, hint=hint,
                               line=line_of(e["loc"], lines)))
    return sorted(found, key=lambda p: p.line or 0)


def _said(kind: str, error: Any) -> tuple[str, str]:
    """(reason, hint) for one pydantic error."""
    loc, kind_of_error = error["loc"], error["type"]
    if kind_of_error == "imgkit":
        return error["ctx"]["reason"], error["ctx"]["hint"]
    if kind_of_error == "extra_forbidden":
        return _unknown(kind, loc)
    if kind_of_error == "missing":
        return _missing(kind, loc)
    if kind_of_error in ("model_type", "dict_type"):
        what = "axis to values" if loc == ("axes",) else "keys to values"
        if loc[:1] in (("exclude",), ("include",)):
            what = "axis to value"
        return f"must be a mapping of {what}, got {_a(error['input'])}", ""
    if kind_of_error == "string_type":
        return f"expected text, got {_a(error['input'])}", ""
    return error["msg"][:1].lower() + error["msg"][1:], ""


def _a(value: Any) -> str:
    return kind_of(value)


def _unknown(kind: str, loc: tuple[Any, ...]) -> tuple[str, str]:
    if len(loc) > 1 and loc[0] in AXIS_HOLDERS:
        return "unknown axis", f"known axes: {', '.join(AXIS_PATTERNS)}"
    if len(loc) > 1 and loc[0] == "extends":
        return "unknown axis", f"narrow by: {', '.join(NARROWING)}"
    key = str(loc[-1])
    homes = homes_of(key) if len(loc) == 1 else []
    if homes:
        return (f"not a key of {KIND_WORDS[kind]}",
                f"`{key}` belongs to " + " or ".join(KIND_WORDS[h] for h in homes)
                + "; see docs/matrix.md")
    known = ", ".join(KINDS[kind].model_fields)
    return "unknown key", f"{KIND_WORDS[kind]} has: {known}"


def _missing(kind: str, loc: tuple[Any, ...]) -> tuple[str, str]:
    if loc == ("axes", "cuda"):
        return "required axis is missing", "e.g. cuda: [\"12.8\"]"
    if loc == ("axes",):
        return "required key is missing", "e.g. axes: {cuda: [\"12.8\"]}"
    return f"required for {KIND_WORDS[kind]}", ""
