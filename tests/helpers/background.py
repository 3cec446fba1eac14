"""The test tools `make test` sets up beside the first tests instead of before them (the
scanners and Podman, compiled from their Go modules; gitlab-ci-local, whose npm install
compiles a native module): each set-up script writes $TOOLS/NAME.status (building, done or
failed), and a test that needs the tool waits here while it says building."""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import NoReturn

import pytest

TOOLS = Path(os.environ.get("IMGKIT_TOOLS") or Path.home() / ".cache" / "imgkit-tools")


def wait_while_building(name: str, wait: float) -> None:
    """Returns once $TOOLS/NAME.status no longer says building (or after `wait` seconds);
    a machine whose tools were set up by hand has no status file and waits for nothing."""
    status = TOOLS / f"{name}.status"
    deadline = time.monotonic() + wait
    while status.is_file() and status.read_text().strip() == "building" and time.monotonic() < deadline:
        time.sleep(2)


def missing(what: str, set_up_by: str) -> NoReturn:
    """Fails in CI (its set-up must provide every tool), skips elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"no {what}: {set_up_by} sets it up")
    pytest.skip(f"no {what}: run {set_up_by}")


def gitlab_ci_local(wait: float = 600) -> str:
    """gitlab-ci-local, as .ci/setup-gitlab-ci-local.sh installs it."""
    wait_while_building("gitlab-ci-local", wait)
    found = shutil.which("gitlab-ci-local")
    if found is None:
        missing("gitlab-ci-local", ".ci/setup-gitlab-ci-local.sh")
    return found
