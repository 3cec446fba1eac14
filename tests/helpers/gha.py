"""GitHub Actions' expression language, the part `imgkit ci github` writes in its jobs' `if:`
conditions, evaluated as the runner would for a given event: literals, `github.*` context
paths, `!`, `==`, `!=`, `&&`, `||`, parentheses, and the status functions. No local GitHub
Actions runner installs here (DESIGN.md), so this is what tells which jobs a push to a
branch runs. Anything else in an expression is an error, never a guess."""
from __future__ import annotations

import re
from typing import Any

TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)|(?P<op>==|!=|&&|\|\||!|\(|\))"
                   r"|(?P<name>[A-Za-z_][A-Za-z0-9_.-]*(?:\(\))?))")
STATUS = {"success()": True, "failure()": False, "cancelled()": False, "always()": True}


def tokens(text: str) -> list[tuple[str, str]]:
    out, at = [], 0
    text = text.strip()
    while at < len(text):
        found = TOKEN.match(text, at)
        if found is None or found.end() == at:
            raise ValueError(f"cannot read {text[at:]!r} in {text!r}")
        kind = found.lastgroup or ""
        out.append((kind, found.group(kind)))
        at = found.end()
    return out


def evaluate(expression: str, context: dict[str, Any]) -> bool:
    """`expression` (with or without `${{ }}`) for `context` (`github.ref` -> value); every
    job before the one asked about succeeded."""
    text = expression.strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2]
    items = tokens(text)
    value, rest = _or(items, context)
    if rest:
        raise ValueError(f"left over in {expression!r}: {rest}")
    return bool(value)


def _or(items: list[tuple[str, str]], context: dict[str, Any]) -> tuple[Any, list[tuple[str, str]]]:
    left, items = _and(items, context)
    while items and items[0] == ("op", "||"):
        right, items = _and(items[1:], context)
        left = left or right
    return left, items


def _and(items: list[tuple[str, str]], context: dict[str, Any]) -> tuple[Any, list[tuple[str, str]]]:
    left, items = _compare(items, context)
    while items and items[0] == ("op", "&&"):
        right, items = _compare(items[1:], context)
        left = left and right
    return left, items


def _compare(items: list[tuple[str, str]], context: dict[str, Any]) -> tuple[Any, list[tuple[str, str]]]:
    left, items = _unary(items, context)
    while items and items[0] in (("op", "=="), ("op", "!=")):
        op = items[0][1]
        right, items = _unary(items[1:], context)
        same = str(left).lower() == str(right).lower()        # GitHub compares strings so
        left = same if op == "==" else not same
    return left, items


def _unary(items: list[tuple[str, str]], context: dict[str, Any]) -> tuple[Any, list[tuple[str, str]]]:
    if not items:
        raise ValueError("an expression ends too early")
    kind, text = items[0]
    if (kind, text) == ("op", "!"):
        value, rest = _unary(items[1:], context)
        return not value, rest
    if (kind, text) == ("op", "("):
        value, rest = _or(items[1:], context)
        if not rest or rest[0] != ("op", ")"):
            raise ValueError("a parenthesis is not closed")
        return value, rest[1:]
    if kind == "str":
        return text[1:-1].replace("''", "'"), items[1:]
    if kind == "num":
        return float(text), items[1:]
    if kind == "name":
        if text in STATUS:
            return STATUS[text], items[1:]
        if text in ("true", "false"):
            return text == "true", items[1:]
        if text not in context:
            raise ValueError(f"{text} is not in the context given")
        return context[text], items[1:]
    raise ValueError(f"unexpected {text!r}")


def push_to(branch: str, default: str = "main") -> dict[str, Any]:
    """The context of a push to `branch` of a repository whose default branch is `default`."""
    return {"github.event_name": "push", "github.ref": f"refs/heads/{branch}",
            "github.ref_name": branch, "github.event.repository.default_branch": default}


def jobs_run(workflow: dict[str, Any], context: dict[str, Any]) -> set[str]:
    """The jobs of `workflow` that run for `context`: their `if:` holds, and each job they
    need runs too (a skipped need skips them, unless their condition asks for status)."""
    runs: dict[str, bool] = {}

    def run(name: str) -> bool:
        if name not in runs:
            job = workflow["jobs"][name]
            needs = job.get("needs") or []
            needs = [needs] if isinstance(needs, str) else needs
            condition = str(job.get("if", "success()"))
            with_status = any(f in condition for f in ("!cancelled()", "always()", "failure()"))
            runs[name] = evaluate(condition, context) and (
                with_status or all(run(n) for n in needs))
        return runs[name]
    return {name for name in workflow["jobs"] if run(name)}
