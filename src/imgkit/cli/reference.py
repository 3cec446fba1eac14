"""docs/cli.md: every command with every option, its value and its help, from the CLI itself
(tests/test_cli_reference.py makes it again and fails on drift; `make docs` writes it)."""
from __future__ import annotations

from typing import Any

import typer

from .framework import prose

HEADER = ("# Command-line reference\n\n"
          "Generated from imgkit's own CLI by `make docs`; `tests/test_cli_reference.py` fails "
          "when it drifts. Every command also answers `-h`/`--help`; `imgkit --version` says "
          "which imgkit this is, and `imgkit --install-completion` installs shell completion.\n")


def reference() -> str:
    from .commands import app
    lines = [HEADER]
    walk(typer.main.get_command(app), [], lines)
    return "\n".join(lines).rstrip() + "\n"


def walk(command: Any, path: list[str], lines: list[str]) -> None:
    """A section per command (typer's click objects), in name order."""
    if hasattr(command, "commands"):
        for name in sorted(command.commands):
            walk(command.commands[name], [*path, name], lines)
        return
    lines += [f"## imgkit {' '.join(path)}", "", prose(command.help) or "", ""]
    for param in command.params:
        if param.param_type_name == "argument":
            said = getattr(param, "help", None)
            lines.append(f"- `{param.metavar or str(param.name).upper()}`"
                         + (f": {said}" if said else ""))
        elif param.param_type_name == "option" and not param.hidden:
            lines.append(option_line(param))
    lines.append("")


def option_line(param: Any) -> str:
    value = "" if param.is_flag else f" {param.metavar}"
    flags = ", ".join(f"`{o}{value}`" for o in param.opts)
    flags += "".join(f", `{o}`" for o in param.secondary_opts)
    said = (param.help or "").rstrip()
    if param.multiple and "repeatable" not in said.lower():
        said += " Repeatable."
    if param.show_default and param.default not in (None, (), [], False, ""):
        shown = param.default if not isinstance(param.default, (list, tuple)) else \
            " ".join(map(str, param.default))
        said += f" Default: {shown}."
    if param.envvar:
        said += f" Environment: {param.envvar}."
    return f"- {flags}: {said}"

