"""What pydantic found wrong in a family file, in imgkit's words: each problem with its file,
line, key and a hint, a key of another kind of family named as such."""
from __future__ import annotations

import datetime as dt
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import SpecError
from .family_model import KIND_WORDS, KINDS, NARROWING, homes_of
from .fields import AXIS_PATTERNS, as_list_hint, kind_of, meant

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


def plainly(error: Any, unknown: str, model: type[BaseModel] | None = None,
            words: frozenset[str] = frozenset()) -> tuple[str, str]:
    """(reason, hint) for one pydantic error of a file that is not a family file, in imgkit's
    words: `unknown` for a key the model has not (with the nearest key `model` has there),
    "required" for one it lacks, a value of another kind named as YAML read it (with how to
    write it; a text given for a list in `words` is split as a command line), else pydantic's
    own message with the value given."""
    kind_of_error, given, loc = error["type"], error.get("input"), error["loc"]
    if kind_of_error == "imgkit":                 # refused in imgkit's own words already
        return error["ctx"]["reason"], error["ctx"]["hint"]
    if kind_of_error == "extra_forbidden":
        return unknown, nearest_key(model, loc) if model else ""
    if kind_of_error == "missing":
        return "required", ""
    if kind_of_error == "list_type":
        return (f"must be a list, got {kind_of(given)}",
                as_list_hint(given, words=str(loc[-1]) in words))
    if kind_of_error == "string_type":
        return (f"expected text, got {kind_of(given)}",
                "give it a value" if given is None else "write it in quotes")
    if kind_of_error in ("model_type", "dict_type", "model_attributes_type"):
        return f"must be a mapping of keys to values, got {kind_of(given)}", ""
    if kind_of_error in ("int_parsing", "int_type", "int_from_float"):
        return f"expected a whole number, got {kind_of(given)}", ""
    if kind_of_error in ("bool_parsing", "bool_type"):
        return f"expected true or false, got {kind_of(given)}", ""
    if kind_of_error.startswith("date"):
        return f"expected a date, got {kind_of(given)}", _date_hint(given)
    message = str(error["msg"])[:1].lower() + str(error["msg"])[1:]
    return (f"{message}, got {kind_of(given)}" if kind_of_error.startswith("string_")
            else message), ""


def _date_hint(given: Any) -> str:
    """YYYY-MM-DD, with the given date so written where it reads as one (2027-5-31)."""
    parts = str(given).split("-") if isinstance(given, str) else []
    if len(parts) == 3 and all(p.isdigit() for p in parts) and len(parts[0]) == 4:
        try:
            return f"YYYY-MM-DD: {dt.date(*map(int, parts)).isoformat()}"
        except ValueError:
            pass
    return "YYYY-MM-DD, e.g. 2027-03-31"


def nearest_key(model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """'did you mean ...' for an unknown key at `loc`, from the keys the model has there
    (each as the file writes it: its alias where it has one), else the keys it has."""
    keys = keys_at(model, loc[:-1])
    if not keys:
        return ""
    close = meant(str(loc[-1]), keys, cutoff=0.6)
    return f"did you mean {close!r}?" if close else f"it has: {', '.join(keys)}"


def keys_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys a file may write at `loc` inside `model` (list indexes walked through)."""
    here: Any = model
    for part in loc:
        if isinstance(part, int) or part == "[key]":
            continue
        value = _mapping_value(here)
        if value is not None:       # a key the file names (a framework, a version): its value
            here = value
            continue
        fields = _fields(here)
        field = next((f for name, f in fields.items() if part in (name, f.alias)), None)
        if field is None:
            return []
        here = field.annotation
    return [f.alias or name for name, f in _fields(here).items()]


def _mapping_value(annotation: Any) -> Any:
    """The value type of the mapping `annotation` holds (through Annotated, X | None), or None."""
    if typing.get_origin(annotation) is dict:
        return typing.get_args(annotation)[1]
    if isinstance(annotation, type):
        return None
    return next((v for v in map(_mapping_value, typing.get_args(annotation)) if v is not None), None)


def _fields(annotation: Any) -> dict[str, Any]:
    """The fields of the model `annotation` holds (through list[...], X | None, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return dict(annotation.model_fields)
    for inner in typing.get_args(annotation):
        found = _fields(inner)
        if found:
            return found
    return {}


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
        return error["ctx"]["reason"], _into_folder(loc, error["input"]) or error["ctx"]["hint"]
    if kind_of_error == "extra_forbidden":
        return _unknown(kind, loc)
    if kind_of_error == "missing":
        return _missing(kind, loc)
    if kind_of_error in ("model_type", "dict_type"):
        what = "axis to values" if loc == ("axes",) else "keys to values"
        if loc[:1] in (("exclude",), ("include",)):
            what = "axis to value"
        given = error["input"]
        hint = (f"user: {{name: {given}}} (uid 1000 unless `uid:` says)"
                if loc == ("user",) and isinstance(given, str) else "")
        return f"must be a mapping of {what}, got {_a(given)}", hint
    if kind_of_error == "string_type":
        return f"expected text, got {_a(error['input'])}", ""
    return error["msg"][:1].lower() + error["msg"][1:], ""


def _into_folder(loc: tuple[Any, ...], given: Any) -> str:
    """The hint for a `files:` destination written as a folder (`config.py: /etc/app/`, as
    Dockerfile's COPY takes it): the file's own path in that folder."""
    if len(loc) != 2 or loc[0] != "files" or not isinstance(given, str) or not given.endswith("/"):
        return ""
    path = "/" + "/".join(filter(None, [*given.split("/"), Path(str(loc[1])).name]))
    return (f"the file's own path in the image: {path!r} (`files:` copies one file a line, "
            "to the path given, never into a folder)")


def _a(value: Any) -> str:
    return kind_of(value)


def _unknown(kind: str, loc: tuple[Any, ...]) -> tuple[str, str]:
    if len(loc) > 1 and loc[0] in AXIS_HOLDERS:
        axis = meant(str(loc[-1]), list(AXIS_PATTERNS))
        return "unknown axis", (f"did you mean {axis!r}? " if axis else "") + \
            f"known axes: {', '.join(AXIS_PATTERNS)}"
    if len(loc) > 1 and loc[0] == "extends":
        return "unknown axis", f"narrow by: {', '.join(NARROWING)}"
    key = str(loc[-1])
    homes = homes_of(key) if len(loc) == 1 else []
    if homes:
        return (f"not a key of {KIND_WORDS[kind]}",
                f"`{key}` belongs to " + " or ".join(KIND_WORDS[h] for h in homes)
                + "; see docs/matrix.md")
    near = meant(key, list(KINDS[kind].model_fields)) if len(loc) == 1 else ""
    if near:
        return "unknown key", f"did you mean {near!r}?"
    if len(loc) == 1 and key.lower() in WORDS_OF_OTHER_FILES:
        return "unknown key", _said_elsewhere(kind, key.lower())
    known = ", ".join(KINDS[kind].model_fields)
    return "unknown key", f"{KIND_WORDS[kind]} has: {known}"


# A Dockerfile's, compose file's or requirements file's word for what a family file says
# another way (a team translating its Dockerfiles writes `expose:`, `copy:`, `from:`): the
# keys it may be here (the first this kind of family has), and why.
WORDS_OF_OTHER_FILES: dict[str, tuple[tuple[str, ...], str]] = {
    "expose": (("ports",), "Dockerfile's EXPOSE"),
    "copy": (("files",), "Dockerfile's COPY, a file a line"),
    "add": (("files",), "Dockerfile's ADD, a file a line"),
    "label": (("labels",), "Dockerfile's LABEL"), "environment": (("env",), "ENV"),
    "requirements": (("pip",), "exact pins"),
    "packages": (("pip",), "exact pins; Debian packages are `apt:`"),
    "from": (("extends", "base"), "Dockerfile's FROM: an extension builds on another family's "
             "images, a stack or framework family on a base image of yours"),
    "image": (("repository",), "with `tag:`, the images' names"),
    "name": (("family",), "the family's name; its images' name is `repository:`"),
    "arg": ((), "imgkit writes each image's values into its Dockerfile: there are no build "
            "arguments to pass (a template of your own: docs/your-matrix.md#templates)"),
    "healthcheck": ((), "imgkit writes no HEALTHCHECK: Kubernetes ignores it; give your "
                    "Deployment a liveness probe"),
    "volume": ((), "imgkit writes no VOLUME: mount a volume when the container runs"),
    "volumes": ((), "imgkit writes no VOLUME: mount a volume when the container runs"),
}


def _said_elsewhere(kind: str, word: str) -> str:
    """The hint for `word`, another file's name for a key: the key where this kind of
    family has it, else which kind has it."""
    keys, why = WORDS_OF_OTHER_FILES[word]
    here = [key for key in keys if key in KINDS[kind].model_fields]
    if here:
        return f"did you mean {here[0]!r}? ({why})"
    if keys:
        return f"{why}; `{keys[0]}` belongs to " + " or ".join(KIND_WORDS[h] for h in homes_of(keys[0]))
    return why


def _missing(kind: str, loc: tuple[Any, ...]) -> tuple[str, str]:
    if loc == ("axes", "cuda"):
        return "required axis is missing", "e.g. cuda: [\"12.8\"]"
    if loc == ("axes",):
        return "required key is missing", "e.g. axes: {cuda: [\"12.8\"]}"
    return f"required for {KIND_WORDS[kind]}", ""
