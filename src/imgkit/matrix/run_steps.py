"""Package installs in a family's `run:` steps, which the family's own keys make better: a
`pip install requests` there escapes the exact pins, the lock, the constraints that keep the
stack below (a bare `pip install torch` would replace it) and the SBOM; an `apt-get install
jq` escapes `apt:`'s lists and clean-up (and fails: the lists are removed after each layer).
What installs a file the family copied in (`pip install /opt/app/app.whl`, `-e /srv/app`)
is the step's own business, and stays."""
from __future__ import annotations

import re
import shlex

from ..errors import SpecError

OPERATORS = {"&&", "||", ";", "|", "&", "(", ")"}
RUNNERS = {"sudo", "env", "exec", "command", "nice", "time"}
PIP = re.compile(r"^(?:.*/)?pip3?(?:\.\d+)?$")
PYTHON = re.compile(r"^(?:.*/)?python3?(?:\.\d+)?$")
APT = re.compile(r"^(?:.*/)?apt(?:-get)?$")
# pip's options that take a value: the word after them is no package
PIP_VALUED = {"-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i",
              "--index-url", "--extra-index-url", "-f", "--find-links", "--target", "-t",
              "--prefix", "--root", "--python", "--platform", "--python-version"}


def install_problems(file: str, run: list[str]) -> list[SpecError]:
    """A problem for each `run:` step that installs packages by name with pip or apt."""
    found = []
    for index, step in enumerate(run):
        for tool, names in _installs(step):
            key = "pip" if tool == "pip" else "apt"     # apt-get, apt
            found.append(SpecError(
                file, f"run[{index}]", f"installs {', '.join(names)} with {tool}, past the "
                f"family's `{key}:` list", hint=(
                    f"name {'them' if len(names) > 1 else 'it'} in `pip:`, pinned exactly "
                    f"(e.g. {names[0]}==VERSION): locked, held to the stack below and listed "
                    "in the SBOM" if key == "pip" else
                    f"name {'them' if len(names) > 1 else 'it'} in `apt:`: installed with the "
                    "package lists, which each layer removes after it")))
    return found


def _installs(step: str) -> list[tuple[str, list[str]]]:
    """(tool, the packages it names) for each `pip install` or `apt-get install` in `step`."""
    commands: list[list[str]] = [[]]
    for line in step.replace("\\\n", " ").splitlines():     # a line of a `|` block: a command
        try:
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            words = list(lexer)
        except ValueError:                # an unclosed quote: the shell's problem, said at build
            continue
        commands.append([])
        for word in words:
            if word in OPERATORS:
                commands.append([])
            else:
                commands[-1].append(word)
    found = []
    for command in commands:
        tool, rest = _installer(command)
        names = _named(tool, rest) if tool else []
        if names:
            found.append((tool, names))
    return found


def _installer(command: list[str]) -> tuple[str, list[str]]:
    """('pip' or 'apt-get', the words after `install`) where `command` installs, else ('', [])."""
    words = list(command)
    while words and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]) or words[0] in RUNNERS):
        words = words[1:]                 # VAR=x, sudo, env: the command comes after them
    if not words:
        return "", []
    word, after = words[0], words[1:]
    if PIP.match(word) and after[:1] == ["install"]:
        return "pip", after[1:]
    if PYTHON.match(word) and after[:3] == ["-m", "pip", "install"]:
        return "pip", after[3:]
    if word == "uv" and after[:2] == ["pip", "install"]:
        return "pip", after[2:]
    if APT.match(word) and "install" in after:
        return word.rsplit("/", 1)[-1], after[after.index("install") + 1:]
    return "", []


def _named(tool: str, words: list[str]) -> list[str]:
    """The packages `words` name by name (not a path, a URL or a file of the image's)."""
    names, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = tool == "pip" and word in PIP_VALUED
        elif not re.search(r"[/:]|\.(whl|tar\.gz|zip|deb)$", word) and word != ".":
            names.append(word)
    return names
