"""Where a CI platform reads its pipeline file: at the root of the git repository the
project is in (a monorepo's project in platform/gpu/ has its workflow at the root's
.github/workflows/), else in the project's own folder. `imgkit ci` writes it there when no
--out is given, and `imgkit init --ci` always does."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

PIPELINES = {"github": Path(".github/workflows/images.yml"), "gitlab": Path(".gitlab-ci.yml")}


def git_top(folder: Path) -> Path | None:
    """The top of the git repository `folder` (or the nearest folder above it that exists)
    is in; None outside one, or without git."""
    start = next((p for p in (folder, *folder.parents) if p.exists()), Path.cwd())
    try:
        found = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=start,
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(found.stdout.strip()) if found.returncode == 0 and found.stdout.strip() else None


def where_read(folder: Path, platform: str) -> Path:
    """The platform's pipeline file for the project in `folder`, relative to `folder`
    (`../../.github/workflows/images.yml` for a monorepo's project)."""
    top = git_top(folder)
    if top is None or top.resolve() == folder.resolve():
        return PIPELINES[platform]
    return Path(os.path.relpath(top.resolve() / PIPELINES[platform], folder.resolve()))
