"""The files a user asks a command to write (`--json FILE`, `--junit FILE`...): their folder
is made when it is missing, as CI jobs name files in folders no step has made yet, and a
file that cannot be written is a usage error naming the option and the path (exit 2), never
a traceback.

`-` is stdout, as with curl, jq or trivy: `imgkit verify IMAGE --json - | jq .` reads the
JSON alone, because what the command says to a person goes to stderr for that run."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TextIO

from .errors import UsageError

STDOUT = Path("-")
# stdout as the command found it, once an output named `-` took it (empty until then)
_data_stream: list[TextIO] = []


def claim_stdout() -> bool:
    """An output named `-` takes stdout, so the command's words for a person go to stderr
    from now on. False when another output of the same command line took it already."""
    if sys.stdout is sys.stderr and _data_stream:
        return False
    _data_stream[:] = [sys.stdout]
    sys.stdout = sys.stderr
    return True


def write_output(path: Path, text: str | bytes, option: str, required: bool = False) -> None:
    """Write `text` to `path`, the file the user gave `option` (`required`: one the command
    cannot do without), or to stdout for `-`."""
    if path == STDOUT and _data_stream:
        _write_stdout(_data_stream[0], text)
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot write it ({exc.strerror or exc})",
                         hint="name a file in a folder this user can write" +
                         ("" if required else f", or leave out {option}"))


def _write_stdout(stream: TextIO, text: str | bytes) -> None:
    if isinstance(text, bytes):
        stream.flush()
        stream.buffer.write(text)
    else:
        stream.write(text if text.endswith("\n") else text + "\n")
    stream.flush()


def unwritable(path: Path) -> str:
    """Why the file `path` cannot be written ("" when it can), its folder made if missing:
    asked when the command starts, so that a bad --json fails before the work, not after."""
    if path.is_dir():
        return f"{path} is a folder: name a file in it"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"{path}: cannot make its folder ({exc.strerror or exc})"
    if not os.access(path.parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return f"{path}: this user cannot write it"
    return ""


def output_folder(path: Path, option: str) -> Path:
    """The folder the user gave `option` to write into, made when it is missing; one that
    cannot be made or written is exit 2 naming both, before anything is written there."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot make the folder ({exc.strerror or exc})",
                         hint="name a folder this user can write") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: this user cannot write in it",
                         hint="name a folder this user can write")
    return path
