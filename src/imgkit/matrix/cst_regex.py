"""container-structure-test's patterns are Go's regular expressions (RE2); imgkit judges
them with Python's. Most are written alike. What Go writes otherwise is translated: POSIX
classes (`[[:digit:]]`), `\\z`, `\\Q...\\E`, `\\x{...}`, `(?<name>...)`, `\\pL`/`\\p{L}`
(letters); what Python cannot do (other Unicode classes, the ungreedy flag) is refused when
the check file is read, naming the pattern, never a traceback at judging time."""
from __future__ import annotations

import re
from functools import lru_cache

POSIX = {"alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ",
         "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "graph": "!-~", "lower": "a-z",
         "print": " -~", "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z",
         "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f"}
LETTERS = {"L", "{L}", "{Letter}"}
POSIX_CLASS = re.compile(r"\[:(\^?)([a-z]+):\]")


class NotReadable(ValueError):
    """A pattern Python's regular expressions cannot take, with the reason in words."""

    def __init__(self, reason: str, hint: str = "") -> None:
        super().__init__(reason)
        self.hint = hint


@lru_cache(maxsize=512)
def python_pattern(pattern: str) -> re.Pattern[str]:
    """`pattern` (Go's syntax) compiled by Python, multi-line as imgkit has always searched."""
    translated = _translated(pattern)
    try:
        return re.compile(translated, re.M)
    except re.error as exc:
        raise NotReadable(f"not a regular expression: {exc}", hint="to match one of "
                          "( ) [ ] { } . * + ? | ^ $ \\ as written, put a backslash before it: "
                          "\\(") from None


def _translated(pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            text, i = _escape(pattern, i)
            out.append(text)
        elif char == "[":
            text, i = _bracket(pattern, i)
            out.append(text)
        elif pattern.startswith("(?<", i) and pattern[i + 3:i + 4] not in ("=", "!"):
            out.append("(?P<")
            i += 3
        elif pattern.startswith("(?", i) and re.match(r"\(\?[imsU-]*U", pattern[i:]):
            raise NotReadable("the ungreedy flag (?U) is Go's only: write each lazy "
                              "repetition with ? (.*? instead of .*)")
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _escape(pattern: str, i: int) -> tuple[str, int]:
    """One escape at `i` (a backslash), as Python writes it, and where the pattern goes on."""
    nxt = pattern[i + 1]
    if nxt == "z":
        return "\\Z", i + 2
    if nxt == "Q":
        end = pattern.find("\\E", i + 2)
        literal = pattern[i + 2:] if end < 0 else pattern[i + 2:end]
        return re.escape(literal), len(pattern) if end < 0 else end + 2
    if nxt == "x" and pattern[i + 2:i + 3] == "{":
        end = pattern.find("}", i + 3)
        if end < 0:
            raise NotReadable("\\x{ without its closing }")
        return f"\\U{int(pattern[i + 3:end], 16):08x}", end + 1
    if nxt in "pP":
        name = pattern[i + 2] if pattern[i + 2:i + 3] != "{" else \
            pattern[i + 2:pattern.find("}", i + 2) + 1]
        if name not in LETTERS:
            raise NotReadable(f"the Unicode class \\{nxt}{name} is not one Python's regular "
                              "expressions know (\\pL, letters, is)")
        return ("[^\\W\\d_]" if nxt == "p" else "[\\W\\d_]"), i + 2 + len(name)
    return pattern[i:i + 2], i + 2


def _bracket(pattern: str, i: int) -> tuple[str, int]:
    """A bracket class from `i` (its `[`), POSIX classes inside translated."""
    j = i + 1
    if pattern[j:j + 1] == "^":
        j += 1
    if pattern[j:j + 1] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        if pattern[j] == "\\":
            j += 2
        elif POSIX_CLASS.match(pattern, j):
            j = POSIX_CLASS.match(pattern, j).end()  # type: ignore[union-attr]
        else:
            j += 1
    body = pattern[i:j + 1]
    for negated, name in POSIX_CLASS.findall(body):
        if name not in POSIX:
            raise NotReadable(f"[:{name}:] is not a POSIX class")
        if negated:
            if body != f"[[:^{name}:]]":
                raise NotReadable(f"[:^{name}:] inside a larger class: write [^...] instead")
            return f"[^{POSIX[name]}]", j + 1
    return POSIX_CLASS.sub(lambda m: POSIX[m.group(2)], body), j + 1
