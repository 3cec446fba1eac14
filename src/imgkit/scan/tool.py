"""Where a scanner's binary is: the variable that names it, else PATH, else where
.ci/build-scanner.sh builds it (~/.cache/imgkit-tools/bin); none is the host's fault."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..errors import HostError


def find_tool(binary: str, env: str, used_by: str, build: str) -> Path:
    """`binary`, as $`env` names it, else on PATH, else as .ci/build-scanner.sh built it;
    exit 3 saying how to build it (`build`) when none runs."""
    named = os.environ.get(env)
    if named:
        if not os.access(named, os.X_OK):
            raise HostError(f"{env}={named}: not an executable")
        return Path(named)
    built = Path.home() / ".cache" / "imgkit-tools" / "bin" / binary
    found = shutil.which(binary) or str(built)
    if not os.access(found, os.X_OK):
        raise HostError(f"no {binary} on this machine: {used_by} runs it", hint=f"build it: {build}")
    return Path(found)
