"""`imgkit render`: one self-contained build context per image of the selection."""
from __future__ import annotations

from pathlib import Path

from ..matrix.load import load_plan
from ..selection import Selection
from .contexts import Context, render_plan, write_context


def render_contexts(selection: Selection, *, buildkit_secrets: bool = False) -> list[Context]:
    return render_plan(load_plan(selection), selection.templates_dir,
                       buildkit_secrets=buildkit_secrets)


def render(selection: Selection, *, out: Path) -> list[Path]:
    contexts = render_contexts(selection)
    out.mkdir(parents=True, exist_ok=True)
    written = [write_context(c, out) for c in contexts]
    for path in written:
        print(path)
    return written
