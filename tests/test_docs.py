"""The docs a newcomer follows hold to the code: every link resolves (file and heading), every
`imgkit ...` command line a page shows names a real command and only options it has, and
every option a page names on its own is one imgkit has (or one of the other tools' the
pages explain, listed here). docs/cli.md is generated and checked in test_cli_reference."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import typer.main

from imgkit.cli import app

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]+\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`([^`\n]+)`")
INVOCATION = re.compile(r"(?<![\w-])imgkit ((?:export )?[a-z][a-z0-9-]*)((?:[^`\n|;&#)]|\|(?=\S))*)")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])\b")
ROOT_FLAGS = {"--version", "--help", "-h", "--install-completion", "--show-completion"}
# Other tools' options the pages explain (docker, pip, skopeo, cosign, buildx, pytest, ...)
FOREIGN = {"--all", "--preserve-digests",          # skopeo copy
           "--arch",                                # debootstrap
           "--architectures",                       # mmdebstrap
           "--baseline", "--cold",                  # bench/*.py
           "--hash", "--no-cache", "--no-compile",  # pip's lock lines and install, docker build
           "--durations",                           # pytest
           "--metadata-file", "--allow",            # docker buildx bake
           "--mount"}                               # a Dockerfile RUN


def commands() -> dict[str, set[str]]:
    """'verify', 'export bake', ... -> every flag it takes (deprecated ones left out)."""
    found: dict[str, set[str]] = {}

    def walk(command: Any, path: list[str]) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                walk(sub, [*path, name])
            return
        found[" ".join(path)] = {o for p in command.params for o in (*p.opts, *p.secondary_opts)
                                 if o.startswith("-") and not getattr(p, "hidden", False)}
    walk(typer.main.get_command(app), [])
    return found


def invocations(code: str) -> Iterator[tuple[str, str]]:
    """(command, the rest of its line) of each `imgkit ...` in command position: at the
    start, after a prompt or a shell separator, after VAR=value words or a path to it."""
    for match in INVOCATION.finditer(code):
        before = code[:match.start()].rstrip()
        words = before.split()
        if (not words or before.endswith(("$", "&&", ";", "|", "(", "||"))
                or all(re.match(r"^[A-Z_][A-Z0-9_]*=\S*$", w) for w in words[:-1])
                and (re.match(r"^[A-Z_][A-Z0-9_]*=\S*$", words[-1]) or words[-1].endswith("/"))):
            yield match.group(1), match.group(2)


def code_of(text: str) -> Iterator[str]:
    """Each line of a fenced block, and each inline code span outside them."""
    for block in FENCE.findall(text):
        yield from (line for line in block.splitlines() if not line.lstrip().startswith("#"))
    yield from INLINE.findall(FENCE.sub("", text))


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text())
    return {slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


def test_every_link_resolves_to_a_file_and_a_heading() -> None:
    broken = []
    for page in PAGES:
        for target in LINK.findall(FENCE.sub("", page.read_text())):
            if re.match(r"^[a-z]+:", target):
                continue                                    # https:, mailto: ...
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            if not path.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_every_command_a_page_shows_is_real_with_real_options() -> None:
    known = commands()
    wrong = []
    for page in PAGES:
        if page.name == "cli.md":
            continue
        for code in code_of(page.read_text()):
            for name, rest in invocations(code):
                if name not in known and name != "export":
                    wrong.append(f"{page.name}: `imgkit {name}` is no command")
                    continue
                for flag in FLAG.findall(rest):
                    if flag not in known.get(name, set()) | ROOT_FLAGS:
                        wrong.append(f"{page.name}: `imgkit {name}` has no {flag} ({code.strip()})")
    assert not wrong, "\n".join(wrong)


def test_every_option_a_page_names_alone_exists() -> None:
    """An inline span that starts with an option (`--signing-key K`) names one of imgkit's,
    or of the other tools the pages explain; one that starts with an imgkit command's name
    (`verify --gpus none`) is held to that command; another tool's command line is its own."""
    known = commands()
    ours = set().union(*known.values()) | ROOT_FLAGS
    wrong = []
    for page in PAGES:
        if page.name == "cli.md":
            continue
        for code in INLINE.findall(FENCE.sub("", page.read_text())):
            words = code.split()
            command = next((c for c in sorted(known, key=len, reverse=True)
                            if words[:len(c.split())] == c.split()), None)
            if command is not None:
                allowed = known[command] | ROOT_FLAGS
            elif words[0].startswith("-"):
                allowed = ours | FOREIGN
            else:
                continue                                    # imgkit ... (above), or another tool
            wrong += [f"{page.name}: {flag} (in `{code}`)" for flag in FLAG.findall(code)
                      if flag not in allowed]
    assert not wrong, "\n".join(wrong)


def test_the_readme_is_a_landing_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 200
    for page in ("getting-started.md", "your-matrix.md", "cli.md"):
        assert f"docs/{page}" in readme
