"""The site's pages, rendered with Jinja from the grid's rows: index.html (the grid with
its filters) and images/<image>.html. Self-contained: styles and the filters' script are
inline, nothing is fetched, so the pages work from file:// and any static host."""
from __future__ import annotations

from pathlib import Path

import jinja2

from ..registry.cosign import VERDICT_TYPE
from ..shipped import PACKAGE_DIR, version
from .grid import ABSENT, COMPARED, FAILED, NONE, PASSED, UNVERIFIED, Row
from .plots import layers_chart, throughput_chart

MARKS = {PASSED: "[ok]", UNVERIFIED: "[~]", FAILED: "[X]", NONE: "[ ]", ABSENT: "-"}


def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(PACKAGE_DIR.joinpath("site/templates"))),
                              autoescape=True, trim_blocks=True, lstrip_blocks=True,
                              undefined=jinja2.StrictUndefined)


def write_site(out: Path, rows: list[Row], *, verdicts: int, skipped: list[str],
               outdated: bool = False, locked: bool = False, signer: str = "") -> list[Path]:
    """Every page of the site under `out`; the files written. `outdated`: whether what
    waits for each image was asked, `locked`: whether the matrix has locks (a column of
    the grid each); `signer`: whom the registry's verdicts were checked against ("" when
    no registry was read)."""
    env = _environment()
    platforms = [c.platform for c in rows[0].cells] if rows else []
    states = [c.state for r in rows for c in r.cells]
    counts = {"passed": states.count(PASSED), "unverified": states.count(UNVERIFIED),
              "failed": states.count(FAILED), "none": states.count(NONE),
              "signed": sum(bool(c.signed and c.signed.ok) for r in rows for c in r.cells),
              "promoted": sum(c.signed is not None for r in rows for c in r.cells)}
    filters = {key: sorted({getattr(r, key) for r in rows if getattr(r, key)})
               for key in ("family", "cuda", "framework")}
    (out / "images").mkdir(parents=True, exist_ok=True)
    index = out / "index.html"
    index.write_text(env.get_template("index.html.j2").render(
        rows=rows, platforms=platforms, counts=counts, filters=filters, marks=MARKS,
        verdicts=verdicts, skipped=skipped, version=version(), throughput=throughput_chart(rows),
        outdated=outdated, locked=locked, signer=signer))
    written = [index]
    page = env.get_template("image.html.j2")
    for row in rows:
        path = out / "images" / f"{row.slug}.html"
        path.write_text(page.render(row=row, marks=MARKS, verdict_type=VERDICT_TYPE,
                                    layers=layers_chart(row.layers), compared=COMPARED,
                                    signer=signer))
        written.append(path)
    return written
