"""imgkit site from the verdicts this machine recorded (no --verdicts): each image judged by
the recorded verdict of the image id its tag points at now, as publishing judges it: the
mini stack's CUDA image verified here shows its true verdict, and its python parent what
was recorded for it (none, unless an earlier test verified it)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import MiniStack, mini_project

pytestmark = pytest.mark.docker
IMGKIT = [sys.executable, "-m", "imgkit"]


def test_the_site_of_what_was_verified_here(mini_stack: MiniStack, namespace: str, tmp_path: Path) -> None:
    verified = subprocess.run([*IMGKIT, "verify", mini_stack.mini, "--gpus", "none"],
                              capture_output=True, text=True, timeout=600)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    project = mini_project(tmp_path / "project")
    done = subprocess.run([*IMGKIT, "site", "--images", str(project / "images"),
                           "--namespace", namespace, "--out", str(tmp_path / "site")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    index = (tmp_path / "site" / "index.html").read_text()
    row = index[index.index(mini_stack.mini):]
    assert "passed, GPU not verified" in row[:600]
    # the parent: what this machine recorded for its image id now (an earlier test module
    # may have verified it in this session's namespace), and "no verdict" when nothing
    from imgkit.engine import connect
    from imgkit.verify import tickets
    info = connect().image(mini_stack.python)
    assert info is not None
    record = tickets.document(info.id)
    said = ("no verdict" if record is None else "failed" if not record.passed
            else "passed" if record.gpu_checked else "passed, GPU not verified")
    parent = index[index.index(f">{mini_stack.python}<"):]
    assert said in parent[:600], (said, parent[:600])
    pages = [p.read_text() for p in (tmp_path / "site" / "images").glob("*cuda*.html")]
    assert any("check: " not in p and "cudart.version" in p for p in pages)
    # what the engine holds of it: its size on the grid, its layers drawn on its page
    assert "not here" not in row[:600] and re.search(r'<td class="size">[0-9.]+ [MG]B</td>', row[:600])
    assert any('<figure id="layers">' in p and "pip install" in p for p in pages)
