"""imgkit site from the verdicts this machine recorded (no --verdicts): each image judged by
the recorded verdict of the image id its tag points at now, as publishing judges it: the
mini stack's CUDA image verified here shows its true verdict, its python parent none."""
from __future__ import annotations

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
    assert "2 images on 1 platform(s): 0 passed, 1 passed without a GPU, 0 failed, 1 with no verdict" in index
    row = index[index.index(mini_stack.mini):]
    assert "passed, GPU not verified" in row[:600]
    page = (tmp_path / "site" / "images").glob("*cuda*.html")
    assert any("check: " not in p.read_text() and "cudart.version" in p.read_text() for p in page)
