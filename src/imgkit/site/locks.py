"""Each image's lock as the site shows it: whether it still matches the matrix, and the pip
and apt packages it pins (lock/files.py reads them, as `imgkit lock --check` does). An image
with no apt or pip step of its own has nothing to lock; a lock that cannot be read is named
and the site goes on without the locks."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import SpecError
from ..lock.files import apt_pins, lock_states, parse_lock
from ..matrix.targets import Plan


@dataclass(frozen=True)
class LockView:
    path: str
    state: str                    # "matches the matrix", "no lock" or "stale: ..."
    pip: tuple[str, ...] = ()     # "numpy==2.0.1", with " ; <marker>" on a multi-platform image
    apt: tuple[str, ...] = ()     # "libssl3=3.0.17-1~deb12u2"

    @property
    def current(self) -> bool:
        return self.state == "matches the matrix"


def lock_views(images: Path, plan: Plan) -> tuple[dict[str, LockView], list[str]]:
    """tag -> its lock, for every image with an apt or pip step; and a line per lock that
    could not be read (then no lock is shown: their states depend on each other's)."""
    try:
        states = lock_states(images, plan)
    except SpecError as exc:
        return {}, [f"{exc.file}: {exc.reason}"]
    except (OSError, ValueError) as exc:          # unreadable, or not text
        return {}, [f"{images / 'locks'}: {exc}"]
    views = {}
    for state in states:
        if state.content is None:
            views[state.tag] = LockView(str(state.path), state.problem)
            continue
        text = state.content.decode()
        pins = parse_lock(str(state.path), text)[1]
        views[state.tag] = LockView(
            str(state.path), state.problem or "matches the matrix",
            tuple(f"{p.name}=={p.version}" + (f" ; {p.marker}" if p.marker else "") for p in pins),
            tuple(apt_pins(text)))
    return views, []
