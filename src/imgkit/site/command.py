"""`imgkit site`: read the verdicts, lay out the grid, write the pages."""
from __future__ import annotations

from pathlib import Path

from ..console import stderr_line
from ..errors import UsageError
from ..matrix.load import load_plan
from ..selection import Selection
from .grid import rows
from .inputs import read_verdicts
from .pages import write_site


def site(selection: Selection, *, verdicts: Path, out: Path) -> int:
    """The site of the selection's images from the verify --json files under `verdicts`;
    a file that cannot be read is named and left out, never counted as a pass."""
    if not verdicts.is_dir():
        raise UsageError(f"--verdicts {verdicts}: no such folder",
                         hint="give the folder the `imgkit verify --json FILE` files are in")
    plan = load_plan(selection)
    found, skipped = read_verdicts(verdicts)
    for line in skipped:
        stderr_line(f"skipped {line}")
    laid_out = rows(plan, found)
    written = write_site(out, laid_out, verdicts=len(found), skipped=skipped)
    stderr_line(f"wrote {len(written)} pages to {out} ({len(laid_out)} images, {len(found)} "
                f"verdict file(s)); open {out / 'index.html'}")
    return 0
