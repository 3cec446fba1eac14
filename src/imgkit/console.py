"""The terminal, below every stage: one console per stream (rich, imported on first use:
~40 ms with its tables, which a no-op `imgkit build` never pays), errors as one paragraph,
progress lines whole and unstyled, and the plain-text helpers every stage's report uses.
Plain text keeps every tag whole and greppable in CI logs, where a rich table would cut it."""
from __future__ import annotations

import functools
import threading
import time
from typing import TYPE_CHECKING, Any, Iterable, Sequence

if TYPE_CHECKING:
    from rich.console import Console


@functools.lru_cache(maxsize=2)
def console(stderr: bool = False) -> Console:
    from rich.console import Console
    return Console(stderr=stderr, highlight=False, soft_wrap=True)  # whole lines in CI logs


def print_error(message: str, hint: str = "") -> None:
    """An error for a person: one paragraph and its hint, never a traceback."""
    err = console(stderr=True)
    # messages quote user input ("[/namespace]" is text, not a style)
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True)
    if hint:
        err.print(f"  hint: {hint}", highlight=False, markup=False)


def print_warning(message: str, hint: str = "") -> None:
    """Something a person should fix that did not stop the command."""
    err = console(stderr=True)
    err.print(f"[bold yellow]warning:[/] {escape(message)}", highlight=False, markup=True)
    if hint:
        err.print(f"  hint: {hint}", highlight=False, markup=False)


def stderr_line(line: str) -> None:
    """A progress line (build, publish, promote, export), whole and unstyled."""
    console(stderr=True).print(line, highlight=False, markup=False)


def append_step_summary(markdown: str) -> None:
    """Add to the CI job's summary page ($GITHUB_STEP_SUMMARY) when there is one."""
    import os
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a") as out:
            out.write(markdown)


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit in ("B", "KB") else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


def columns(header: tuple[str, ...], rows: Sequence[tuple[str, ...]],
            right: frozenset[int] = frozenset()) -> list[str]:
    """Aligned plain-text columns, a rule under the header; no cell is ever cut."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        cells = [cell.rjust(w) if i in right else cell.ljust(w)
                 for i, (cell, w) in enumerate(zip(row, widths))]
        return "  ".join(cells).rstrip()

    return [line(header), line(tuple("-" * w for w in widths)), *(line(row) for row in rows)]



def flat(text: str) -> str:
    """`text` on one line: every run of whitespace one space."""
    return " ".join(text.split())


def tally(statuses: Iterable[str]) -> str:
    """"2 built, 1 up-to-date", in the order the statuses first appear."""
    counts: dict[str, int] = {}
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in counts.items())


def escape(text: str) -> str:
    """`text` shown as it is where console markup is on ("[/namespace]" is text, not a style)."""
    from rich.markup import escape as rich_escape
    return rich_escape(text)


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A table in the terminal (cells fold, never cut); cells may carry console markup."""
    from rich.table import Table
    table = Table(title=title, show_lines=False)
    for column in header:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row)
    console().print(table)


def transfer_bars() -> Any:
    """A started rich Progress of bars with bytes, speed and time on stderr when it is a terminal;
    None elsewhere (a CI log), where progress lines say enough. The caller stops it."""
    err = console(stderr=True)
    if not err.is_terminal:
        return None
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TransferSpeedColumn,
    )
    bars = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                    TransferSpeedColumn(), TimeElapsedColumn(), console=err)
    bars.start()
    return bars


def elapsed(seconds: float) -> str:
    """"8 s", "1:12", "1:02:05": how long something has run."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Activity:
    """What is running now, a row per thing with what it is doing and for how long, redrawn
    in place under the lines printed (rich's Live) when stderr is a terminal. Elsewhere (a
    CI log) nothing is drawn: the plain lines the caller prints are the record. Rows may be
    set from several threads (parallel builds)."""

    def __init__(self, terminal: Console | None = None) -> None:
        self._console = terminal
        self._rows: dict[str, tuple[str, float]] = {}     # key -> (what it does, since)
        self._lock = threading.Lock()
        self._live: Any = None

    def __enter__(self) -> Activity:
        import sys
        if self._console is None and not sys.stderr.isatty():
            return self                  # a CI log: rich is not even imported for it
        err = self._console or console(stderr=True)
        if err.is_terminal:
            from rich.live import Live
            self._live = Live(self, console=err, refresh_per_second=4, transient=True)
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    @property
    def drawn(self) -> bool:
        return self._live is not None

    def start(self, key: str, doing: str) -> None:
        with self._lock:
            self._rows[key] = (doing, time.monotonic())

    def doing(self, key: str, what: str) -> None:
        """What `key` does now; its time runs on from when it started."""
        with self._lock:
            started = self._rows.get(key, ("", time.monotonic()))[1]
            self._rows[key] = (what, started)

    def finish(self, key: str) -> None:
        with self._lock:
            self._rows.pop(key, None)

    def __rich_console__(self, shown: Any, options: Any) -> Any:
        """A line per row: the key (a tag) whole, what it does cut to what the width leaves,
        and its time at the end; a line too narrow for what it does shows the time alone."""
        from rich.text import Text
        now = time.monotonic()
        with self._lock:
            rows = list(self._rows.items())
        width = max((len(k) for k, _ in rows), default=0)
        for key, (what, since) in rows:
            took = elapsed(now - since)
            room = options.max_width - width - len(took) - 4
            said = what if len(what) <= room else what[:max(room - 1, 0)] + "…"
            line = Text(key.ljust(width), style="cyan")
            line.append(f"  {said}".ljust(room + 2) if room >= 8 else "")
            line.append(f"  {took}")
            yield line
