"""Files shipped inside the imgkit package (compat data, GPU peaks, image helpers, probe).

pip installs packages as plain files, so a path beside this module is enough;
importlib.resources would add ~20 ms of start-up to every command, no-op builds included.
"""
from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def probe_zip() -> bytes:
    """The probe package as a zip, importable as `imgkit_probe` inside any python3 >= 3.8;
    the same bytes every time (fixed dates), so what ships it can be compared."""
    import io
    import zipfile
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        root = PACKAGE_DIR.joinpath("probe")
        for entry in sorted(root.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".py"):
                info = zipfile.ZipInfo(f"imgkit_probe/{entry.name}", (2020, 1, 1, 0, 0, 0))
                archive.writestr(info, entry.read_bytes())
    return buf.getvalue()
