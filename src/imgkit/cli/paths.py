"""The parsers of options whose empty value (an unset shell variable) would be read as a
default: a path as the current folder, --namespace as imgkit's. Refused instead; and a file
the command writes is checked before any work."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from ..outputs import STDOUT, claim_stdout, unwritable


def given_path(text: str | Path) -> Path:
    """A path option's value; an empty one (`--out "$OUT"` with OUT unset) is refused, not
    read as the current folder. click hands a parameter's default through the parser too,
    already a Path (`imgkit init` with no folder), and that is taken as it is."""
    if isinstance(text, Path):
        return text
    if not text.strip():
        raise typer.BadParameter("an empty path (an unset variable?): give a file or folder")
    return Path(text)


def output_file(text: str | Path) -> Path:
    """A file the command writes (--json, --junit...): its folder is made now, and a path
    that cannot be written is refused before any work, not after a GPU verify. `-` is
    stdout (outputs.claim_stdout)."""
    path = given_path(text)
    if path == STDOUT:
        if not claim_stdout():
            raise typer.BadParameter("another output already writes to stdout ('-'): name a "
                                     "file for one of them")
        return path
    why = unwritable(path)
    if why:
        raise typer.BadParameter(why)
    return path


def path_option(*names: str, **settings: Any) -> Any:
    return typer.Option(*names, parser=given_path, **settings)


def output_option(*names: str, **settings: Any) -> Any:
    return typer.Option(*names, parser=output_file, **settings)


def path_argument(*names: str, **settings: Any) -> Any:
    return typer.Argument(*names, parser=given_path, **settings)


def given_name(text: str) -> str:
    """--namespace's value; an empty one (`--namespace "$NS"` with NS unset) is refused, not
    read as the default (imgkit), where another team's images may be."""
    if not text.strip():
        raise typer.BadParameter("an empty prefix (an unset variable?): name one, or leave the "
                                 "option out for the project file's")
    return text
