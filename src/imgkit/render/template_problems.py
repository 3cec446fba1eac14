"""A team's broken template said as exit 2 at its file and line, in words, with the nearest
name where the template misspelled one: a variable, a field of one, an include, a filter.
Never Jinja's traceback, nor the name of one of imgkit's classes."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from types import TracebackType
from typing import Iterator

import jinja2

from ..errors import UsageError, first_line
from ..matrix.fields import meant

COPY_HINT = ("a template may use only the variables imgkit gives it: start from a copy of "
             "imgkit's own (docs/your-matrix.md#templates)")
UNDEFINED = re.compile(r"^'([^']+)' is undefined$")
NO_ATTRIBUTE = re.compile(r"^'(.+?)(?: object)?' has no attribute '([^']+)'$")
NO_FILTER = re.compile(r"^No (filter|test) named '([^']+)'")


def template_problem(exc: Exception, name: str, templates_dir: Path, env: jinja2.Environment,
                     variables: dict[str, object]) -> UsageError:
    """What went wrong rendering `name` with `variables` (see the module)."""
    if isinstance(exc, jinja2.TemplateSyntaxError):
        where = f"{exc.filename or exc.name or name}:{exc.lineno}"
        unknown = NO_FILTER.match(exc.message or "")
        if unknown:
            known = env.filters if unknown.group(1) == "filter" else env.tests
            return UsageError(f"{where}: no {unknown.group(1)} named {unknown.group(2)!r}",
                              hint=_nearest(unknown.group(2), list(known), "Jinja's"))
        return UsageError(f"{where}: {exc.message}", hint="fix the template, or delete it to "
                          "use the one imgkit ships")
    frames = [tb for tb in _frames(exc.__traceback__)
              if tb.tb_frame.f_code.co_filename.endswith(".j2")]
    where = (f"{frames[-1].tb_frame.f_code.co_filename}:{frames[-1].tb_lineno}" if frames
             else str(templates_dir / name))
    if isinstance(exc, jinja2.TemplateNotFound):
        return UsageError(f"{where}: no template {exc.name!r} in {templates_dir} or imgkit's",
                          hint=_nearest(str(exc.name), env.list_templates(), "the templates"))
    said = first_line(exc)
    undefined = UNDEFINED.match(said)
    if undefined:
        return UsageError(f"{where}: no variable {undefined.group(1)!r}",
                          hint=_nearest(undefined.group(1), list(variables),
                                        "the variables imgkit gives (docs/your-matrix.md#templates)"))
    missing = NO_ATTRIBUTE.match(said)
    source = _line(frames[-1]) if frames else ""
    holder = _holder(missing.group(1), missing.group(2), source, variables) if missing else None
    if missing and holder is not None:
        variable, fields = holder
        return UsageError(f"{where}: {variable} has no {missing.group(2)!r}",
                          hint=_nearest(missing.group(2), fields, f"what {variable} holds"))
    return UsageError(f"{where}: {said}", hint=COPY_HINT)


def _holder(type_name: str, attribute: str, source: str,
            variables: dict[str, object]) -> tuple[str, list[str]] | None:
    """The variable the template read `attribute` of, and the fields it may read there:
    the one the template's line names before `.attribute`, else the only one of the type
    Jinja named (`imgkit.x.FrameworkBuild`; `dict` for a mapping)."""
    written = re.findall(rf"\b(\w+)\s*\.\s*{re.escape(attribute)}\b", source)
    named = [v for v in written if v in variables]
    typed = [v for v, value in variables.items()
             if (isinstance(value, dict) and type_name == "dict") or (
                 dataclasses.is_dataclass(value) and not isinstance(value, type)
                 and type_name.endswith(type(value).__name__))]
    chosen = named[:1] or (typed if len(typed) == 1 else [])
    if not chosen:
        return None
    value = variables[chosen[0]]
    if isinstance(value, dict):
        return chosen[0], [str(k) for k in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return chosen[0], [f.name for f in dataclasses.fields(value)]
    return None


def _line(frame: TracebackType) -> str:
    """The template's line the frame was at, as written."""
    try:
        lines = Path(frame.tb_frame.f_code.co_filename).read_text().splitlines()
        return lines[frame.tb_lineno - 1] if 0 < frame.tb_lineno <= len(lines) else ""
    except OSError:
        return ""


def _nearest(name: str, known: list[str], whose: str) -> str:
    """'did you mean ...?', else the names there are."""
    close = meant(name, known, cutoff=0.6)
    if close:
        return f"did you mean {close!r}?"
    shown = sorted(k for k in known if not k.startswith("_"))
    return f"{whose}: {', '.join(shown[:40])}" if shown else ""


def _frames(tb: TracebackType | None) -> Iterator[TracebackType]:
    while tb is not None:
        yield tb
        tb = tb.tb_next

