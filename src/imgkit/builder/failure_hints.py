"""What to do next when a build step fails, read from the step's own output: a package the
OS's lists lack, a pin the index or the mirror no longer has, pins that conflict, a lock
whose hashes moved, BuildKit's cache naming layers the engine lost. The log lines stay as
they were printed; the hint only says what they mean for the family file."""
from __future__ import annotations

import re
from typing import Callable, Iterable

# BuildKit's cache can name layers the engine's store no longer holds (seen after a partial
# `docker buildx prune`: engine 26 fails the export, engine 28 the next step on the record):
# every bake that reaches one fails so, until the cache is emptied.
STALE_CACHE = ("layer does not exist", "invalid output path")
STALE_CACHE_HINT = ("BuildKit's cache names layers the engine no longer holds (a partial "
                    "`docker buildx prune` leaves it so): empty it with `docker buildx prune "
                    "-af`, then build again")

# A tool's own error line: pip's "ERROR: ...", apt's "E: ..." (as BuildKit's progress and
# the legacy builder's log give them), and those that are no reason (pip's list of the
# releases it skipped, printed before why it failed; its link to the docs after a conflict;
# its resolver's note on what was installed before, printed when the install goes on).
TOOL_ERROR = re.compile(r"^(?:ERROR:|E:)\s(.+)", re.S)
NOTICE = re.compile(r"^(Ignored the following (yanked )?versions|ResolutionImpossible: for help|"
                    r"pip's dependency resolver does not currently take into account)")
COLOUR = re.compile(r"\x1b\[[0-9;]*m")      # the legacy builder colours a step's stderr
LEGACY_STEP = re.compile(r"^Step \d+/\d+ : ")   # the legacy builder's line that starts a step


def tool_error(lines: Iterable[str]) -> str:
    """Why a step failed in its tool's own words: the last error line it printed that is
    no notice ("No matching distribution found for X", "Unable to locate package X"), or
    "" where it printed none (then the step's exit code is all there is). `lines` are a
    build's last; an earlier step's error lines, which did not fail it, are no reason."""
    plain = [COLOUR.sub("", line).strip() for line in lines]
    starts = [i for i, line in enumerate(plain) if LEGACY_STEP.match(line)]
    failing = plain[starts[-1]:] if starts else plain      # the step that failed, alone
    said = [m.group(1).strip() for m in map(TOOL_ERROR.match, failing)
            if m and not NOTICE.match(m.group(1))]
    return said[-1] if said else ""


# (a sign in one line of the step's output, what it means) in the order they are tried
SIGNS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"E: Unable to locate package (\S+)"),
     lambda m: f"the OS's package lists have no {m.group(1)}: check the name in the family's "
               "apt: list (`apt-cache search WORD` in the parent image; Debian and Ubuntu "
               "releases name packages differently)"),
    (re.compile(r"E: Version '([^']+)' for '([^']+)' was not found"),
     lambda m: f"the mirror no longer has {m.group(2)}={m.group(1)} (a release keeps the "
               "newest of each package): pin the version it has now, or leave it unpinned"),
    (re.compile(r"E: Package '([^']+)' has no installation candidate"),
     lambda m: f"{m.group(1)} has no installable version in this OS release (removed, or "
               "only a name other packages provide): name the package that replaces it"),
    (re.compile(r"No matching distribution found for (\S+)"),
     lambda m: f"the package index has no {m.group(1)} for this image's python and platform: "
               "check the pin (`pip index versions NAME`) and that the release ships wheels "
               "for this python"),
    # pip 24-26: "ERROR: Failed building wheel for numpy" (or "Failed to build numpy")
    (re.compile(r"Failed building wheel for (\S+)|^(?:#\d+ [0-9.]+ )?Failed to build (\S+)$"),
     lambda m: f"pip has no wheel of {m.group(1) or m.group(2)} at that pin for this image's "
               "python and platform, and building it from source failed (imgkit's layers carry no "
               "compiler): pin a release that publishes a wheel for this python (`pip index "
               "versions NAME`; an old release often stops at an older python)"),
    (re.compile(r"ResolutionImpossible|conflicting dependencies"),
     lambda m: "pip found no versions that satisfy every pin at once: the lines above name "
               "the packages that conflict; change one of the pins"),
    (re.compile(r"THESE PACKAGES DO NOT MATCH THE HASHES"),
     lambda m: "a file's hash differs from the lock's: the lock is stale or the index "
               "changed the file; run `imgkit lock` again and review what moved"),
)


def failure_hint(lines: Iterable[str]) -> str:
    """What to do about a failed step, from its output (the error and the log's tail); ""
    when nothing in it is known."""
    said = list(lines)
    if any(sign in line for line in said for sign in STALE_CACHE):
        return STALE_CACHE_HINT
    for pattern, meaning in SIGNS:
        for line in said:
            found = pattern.search(line)
            if found:
                return meaning(found)
    return ""
