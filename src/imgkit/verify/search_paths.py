"""The search paths an image's config sets, PATH, LD_LIBRARY_PATH and PYTHONPATH: an empty
entry (a leading, trailing or doubled ':') or a relative one makes every program of the
image look for commands, shared libraries or Python modules in its working directory,
whatever directory that is. The usual cause is `ENV LD_LIBRARY_PATH=/opt/lib:${LD_LIBRARY_PATH}`
on a parent that sets none: the line ends in ':'. Pure logic over the image's config
(known without a probe).
"""
from __future__ import annotations

from .verdict import WARN, Check

SEARCHED = {"PATH": "commands", "LD_LIBRARY_PATH": "shared libraries",
            "PYTHONPATH": "Python modules"}


def search_path_checks(env: dict[str, str]) -> list[Check]:
    """A warning for each search path with an entry that is not an absolute directory;
    nothing for one that is right (every image sets PATH: a line for it says nothing)."""
    checks = []
    for name, what in SEARCHED.items():
        value = env.get(name)
        if not value:                   # unset, or set empty: the loader ignores an empty one
            continue
        wrong = list(dict.fromkeys(entry for entry in value.split(":") if not entry.startswith("/")))
        if not wrong:
            continue
        said = ", ".join("an empty entry" if not entry else f"the relative {entry!r}"
                         for entry in wrong)
        checks.append(Check(
            f"search path {name}", WARN, "absolute directories only", value,
            f"{said}: its programs look for {what} in whatever directory they run in; where "
            f"the image appends to a {name} its parent may leave unset, write "
            f"/dir${{{name}:+:${name}}} (the ':' only when there is something after it)",
            required=False))
    return checks
