"""imgkit as a user runs it: a subprocess of `python -m imgkit`, in the repository by default."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .images import ROOT


def imgkit(*args: str, env: dict[str, str] | None = None,
           cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "imgkit", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "COLUMNS": "200", **(env or {})}, timeout=120)
