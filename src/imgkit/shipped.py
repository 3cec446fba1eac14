"""What ships with imgkit: its distribution's name and version, and the files inside the
package (compat data, GPU peaks, image helpers, the probe, the default templates).

pip installs packages as plain files, so a path beside this module is enough;
importlib.resources would add ~20 ms of start-up to every command, no-op builds included.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
# The name on PyPI: `imgkit` there is an unrelated project (a wkhtmltoimage wrapper).
DISTRIBUTION = "imgkit-gpu"
# Templates: inside an installed wheel (setup.py copies them), else the checkout's templates/.
SHIPPED_TEMPLATES = (PACKAGE_DIR / "templates", PACKAGE_DIR.parent.parent / "templates")


@lru_cache(maxsize=1)
def version() -> str:
    """The installed distribution's version ("unknown" when run from a bare checkout)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed
    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


def install_command() -> str:
    """How a CI job installs exactly this imgkit."""
    current = version()
    pinned = f"=={current}" if current != "unknown" else ""
    return f"python3 -m pip install {DISTRIBUTION}{pinned}"


def default_templates() -> Path | None:
    """The templates imgkit ships, for a matrix folder with no templates/ beside it."""
    return next((path for path in SHIPPED_TEMPLATES if path.is_dir()), None)


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
