"""The command line: the only package that imports typer. `app` is the `imgkit` command;
`reference()` is docs/cli.md, made from it."""
from __future__ import annotations

from . import (
    exports,  # noqa: F401 - registers the `imgkit export` commands
    rebuilds,  # noqa: F401 - registers `imgkit reproduce`
    shipping,  # noqa: F401 - registers `imgkit promote`
)
from .commands import app
from .reference import reference

__all__ = ["app", "reference"]
