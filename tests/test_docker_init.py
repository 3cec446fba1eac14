"""A newcomer's first build: `imgkit init`, then the very commands it prints next, run from
inside the project against the real engine (its first image: python and cudart only)."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker


def imgkit(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMGKIT_")}
    return subprocess.run([sys.executable, "-m", "imgkit", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


def test_the_starter_projects_next_steps_build_and_verify_its_first_image(
        engine, namespace, tmp_path):
    started = imgkit(tmp_path, "init", "team", "--namespace", namespace)
    assert started.returncode == 0, started.stderr
    steps = [shlex.split(line.split("#")[0])[1:] for line in started.stdout.splitlines()
             if line.startswith("  imgkit ")]
    assert [s[0] for s in steps] == ["list", "build", "verify"]
    for step in steps:
        done = imgkit(tmp_path / "team" / "images", *step)        # from a folder inside it
        assert done.returncode == 0, (step, done.stdout, done.stderr)
        if step[0] == "build":      # the small image and its python parent, nothing more
            assert "imgkit build: 2 images" in done.stdout, done.stdout
    image = f"{namespace}/cuda:12.8-cudart-py3.11-bookworm"
    info = engine.image(image)
    assert info is not None and info.labels["org.imgkit.cudart"].startswith("12.8.")
    assert engine.image(f"{namespace}/cuda:12.8-runtime-py3.11-bookworm") is None
