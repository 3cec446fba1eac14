"""The CLI's documentation cannot drift from the CLI: docs/cli.md is made from it (every
option of every command). What the other pages say of the CLI: tests/test_docs.py."""
from __future__ import annotations

import os
import re
from pathlib import Path

import typer

from imgkit.cli import app, reference

ROOT = Path(__file__).resolve().parent.parent


def commands() -> dict[str, set[str]]:
    """'verify', 'export bake', ... -> every flag it takes."""
    found: dict[str, set[str]] = {}

    def walk(command: object, path: list[str]) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                walk(sub, [*path, name])
            return
        found[" ".join(path)] = {o for p in command.params for o in (*p.opts, *p.secondary_opts)  # type: ignore[attr-defined]
                                 if o.startswith("-") and not getattr(p, "hidden", False)}
    walk(typer.main.get_command(app), [])
    return found


def test_docs_cli_md_is_what_the_cli_says() -> None:
    path = ROOT / "docs" / "cli.md"
    if os.environ.get("IMGKIT_UPDATE_GOLDEN") == "1":
        path.write_text(reference())
    assert path.read_text() == reference(), "run `make docs`"
    text = path.read_text()
    for name, flags in commands().items():
        section = text[text.index(f"## imgkit {name}\n"):]
        section = section[:section.find("\n## ", 1) if "\n## " in section[1:] else len(section)]
        missing = {f for f in flags if not re.search(rf"`{re.escape(f)}[` ]", section)}
        assert not missing, (name, missing)
