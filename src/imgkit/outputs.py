"""The files a user asks a command to write (`--json FILE`, `--junit FILE`...): their folder
is made when it is missing, as CI jobs name files in folders no step has made yet, and a
file that cannot be written is a usage error naming the option and the path (exit 2), never
a traceback."""
from __future__ import annotations

from pathlib import Path

from .errors import UsageError


def write_output(path: Path, text: str, option: str) -> None:
    """Write `text` to `path`, the file the user gave `option`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot write it ({exc.strerror or exc})",
                         hint=f"name a file in a folder this user can write, or leave out {option}")
