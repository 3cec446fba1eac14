"""What `imgkit publish`, `merge` and `promote` print and write: a bar per image pushed
(in a terminal), the summary, JSON and the CI job's Markdown summary."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..console import append_step_summary, columns, flat, tally, transfer_bars
from ..outputs import write_output
from .push import Published


class PushBars:
    """A bar per image being pushed (bytes of the layers the registry lacked), on stderr
    when it is a terminal; nothing in CI logs, where the progress lines say enough."""

    def __init__(self) -> None:
        self.layers: dict[str, dict[str, tuple[int, int]]] = {}   # image -> layer -> (sent, size)
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> PushBars:
        self._progress = transfer_bars()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def sent(self, image: str) -> tuple[int, int]:
        """(bytes sent, bytes to send) for the image so far."""
        layers = self.layers.get(image, {}).values()
        return sum(s for s, _ in layers), sum(t for _, t in layers)

    def update(self, image: str, layer: str, sent: int, size: int) -> None:
        self.layers.setdefault(image, {})[layer] = (sent, size)
        if self._progress is None:
            return
        if image not in self._tasks:
            self._tasks[image] = self._progress.add_task(f"pushing {image}", total=None)
        done, total = self.sent(image)
        self._progress.update(self._tasks[image], completed=done, total=total)


def publish_summary(results: list[Published], seconds: float) -> str:
    """One row per image and destination: where it went, its digest, what points at it."""
    rows = [(r.image, r.destination, r.status, r.digest, ", ".join(r.tags), r.detail)
            for r in results]
    total = tally(r.status for r in results)
    table = columns(("image", "destination", "status", "digest", "tags", "note"), rows) \
        if rows else []
    return "\n".join([f"imgkit publish: {len(results)} in {seconds:.1f} s ({total or 'nothing'})",
                      *table])


def publish_json(results: list[Published], seconds: float) -> str:
    import dataclasses
    import json
    return json.dumps({"seconds": round(seconds, 2), "published": [
        {**dataclasses.asdict(r), "reference": r.reference or None} for r in results]}, indent=1)


def write_published(results: list[Published], seconds: float, json_file: Path | None) -> None:
    """The publish/promote summary on stdout, as JSON when asked, and as the job summary."""
    print(publish_summary(results, seconds), flush=True)
    if json_file is not None:
        write_output(json_file, publish_json(results, seconds), "--json")
    append_step_summary(publish_markdown(results))


def publish_markdown(results: list[Published]) -> str:
    def cell(text: str) -> str:
        return flat(text).replace("|", "\\|")
    lines = ["### imgkit publish", "", "| image | destination | status | digest | tags | note |",
             "|---|---|---|---|---|---|"]
    lines += [f"| `{r.image}` | `{r.destination}` | {r.status} | `{r.digest}` | "
              f"{cell(', '.join(r.tags))} | {cell(r.detail)} |" for r in results]
    return "\n".join(lines) + "\n\n"

