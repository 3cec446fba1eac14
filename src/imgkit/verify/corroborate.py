"""The probe's word is checked against what the host can see for itself.

Every library file the report names (and its size) and the user it ran as are compared
with the image, read through the engine: a `python3` that replays a report copied from
another image names files this image does not have. What stays trusted is what only the
image's own interpreter can tell: what its imports did and what its GPU work measured.
Pure logic: the engine's answers come in as data.
"""
from __future__ import annotations

from typing import Callable

from ..engine import PathStat
from .facts import Report
from .verdict import FAIL, PASS, Check

MAX_PATHS = 256      # far above any real image; more is a report no check should trust
SHOWN = 3


def paths_to_check(report: Report) -> list[str]:
    """Every file the report says the image has: library copies (by their real path, where
    the size is), the names they were found under, and where bare names resolved."""
    paths: list[str] = []
    for family in report.libraries.families.values():
        for copy in family.copies:
            paths += [copy.realpath, copy.path]
    paths += [r.path for r in report.bare_names.values() if r.loadable and r.path]
    paths += list(report.libraries.driver_libs_in_image)
    paths += list(report.system.cuda_compat)       # it turns a driver-floor warning into a pass
    return list(dict.fromkeys(p for p in paths if p))


def file_checks(report: Report, stat: Callable[[list[str]], dict[str, PathStat | None]]) -> Check:
    paths = paths_to_check(report)
    if len(paths) > MAX_PATHS:
        return Check("report.matches-image", FAIL, "files the image has", f"{len(paths)} paths",
                     f"the report names {len(paths)} files, more than any real image: not trusted")
    found = stat(paths)
    problems = [f"{p} is not in the image" for p in paths if found.get(p) is None]
    sizes = {c.realpath: c.size for f in report.libraries.families.values() for c in f.copies}
    for path, size in sizes.items():
        seen = found.get(path)
        if seen is not None and seen.size != size:
            problems.append(f"{path} is {seen.size} bytes in the image, the report says {size}")
    if problems:
        more = f" (and {len(problems) - SHOWN} more)" if len(problems) > SHOWN else ""
        return Check("report.matches-image", FAIL, "files the image has", f"{len(problems)} mismatch(es)",
                     "the report does not match the image: " + "; ".join(problems[:SHOWN]) + more)
    return Check("report.matches-image", PASS, "files the image has", f"{len(paths)} files agree")


def user_check(report: Report, image_user: str) -> Check:
    """The image's default user (Config.User: '', a name or a uid, optionally ':group')."""
    user = image_user.split(":", 1)[0]
    said = f"{report.system.user} ({report.system.uid})"
    if not user:
        ok = report.system.uid == 0
        wanted = "root (0)"
    elif user.isdigit():
        ok = report.system.uid == int(user)
        wanted = f"uid {user}"
    else:
        ok = report.system.user == user
        wanted = user
    return Check("report.user", PASS if ok else FAIL, wanted, said, "" if ok else
                 f"the report does not match the image: it ran as {said}, the image's user is {wanted}")
