"""How imgkit's commands behave as commands, whatever they do: errors as one paragraph and
an exit code (never a traceback), `-h` and `--version`, an option that takes one value
refused when given twice, help text as prose, and the selection options declared once for
every command that selects."""
from __future__ import annotations

import errno
import functools
import inspect
from collections import Counter
from dataclasses import replace
from typing import Any, Callable, Mapping, TypeVar, cast

import typer
from typer.core import TyperCommand, TyperGroup

from ..console import console, print_error
from ..errors import EXIT_HOST, EXIT_INTERRUPTED, EXIT_USAGE, ImgkitError
from ..project import selection_from
from . import flags
from .values import platforms_of

F = TypeVar("F", bound=Callable[..., Any])
# click's UsageError as typer vendors it (BadParameter's parent): NoSuchOption is one
USAGE_ERROR = cast("type[Exception]", typer.BadParameter.__mro__[1])
CONTEXT = {"help_option_names": ["-h", "--help"]}


def in_words(params: list[Any]) -> list[Any]:
    """The parameters as --help shows them: an option by the word its value is (its metavar),
    a flag or an argument by its name alone. Typer would add the Python type (`<bool>`,
    `<str>`) beside them; this answers its display hook with nothing instead."""
    for param in params:
        if param.param_type_name == "argument" or getattr(param, "is_flag", False):
            param.display_type_rich = no_type
    return params


def no_type(ctx: Any) -> None:
    return None


# What to do instead, where a second value is what a person meant
ONE_VALUE_WHY = {"cuda": "one CUDA release per run (run once per release, or leave --cuda out "
                         "for every image)"}


class OneValueCommand(TyperCommand):
    """A command that refuses an option given twice unless it is repeatable (click keeps
    the last value silently: `--cuda 11.8 --cuda 12.4` would build 12.4 alone), and shows
    its parameters in words."""

    def get_params(self, ctx: Any) -> list[Any]:
        return in_words(super().get_params(ctx))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:             # shell completion parses half-typed lines
            try:
                _, _, order = self.make_parser(ctx).parse_args(args=list(args))
            except USAGE_ERROR as exc:
                if type(exc).__name__ != "NoSuchOption":
                    raise
                name = getattr(exc, "option_name", "")
                said = elsewhere(ctx, name)               # click's near names only where none is
                raise type(exc)(name, said or f"No such option: {name}",
                                None if said else getattr(exc, "possibilities", None), ctx) from None
            counts = Counter(p for p in order if getattr(p, "param_type_name", "") == "option"
                             and not getattr(p, "multiple", False) and not getattr(p, "count", False))
            for param, times in counts.items():
                if times > 1:
                    why = ONE_VALUE_WHY.get(param.name or "", "")
                    raise typer.BadParameter(f"given {times} times, but it takes one value"
                                             + (f": {why}" if why else ""),
                                             ctx=ctx, param_hint=" / ".join(param.opts))
        try:
            return super().parse_args(ctx, args)
        except USAGE_ERROR as exc:
            message = getattr(exc, "message", "")
            takes = [p.metavar or p.name for p in self.params if p.param_type_name == "argument"]
            if message.startswith("Got unexpected extra argument") and len(takes) == 1:
                exc.message = (f"{message}: `{typed(ctx)}` takes one {takes[0]}; "  # type: ignore[attr-defined]
                               f"for several, run it once for each")
            raise


def typed(ctx: Any) -> str:
    """The command as a person typed it, `imgkit export k8s` (the root's name is the
    program's, which a test runner calls otherwise)."""
    return " ".join(["imgkit", *ctx.command_path.split()[1:]])


def elsewhere(ctx: Any, name: str) -> str:
    """`No such option` with where the option is one: the commands that take it, and this
    command's options for the same kind of value (`publish --registry`: publish names a
    REGISTRY[/NAMESPACE] with --to, as ci names it with --registry); "" where none takes it."""
    taken: dict[str, str] = {}              # command path -> the option's metavar there
    stack = [("imgkit", ctx.find_root().command)]
    while stack:
        path, command = stack.pop()
        for sub, child in sorted(getattr(command, "commands", {}).items()):
            stack.append((f"{path} {sub}", child))
        option = next((p for p in getattr(command, "params", ()) if name in p.opts), None)
        if option is not None:
            taken[path] = option.metavar or ""
    if not taken:
        return ""
    here = typed(ctx)
    said = (f"No such option: {name}. {', '.join(f'`{p}`' for p in sorted(taken))} "
            f"take{'s' if len(taken) == 1 else ''} it")
    kinds = {kind for kind in taken.values() if kind}
    same = [p.opts[0] for p in ctx.command.params if p.metavar in kinds and p.opts[0] != name]
    if same:
        said += (f"; for a {'/'.join(sorted(kinds))}, `{here}` takes "
                 f"{' or '.join(same)} (`{here} -h`)")
    return said + "."


# What other tools (and people) call a command, where no spelling is near imgkit's name:
# `imgkit export kubernetes` is `export k8s`. tests/test_cli_surface.py holds each to a
# command there is.
CALLED_ELSEWHERE = {
    "kubernetes": "k8s", "kube": "k8s", "job": "k8s", "cronjob": "k8s",
    "buildx": "bake", "buildkit": "bake",
    "kyverno": "policy", "gatekeeper": "policy", "admission": "policy",
    "prometheus": "monitoring", "grafana": "monitoring", "alerts": "monitoring",
    "test": "verify", "validate": "list", "ls": "list", "matrix": "list",
    "dockerfile": "render", "dockerfiles": "render", "pin": "lock", "freeze": "lock",
    "push": "publish", "release": "promote", "sign": "attest", "cve": "scan", "vulns": "scan",
    "pipeline": "ci", "workflow": "ci", "pages": "site", "rebuild": "reproduce",
}


class WordyGroup(TyperGroup):
    """A group of commands whose own options --help shows in words, and whose unknown
    command names the one another tool's word means (CALLED_ELSEWHERE)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return in_words(super().get_params(ctx))

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except USAGE_ERROR as exc:
            word = args[0].lower() if args else ""
            meant = CALLED_ELSEWHERE.get(word, "")
            root = ctx.find_root().command
            message = getattr(exc, "message", "").split(". Did you mean")[0].rstrip(".")
            if meant in self.commands:
                exc.message = f"{message}. Did you mean {meant!r}?"  # type: ignore[attr-defined]
            elif self is not root and word in getattr(root, "commands", {}):
                exc.message = f"{message}: it is `imgkit {word}`."  # type: ignore[attr-defined]
            raise


class RootGroup(WordyGroup):
    """The `imgkit` group."""


def prose(doc: str | None) -> str | None:
    """A docstring as --help shows it: paragraphs (blank-line separated) joined into single
    lines, so the terminal wraps them to its width instead of at the source's line breaks."""
    if doc is None:
        return None
    paragraphs: list[list[str]] = [[]]
    for line in doc.strip().splitlines():
        if line.strip():
            paragraphs[-1].append(line.strip())
        elif paragraphs[-1]:
            paragraphs.append([])
    return "\n\n".join(" ".join(words) for words in paragraphs if words)

# the errors a path the user named makes (exit 2); others (a full disk) are the host's
PATH_MISTAKES = {errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM,
                 errno.EROFS, errno.EEXIST, errno.ENAMETOOLONG}


def reports_errors(func: F) -> F:
    """Turn ImgkitError into a one-paragraph message and its exit code; never a traceback.
    An int the command returns is its exit code."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            code = func(*args, **kwargs)
        except ImgkitError as exc:
            print_error(exc.message, exc.hint)
            raise typer.Exit(exc.exit_code)
        except KeyboardInterrupt:
            console(stderr=True).print("interrupted: stopped cleanly")
            raise typer.Exit(EXIT_INTERRUPTED)
        except OSError as exc:
            if exc.filename is None:       # no path to name: a bug, shown as one
                raise
            # a path no command said in its own words: named, never a traceback
            print_error(f"{exc.filename}: {exc.strerror or exc}",
                        "if you named that path, name one this user can read and write")
            raise typer.Exit(EXIT_USAGE if exc.errno in PATH_MISTAKES else EXIT_HOST)
        if isinstance(code, int):
            raise typer.Exit(code)
    wrapper.__doc__ = prose(func.__doc__)
    return wrapper  # type: ignore[return-value]


# The top-level help's groups, in the order a matrix goes through them; `imgkit --help`
# shows each command on one line (its `short` help) under its group.
MAKE, PROVE, SHIP, INSPECT = "Make images", "Prove them", "Ship them", "Look inside"
DEVELOP = "For imgkit's own developers"
EXPORT = "Files for other tools"


def commands_of(app: typer.Typer) -> Callable[..., Callable[[F], F]]:
    """`@command(GROUP, "one line")` for `app`: a OneValueCommand whose errors are
    reported, listed under GROUP in `--help` with that one line."""
    def command(panel: str, short: str, name: str | None = None) -> Callable[[F], F]:
        def register(func: F) -> F:
            app.command(name, cls=OneValueCommand, rich_help_panel=panel,
                        short_help=short)(reports_errors(func))
            return func
        return register
    return command


SELECTION_FLAGS: dict[str, tuple[Any, Any]] = {   # parameter -> (its option, its default)
    "cuda": (flags.Cuda, None),
    "only": (flags.Only, []),
    "platforms": (flags.Platforms, []),
    "images": (flags.Images, None),
    "templates": (flags.Templates, None),
    "namespace": (flags.Namespace, None),
    "compat": (flags.Compat, None),
}
NOT_ALWAYS = ("templates", "platforms")


def read_bases(refs: list[str]) -> Mapping[str, object]:
    """What each team's own base image holds (`base:`), read through the engine by the
    builder's reader, imported only when a matrix names one."""
    from ..builder.base_image import read_bases as read
    return read(refs)


def selects(*also: str) -> Callable[[F], F]:
    """The command takes the selection options (--cuda, --only, --images, --namespace,
    --compat, and those of `also`: templates, platforms) and receives them as one
    `selection: Selection`."""
    names = [n for n in SELECTION_FLAGS if n not in NOT_ALWAYS or n in also]

    def decorate(func: F) -> F:
        own = [p for p in inspect.signature(func, eval_str=True).parameters.values()
               if p.name != "selection"]
        added = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=SELECTION_FLAGS[n][1],
                                   annotation=SELECTION_FLAGS[n][0]) for n in names]

        @functools.wraps(func)
        def wrapper(**kwargs: Any) -> Any:
            chosen = {n: kwargs.pop(n) for n in names}
            return func(selection=replace(selection_from(
                images=chosen["images"], namespace=chosen["namespace"], cuda=chosen["cuda"],
                only=tuple(chosen["only"]), templates=chosen.get("templates"),
                compat=chosen["compat"], platforms=platforms_of(chosen.get("platforms", []))),
                read_bases=read_bases), **kwargs)
        parameters = [*own, *added]
        wrapper.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
        return wrapper  # type: ignore[return-value]
    return decorate
