"""The CLI's documentation cannot drift from the CLI: docs/cli.md is made from it (every
option of every command), and the README's command table names only options that exist,
for every command there is."""
from __future__ import annotations

import os
import re
from pathlib import Path

import typer

from imgkit.cli import app, reference

ROOT = Path(__file__).resolve().parent.parent
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])\b")


def commands() -> dict[str, set[str]]:
    """'verify', 'export bake', ... -> every flag it takes."""
    found: dict[str, set[str]] = {}

    def walk(command: object, path: list[str]) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():   # type: ignore[attr-defined]
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


def test_the_readme_table_names_every_command_and_only_real_options() -> None:
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("| command | what it does |"):]
    table = table[:table.index("\n\n")]
    known = commands()
    seen: set[str] = set()
    for row in table.splitlines()[2:]:
        usage = row.split("`")[1]                       # `imgkit verify TAG [...]`
        words = usage.split()[1:]
        name = next(n for n in sorted(known, key=len, reverse=True)
                    if words[:len(n.split())] == n.split())
        seen.add(name)
        for flag in FLAG.findall(usage):
            assert flag in known[name], f"README: `imgkit {name}` has no {flag}"
    assert seen == set(known), f"commands missing from the README's table: {set(known) - seen}"
