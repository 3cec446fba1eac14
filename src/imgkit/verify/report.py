"""A verdict as people and tools read it: a table in a terminal, one whole line per check
in a CI log, JSON, JUnit and Markdown (and the CI job's summary)."""
from __future__ import annotations

import sys
from pathlib import Path

from ..console import append_step_summary, console, flat, print_table
from ..outputs import write_output
from .verdict import Check, Verdict

VERDICT_STYLE = {"pass": "green", "fail": "bold red", "warn": "yellow", "skip": "yellow",
                 "info": "dim"}


def print_verdict(verdict: Verdict, *, terminal: bool | None = None) -> None:
    """In a terminal, a table; elsewhere (a CI log) one whole line per check, never cut."""
    if terminal if terminal is not None else sys.stdout.isatty():
        _print_table(verdict)
    else:
        print("\n".join([*verdict_lines(verdict), verdict_summary(verdict)]), flush=True)


def write_verdict(verdict: Verdict, *, json_file: Path | None = None, junit_file: Path | None = None,
                  markdown_file: Path | None = None) -> None:
    """Every form of the verdict the user asked for: the table or lines on stdout, JSON,
    JUnit and Markdown files, and the CI job's summary."""
    print_verdict(verdict)
    if json_file is not None:
        write_output(json_file, verdict_json(verdict), "--json")
    if junit_file is not None:
        write_output(junit_file, verdict_junit(verdict), "--junit")
    if markdown_file is not None:
        write_output(markdown_file, verdict_markdown(verdict), "--markdown")
    append_step_summary(verdict_markdown(verdict))


def _print_table(verdict: Verdict) -> None:
    rows = [(c.name, c.expected, c.measured, f"[{VERDICT_STYLE.get(c.verdict, '')}]{_label(c)}[/]",
             c.diagnosis) for c in verdict.checks]
    print_table(f"imgkit {verdict.command} {verdict.image}",
                ("check", "expected", "measured", "verdict", "diagnosis"), rows)
    colour = "bold red" if verdict.failed else "bold yellow" if not verdict.gpu_checked else "bold green"
    head, _, rest = verdict_summary(verdict).partition(":")
    console().print(f"[{colour}]{head}[/]:{rest}", markup=True, highlight=False)


def _label(check: Check) -> str:
    return check.verdict if check.required or check.verdict != "fail" else "fail (optional)"


def verdict_lines(verdict: Verdict) -> list[str]:
    """One line per check: verdict, name, expected, measured, diagnosis."""
    lines = [f"imgkit {verdict.command} {verdict.image} ({verdict.image_id[:19]})"]
    for c in verdict.checks:
        line = (f"{_label(c):<5} {c.name}  expected: {flat(c.expected) or '-'}  "
                f"measured: {flat(c.measured) or '-'}")
        lines.append(line + (f"  diagnosis: {flat(c.diagnosis)}" if c.diagnosis else ""))
    return lines


def verdict_summary(verdict: Verdict) -> str:
    failed = verdict.failed
    if failed:
        who = "the host" if verdict.host_failure else "the image"
        return (f"FAILED: {len(failed)} required check(s); fix {who} first: "
                + ", ".join(c.name for c in failed))
    if not verdict.gpu_checked:
        return f"PASSED without a GPU: the GPU was NOT verified ({verdict.without_gpu})"
    return "PASSED: every required check"


def verdict_markdown(verdict: Verdict) -> str:
    """A Markdown table of the verdict (GitHub's job summary renders it)."""
    def cell(text: str) -> str:
        return flat(text).replace("|", "\\|") or " "
    rows = [f"### imgkit {verdict.command} `{verdict.image}`", "", f"**{verdict_summary(verdict)}**",
            f"(image `{verdict.image_id}`)", "",
            "| check | expected | measured | verdict | diagnosis |", "|---|---|---|---|---|"]
    rows += [f"| {cell(c.name)} | {cell(c.expected)} | {cell(c.measured)} | {cell(_label(c))} | "
             f"{cell(c.diagnosis)} |" for c in verdict.checks]
    return "\n".join(rows) + "\n"


def verdict_json(verdict: Verdict) -> str:
    import json
    from dataclasses import asdict
    doc = {"image": verdict.image, "title": verdict.title, "image_id": verdict.image_id,
           "command": verdict.command,
           "size": verdict.size, "passed": verdict.passed,
           "gpu_checked": verdict.gpu_checked, "gpu_verified": verdict.gpu_verified,
           "host_failure": verdict.host_failure, "checks": [asdict(c) for c in verdict.checks],
           "facts": verdict.facts.model_dump(mode="json") if verdict.facts else None}
    return json.dumps(doc, indent=1, sort_keys=True, default=str)


def verdict_junit(verdict: Verdict) -> str:
    import xml.etree.ElementTree as ET
    suite = ET.Element("testsuite", name=f"imgkit {verdict.command} {verdict.image}",
                       tests=str(len(verdict.checks)),
                       failures=str(sum(c.verdict == "fail" and c.required for c in verdict.checks)),
                       skipped=str(sum(c.verdict == "skip" for c in verdict.checks)))
    for c in verdict.checks:
        case = ET.SubElement(suite, "testcase", classname=verdict.image, name=c.name)
        if c.verdict == "fail" and c.required:
            failure = ET.SubElement(case, "failure", message=c.diagnosis or c.measured)
            failure.text = f"expected {c.expected}; measured {c.measured}"
        elif c.verdict == "skip":
            ET.SubElement(case, "skipped", message=c.diagnosis)
        ET.SubElement(case, "system-out").text = f"{c.verdict}: {c.measured}"
    return ET.tostring(suite, encoding="unicode")

