"""Files shipped inside the imgkit package (compat data, GPU peaks, image helpers, probe).

pip installs packages as plain files, so a path beside this module is enough;
importlib.resources would add ~20 ms of start-up to every command, no-op builds included.
"""
from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
