"""What a build says while it works. Every builder reports the same events per image
(start, each log line, how it ended); this turns them into the lines a CI log keeps
("building TAG (why)", "built TAG") and, in a terminal, a live row per image being built:
its running step and how long the image has taken so far."""
from __future__ import annotations

import re

from ..console import Activity, console, escape

# The step a log line starts: the legacy builder's "Step 3/7 : RUN ..." and BuildKit's
# plain progress "[target 3/7] RUN ..." (the vertex number already taken off).
LEGACY_STEP = re.compile(r"^Step (\d+/\d+) : (.*)$")
BUILDKIT_STEP = re.compile(r"^\[[^\]\s]+ (\d+/\d+)\] (.*)$")


def step_of(line: str) -> str | None:
    """"step 3/7: RUN pip install ..." when `line` starts a step, else None."""
    found = LEGACY_STEP.match(line) or BUILDKIT_STEP.match(line)
    return f"step {found.group(1)}: {' '.join(found.group(2).split())}" if found else None


class BuildProgress:
    """The builders' listener: `with BuildProgress(verbose) as listen: ...`."""

    def __init__(self, verbose: bool = False, activity: Activity | None = None) -> None:
        self.verbose = verbose
        self.activity = activity or Activity()

    def __enter__(self) -> BuildProgress:
        self.activity.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.activity.__exit__(*exc)

    def __call__(self, tag: str, event: str, text: str) -> None:
        err = console(stderr=True)
        if event == "log":
            step = step_of(text)
            if step is not None:
                self.activity.doing(tag, step)
            if self.verbose:
                err.print(f"[dim]{escape(tag)}[/] {escape(text)}", markup=True, highlight=False)
        elif event == "start":
            self.activity.start(tag, f"starting ({text})" if text else "starting")
            err.print(f"[cyan]building[/] {escape(tag)} ({escape(text)})", markup=True,
                      highlight=False)
        else:
            self.activity.finish(tag)
            err.print(f"[bold]{escape(event)}[/] {escape(tag)}" + (f": {escape(text)}" if text else ""),
                      markup=True, highlight=False)
