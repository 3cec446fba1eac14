"""`imgkit render`: one self-contained build context per image of the selection, in the form
the builder that will build it takes: BuildKit gets the CA bundle and package index as
secret mounts of the pip steps, the legacy builder from `imgkit build`'s settings server."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ..console import stderr_line
from ..errors import UsageError
from ..lock.files import read_locks
from ..matrix.load import load_plan
from ..matrix.plan import Plan
from ..outputs import output_folder
from ..selection import Selection
from .contexts import Context, render_plan, write_context

FORMS = ("auto", "docker", "buildx")
BUILDKIT_HINT = ("BuildKit form: docker build --secret id=imgkit-ca-bundle,src=/etc/ssl/certs/"
                 "ca-certificates.crt [--secret id=imgkit-index-url,env=PIP_INDEX_URL] DIR/<image>")
LEGACY_HINT = "legacy-builder form: DOCKER_BUILDKIT=0 docker build DIR/<image>"


def render_contexts(selection: Selection, *, buildkit: bool = False) -> list[Context]:
    return render_selection(selection, load_plan(selection), buildkit=buildkit)


def render_selection(selection: Selection, plan: Plan, *, buildkit: bool = False,
                     platforms: tuple[str, ...] = ()) -> list[Context]:
    """The plan's contexts, each image with a lock (images/locks/) installing from it; a
    stale lock is exit 2. With `platforms`: each platform's images, under their local names."""
    locks = read_locks(selection.images, plan)
    if not platforms:
        return render_plan(plan, selection.templates_dir, buildkit=buildkit,
                           locks=locks)
    return [context for platform in platforms
            for context in render_plan(plan, selection.templates_dir, locks=locks,
                                       buildkit=buildkit, platform=platform)]


def cli_builds_with_buildkit() -> bool:
    """Does this host's `docker build` go to BuildKit? Docker's CLI (23+) does unless
    DOCKER_BUILDKIT=0, or when its buildx plugin is missing (it then falls back, warning)."""
    setting = os.environ.get("DOCKER_BUILDKIT", "").strip().lower()
    if setting in ("0", "false"):
        return False
    if setting in ("1", "true"):
        return True
    if shutil.which("docker") is None:
        return True             # whatever builds it, a current one is BuildKit
    try:
        return subprocess.run(["docker", "buildx", "version"], capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def render(selection: Selection, *, out: Path, form: str = "auto") -> list[Path]:
    if form not in FORMS:
        raise UsageError(f"--engine {form}: unknown form", hint="auto, docker or buildx")
    buildkit = form == "buildx" or (form == "auto" and cli_builds_with_buildkit())
    contexts = render_contexts(selection, buildkit=buildkit)
    output_folder(out, "--out")
    written = [write_context(c, out) for c in contexts]
    for path in written:
        print(path)
    stderr_line(BUILDKIT_HINT if buildkit else LEGACY_HINT)
    return written
