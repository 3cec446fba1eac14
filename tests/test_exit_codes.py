"""The exit-code table of docs/getting-started.md, held to the CLI: every example in it runs, against the
real engine, and exits with the code its row gives."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROW = re.compile(r"^\| (\d+) \|.*\| `([^`]+)` \|$")


def examples() -> list[tuple[int, str]]:
    text = (ROOT / "docs" / "getting-started.md").read_text()
    table = text[text.index("## Exit codes"):]
    table = table[:table.index("\n\n", table.index("| code |"))]
    return [(int(m.group(1)), m.group(2)) for m in map(ROW.match, table.splitlines()) if m]


def test_the_table_has_an_example_for_every_code() -> None:
    assert {code for code, _ in examples()} == {0, 1, 2, 3}


@pytest.mark.docker
@pytest.mark.parametrize("code,command", examples())
def test_each_example_exits_as_the_readme_says(code: int, command: str, base_image: str,
                                               tmp_path: Path) -> None:
    words = shlex.split(command)
    env = dict(os.environ)
    while "=" in words[0]:                       # VAR=value prefixes
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words[0] == "imgkit" and base_image == "imgkit/debian:bookworm"
    env["IMGKIT_CACHE_DIR"] = str(tmp_path / "cache")
    result = subprocess.run([sys.executable, "-m", "imgkit", *words[1:]], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == code, result.stdout[-2000:] + result.stderr[-2000:]
    if code:
        assert "Traceback" not in result.stderr
