"""Old spellings of the command line, kept for one release: each is rewritten into today's
form before parsing, with a line on stderr saying what to write instead. Pure functions of
argv; the root command (cli/framework.py) applies them.

- `verify IMAGE --attest [--key K]`            -> `attest IMAGE [--signing-key K]`
- `verify IMAGE --require-signed --key PUB`     -> `check-signed IMAGE --trusted-key PUB`
- `verify/attest --min-gemm X` (-conv, -amp-speedup) -> `--min gemm=X`
- `publish --key K`                             -> `publish --signing-key K`
- `promote --key PUB`, `export policy --key F`  -> `--trusted-key`
- `list --builders N`, `list --gpus N`          -> `--farm N`, `--gpu-pool N`
- `verify --updates` still works, and says `imgkit outdated IMAGE` is the way now
- `verify --candidates DIR` still works, and says `imgkit attest TAG --candidates DIR` is the way
- `verify IMAGE --from-report FILE` still works, and says `imgkit judge IMAGE FILE` is the way
"""
from __future__ import annotations

from dataclasses import dataclass

REMOVED_IN = "0.3"
MODES = {"--attest": "attest", "--require-signed": "check-signed"}
THRESHOLDS = {"--min-gemm": "gemm", "--min-conv": "conv", "--min-amp-speedup": "amp-speedup"}
# (command, old flag) -> new flag
RENAMED = {
    ("attest", "--key"): "--signing-key",
    ("check-signed", "--key"): "--trusted-key",
    ("publish", "--key"): "--signing-key",
    ("promote", "--key"): "--trusted-key",
    ("export policy", "--key"): "--trusted-key",
    ("list", "--builders"): "--farm",
    ("list", "--gpus"): "--gpu-pool",
}

# (command, flag) -> what to use instead: still taken as it is, with a deprecation line
NOTED = {("verify", "--updates"): "imgkit outdated IMAGE",
         ("verify", "--candidates"): "imgkit attest TAG --candidates DIR",
         ("verify", "--from-report"): "imgkit judge IMAGE FILE"}


@dataclass(frozen=True)
class Rewritten:
    args: list[str]
    notes: tuple[str, ...]      # one deprecation line per old spelling met


def command_at(args: list[str]) -> tuple[int, str]:
    """The index of the command's first word and the command ("export policy" for a
    subcommand); (-1, "") when there is none."""
    for i, word in enumerate(args):
        if word == "--":
            break
        if not word.startswith("-"):
            if word == "export" and i + 1 < len(args) and not args[i + 1].startswith("-"):
                return i, f"export {args[i + 1]}"
            return i, word
    return -1, ""


def rewrite(args: list[str]) -> Rewritten:
    """Today's spelling of `args` (unchanged when nothing old is in it)."""
    start, command = command_at(args)
    if start < 0:
        return Rewritten(list(args), ())
    words = len(command.split())
    head, body = list(args[:start]), list(args[start + words:])
    notes: list[str] = []
    if command == "verify":
        flag = next((w for w in _flags(body) if w in MODES), None)
        if flag is not None:        # the other mode's flag, if given too, is refused there
            mode = MODES[flag]
            body = [w for i, w in enumerate(body) if w != flag or i >= _end(body)]
            notes.append(_note(f"verify {flag}", f"imgkit {mode}"))
            command = mode
    if command in ("verify", "attest"):
        body, said = _thresholds(body)
        notes += said
    out: list[str] = []
    for i, word in enumerate(body):
        flag, eq, value = word.partition("=")
        new = RENAMED.get((command, flag)) if i < _end(body) else None
        if (command, flag) in NOTED and i < _end(body):
            notes.append(_note(f"{command} {flag}", NOTED[command, flag]))
        if new is not None:
            notes.append(_note(f"{command} {flag}", f"{command} {new}"))
            word = new + eq + value
        out.append(word)
    return Rewritten(head + command.split() + out, tuple(dict.fromkeys(notes)))


def _end(body: list[str]) -> int:
    """Where the options end: at a `--` (after it, everything is a value)."""
    return body.index("--") if "--" in body else len(body)


def _flags(body: list[str]) -> list[str]:
    return body[:_end(body)]


def _thresholds(body: list[str]) -> tuple[list[str], list[str]]:
    out: list[str] = []
    notes: list[str] = []
    i = 0
    while i < len(body):
        flag, eq, value = body[i].partition("=")
        if flag in THRESHOLDS and i < _end(body) and (eq or i + 1 < len(body)):
            if not eq:
                value = body[i + 1]
                i += 1
            out += ["--min", f"{THRESHOLDS[flag]}={value}"]
            notes.append(_note(flag, f"--min {THRESHOLDS[flag]}=SHARE"))
        else:
            out.append(body[i])
        i += 1
    return out, notes


def _note(old: str, new: str) -> str:
    return (f"deprecated: `{old}` is now `{new}`; the old spelling goes in imgkit "
            f"{REMOVED_IN}")
