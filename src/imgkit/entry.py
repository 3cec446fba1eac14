"""The `imgkit` console entry point: answers a no-op build, and runs a plain verify,
before loading the CLI.

A no-op `imgkit build` must cost well under BuildKit's own cache check, and Python start-up
dominates it; importing typer alone is a third of that. So a plain `imgkit build` with only
selection options is first tried here: if the no-op cache's entry for it still holds
(builder/noopcache.py: standard library only), its summary is printed and that is all.
Anything else (help, --force, --dry-run, any other option, a miss) goes to the typer CLI
from the start, so its parsing, messages and exit codes stay the only ones a user ever sees;
its build writes the entry the next run answers from.

`imgkit verify IMAGE [--gpus G] [--checks FILE] [--json FILE]`, the command CI runs most,
is measured against `docker run` plus the framework's import, and typer's start-up (a tenth
of a second on a small machine) is most of what verify adds to that. That one form calls
the same verify with the CLI's defaults and reports an error the way the CLI does; any
other verify command line goes to the CLI.
tests/test_entry.py keeps both fast paths in step with cli.py.
"""
from __future__ import annotations

import sys
import time


def try_noop_build(argv: list[str]) -> bool:
    """True when `argv` was a build with nothing to do and it has been answered."""
    if argv[:1] != ["build"]:      # the cache's module is no part of any other command
        return False
    started = time.monotonic()
    from .builder import noopcache
    asked = noopcache.plain_build(argv)
    return asked is not None and noopcache.replay(noopcache.entry_name(asked), started)


PLAIN_VERIFY_FLAGS = ("--gpus", "--checks", "--json")


def parse_plain_verify(args: list[str]) -> tuple[str, str, str | None, str | None] | None:
    """(IMAGE, GPUS, CHECKS, JSON) of `IMAGE [--gpus G] [--checks FILE] [--json FILE]` in any
    order (CHECKS and JSON None when not given), or None for anything else. (A tuple: the
    no-op build's path before this one imports no `typing`.)"""
    from .options import DEFAULTS
    image: str | None = None
    given: dict[str, str] = {}
    i = 0
    while i < len(args):
        flag, eq, value = args[i].partition("=")
        if flag in PLAIN_VERIFY_FLAGS and flag not in given:
            if not eq:
                if i + 1 >= len(args) or args[i + 1].startswith("-"):
                    return None
                value = args[i + 1]
                i += 1
            if not value or value == "-":    # stdout: the CLI says how (outputs.py)
                return None
            given[flag] = value
        elif args[i].startswith("-") or image is not None or not args[i]:
            return None
        else:
            image = args[i]
        i += 1
    if image is None:
        return None
    if "--json" in given:            # one it cannot write: the CLI says so, before any work
        from pathlib import Path

        from .outputs import unwritable
        if unwritable(Path(given["--json"])):
            return None
    # docker's spelling (count=2, device=0,1) read as the CLI reads it
    from .gpus import plain
    return image, plain(given.get("--gpus", DEFAULTS.gpus)), given.get("--checks"), given.get("--json")


def try_plain_verify(argv: list[str]) -> int | None:
    """The exit code of a plain `verify IMAGE [--gpus G] [--checks FILE] [--json FILE]` (a
    team's checks and the verdict file as well: what a CI job runs), without loading the
    CLI; None for any other."""
    if not argv or argv[0] != "verify":
        return None
    plain = parse_plain_verify(argv[1:])
    if plain is None:
        return None
    from dataclasses import replace
    from pathlib import Path

    from .console import print_error
    from .errors import ImgkitError
    from .options import DEFAULTS
    from .verify.command import Outputs, verify
    image, gpus, checks, json = plain
    try:
        return verify(image=image, options=replace(
            DEFAULTS, gpus=gpus, checks=Path(checks) if checks else None),
            outputs=Outputs(json=Path(json) if json else None))
    except ImgkitError as exc:  # as the CLI's reports_errors says it
        print_error(exc.message, exc.hint)
        return exc.exit_code


def exit_now(code: int) -> None:
    """Exit once the verdict is printed and its files are written (closed, each of them):
    the interpreter's teardown, pydantic's modules and all, is a hundredth of a second of a
    verify and no part of its verdict (the probe's container ends so too)."""
    import os
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:       # a reader gone (`imgkit verify ... | head`): nothing more to say
        pass
    os._exit(code)


def main() -> None:
    try:
        if try_noop_build(sys.argv[1:]):
            sys.exit(0)
        verified = try_plain_verify(sys.argv[1:])
    except KeyboardInterrupt:
        from .errors import EXIT_INTERRUPTED
        print("interrupted: stopped cleanly", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    if verified is not None:
        exit_now(verified)
    from .cli import app
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
