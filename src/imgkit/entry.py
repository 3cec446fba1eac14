"""The `imgkit` console entry point: answers a no-op build, and runs a plain verify,
before loading the CLI.

A no-op `imgkit build` must cost well under docker's own cache check, and Python start-up
dominates it; importing typer alone is a third of that. So a plain `imgkit build` with only
selection options is first tried here: parse those few options; if the memo of the last
such answer still holds (builder/memo.py: standard library only), give it again; else if
the plan cache knows the selection and every image is up to date, print the summary (and
write the memo) and exit 0. Anything else (help, --force, --dry-run, any other option, a
cache miss, anything out of date, any error) goes to the typer CLI from the start, so its
parsing, messages and exit codes stay the only ones a user ever sees.

`imgkit verify IMAGE [--gpus G] [--checks FILE]`, the command CI runs most, is measured
against `docker run` plus the framework's import, and typer's start-up is a few hundredths
of a second of that. That one form calls the same verify with the CLI's defaults and
reports an error the way the CLI does; any other verify command line goes to the CLI.
tests/test_entry.py keeps both fast paths in step with cli.py.
"""
from __future__ import annotations

import os
import sys
import time

# Options the fast path understands: flag -> field of the Selection. They only
# select what to check; everything that changes how images are built is left to the CLI.
SELECTION_OPTIONS = {"--cuda": "cuda", "--only": "only", "--images": "images",
                     "--templates": "templates", "--namespace": "namespace",
                     "--compat": "compat_file"}
# Read by `imgkit build` through typer's envvar; checked the same way here.
BUILD_ENV_VARS = {"ca_bundle": "IMGKIT_CA_BUNDLE", "index_url": "IMGKIT_INDEX_URL"}


def parse_selection(args: list[str]) -> dict[str, str] | None:
    """`--opt value` / `--opt=value` pairs of SELECTION_OPTIONS, or None for anything else."""
    out: dict[str, str] = {}
    i = 0
    while i < len(args):
        flag, eq, value = args[i].partition("=")
        if flag not in SELECTION_OPTIONS or SELECTION_OPTIONS[flag] in out:
            return None
        if not eq:
            if i + 1 >= len(args) or args[i + 1].startswith("-"):
                return None
            value = args[i + 1]
            i += 1
        out[SELECTION_OPTIONS[flag]] = value
        i += 1
    return out


def try_noop_build(argv: list[str]) -> bool:
    """True when `argv` was a build with nothing to do and it has been answered."""
    if not argv or argv[0] != "build":
        return False
    selection = parse_selection(argv[1:])
    if selection is None:
        return False
    started = time.monotonic()
    from .builder import memo
    name = memo.memo_name(argv)   # once, for the replay and for the memo written on a miss
    if memo.replay(name, started):
        return True
    from pathlib import Path

    from .builder.buildenv import build_env
    from .builder.noop import answer_if_up_to_date
    from .builder.plancache import plan_inputs
    from .builder.plankey import fingerprint
    from .errors import ImgkitError
    from .project import selection_from
    try:
        env = build_env(**{k: os.environ.get(v) or None for k, v in BUILD_ENV_VARS.items()})
        paths = {k: Path(selection[k]) if k in selection else None
                 for k in ("images", "templates", "compat_file")}
        inputs = plan_inputs(selection_from(
            images=paths["images"], templates=paths["templates"], compat=paths["compat_file"],
            namespace=selection.get("namespace"), cuda=selection.get("cuda"),
            only=(selection["only"],) if "only" in selection else ()))
        key = fingerprint(inputs)
        recorder = memo.Recorder(name, inputs, key,
                                 str(env.ca_bundle) if env.ca_bundle is not None else None)
        return answer_if_up_to_date(key, started, recorder=recorder)
    except ImgkitError:
        return False  # the CLI runs the command again and reports it properly


PLAIN_VERIFY_FLAGS = ("--gpus", "--checks")


def parse_plain_verify(args: list[str]) -> tuple[str, str, str | None] | None:
    """(IMAGE, GPUS, CHECKS) of `IMAGE [--gpus G] [--checks FILE]` in any order (CHECKS
    None when not given), or None for anything else."""
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
            if not value:
                return None
            given[flag] = value
        elif args[i].startswith("-") or image is not None or not args[i]:
            return None
        else:
            image = args[i]
        i += 1
    if image is None:
        return None
    return image, given.get("--gpus", DEFAULTS.gpus), given.get("--checks")


def try_plain_verify(argv: list[str]) -> int | None:
    """The exit code of a plain `verify IMAGE [--gpus G] [--checks FILE]` (a team's
    checks as well: what a CI job runs), without loading the CLI; None for any other."""
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
    from .verify.command import verify
    image, gpus, checks = plain
    try:
        return verify(image=image, options=replace(
            DEFAULTS, gpus=gpus, checks=Path(checks) if checks is not None else None))
    except ImgkitError as exc:  # as the CLI's reports_errors says it
        print_error(exc.message, exc.hint)
        return exc.exit_code


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
        sys.exit(verified)
    from .cli import app
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
