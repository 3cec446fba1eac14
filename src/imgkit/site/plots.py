"""The site's two pictures, drawn by pygal as inline SVG (nothing fetched; pygal's only
script is its inline config): each image's GEMM throughput as a share of its GPU's peak,
and an image's size layer by layer."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pygal
from pygal.style import Style

if TYPE_CHECKING:
    from .grid import Row
    from .images import Layer

STYLE = Style(background="transparent", plot_background="transparent", font_family="sans-serif",
              colors=("#2f6fb0", "#e08a1e", "#5a9e4b", "#9b59b6"))
PRECISIONS = (("tf32", "TF32"), ("fp16", "FP16"))
MOST_BARS = 40          # images in the throughput chart: beyond that, the lowest (a chart
                        # of hundreds of bars helps no one, and weighs on the grid page)


def _chart(kind: Any, title: str, rows: int, **options: object) -> Any:
    return kind(js=[], disable_xml_declaration=True, explicit_size=True, width=900,
                height=120 + 28 * rows, title=title, style=STYLE, print_values=True,
                legend_at_bottom=True, truncate_label=-1, **options)


def throughput_chart(rows: list[Row]) -> str:
    """A bar per image and GEMM precision: its share of the GPU's dense peak, on the first
    platform that measured it ("" when no verdict measured any)."""
    measured = [(row.tag, cell) for row in rows for cell in row.cells if cell.tf32 or cell.fp16]
    if not measured:
        return ""
    title = "GEMM throughput, share of the GPU's dense peak"
    if len(measured) > MOST_BARS:
        title += f": the {MOST_BARS} lowest of {len(measured)}"
        measured = sorted(measured, key=lambda m: min(
            s for s in (_share(m[1].tf32), _share(m[1].fp16)) if s is not None))[:MOST_BARS]
    chart = _chart(pygal.HorizontalBar, title, len(measured) * len(PRECISIONS), range=(0, 1),
                   value_formatter=lambda v: f"{v:.0%}" if v is not None else "")
    chart.x_labels = [f"{tag} ({cell.platform}, {cell.gpu})" for tag, cell in measured]
    for key, name in PRECISIONS:
        chart.add(name, [_share(getattr(cell, key)) for _, cell in measured])
    return _rendered(chart, "throughput")


def layers_chart(layers: tuple[Layer, ...]) -> str:
    """A bar per layer that holds bytes, oldest first: what each step added, in MB."""
    if not layers:
        return ""
    chart = _chart(pygal.HorizontalBar, "Size per layer (MB), oldest first", len(layers),
                   show_legend=False, value_formatter=lambda v: f"{v:,.1f} MB")
    chart.x_labels = [layer.instruction for layer in layers]
    chart.add("MB", [layer.size / 1e6 for layer in layers])
    return _rendered(chart, "layers")


def _rendered(chart: Any, name: str) -> str:
    """The SVG, its random id made the chart's name: the same inputs give the same page (a
    site kept in git or Pages changes only where the verdicts did). Its only script is
    pygal's inline config: nothing is fetched."""
    svg = str(chart.render(is_unicode=True))
    return svg.replace(str(chart.uuid), f"imgkit-{name}")


def _share(text: str) -> float | None:
    return float(text.rstrip("%")) / 100 if text else None
