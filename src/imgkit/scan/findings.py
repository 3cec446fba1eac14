"""What the scanner found, in one model whatever scanner found it: each vulnerability of each
package it matched (the scanner's own match: imgkit compares no versions itself), with its
id and aliases, the package and its ecosystem, the installed version and the versions that
fix it, its severity (the scanner's own rating where it gives one, else its CVSS score as a
level), and where it was found (the
file, the image layer)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LEVELS = ("low", "medium", "high", "critical")        # CVSS v3's qualitative ratings, in order


class Unreadable(ValueError):
    """The scanner's output is not what it writes."""


@dataclass(frozen=True)
class Finding:
    id: str
    aliases: tuple[str, ...]
    package: str
    ecosystem: str
    installed: str
    fixed: tuple[str, ...]            # the versions that fix it ("" none known)
    score: float | None               # CVSS base score, as the scanner gave it
    path: str = ""                    # the file it was found by (a dist-info, dpkg's status)
    layer: int | None = None          # the index of the image layer that brought the package
    step: str = ""                    # the build step that made that layer, as history has it
    origin: str = ""                  # that layer's image: its tag, or how it was made
    summary: str = ""
    rated: str = ""                   # the scanner's own rating (trivy's), when it gives one
    vendored: bool = False            # a copy inside another package: only its release fixes it

    @property
    def level(self) -> str:
        """low, medium, high or critical (CVSS v3's ratings): the scanner's rating, else its
        score's; unknown without either."""
        if self.rated in LEVELS:
            return self.rated
        if self.score is None:
            return "unknown"
        if self.score >= 9.0:
            return "critical"
        if self.score >= 7.0:
            return "high"
        return "medium" if self.score >= 4.0 else "low"

    @property
    def names(self) -> frozenset[str]:
        return frozenset((self.id, *self.aliases))


@dataclass(frozen=True)
class Scan:
    image: str
    image_id: str
    scanner: str                      # its name and version
    findings: tuple[Finding, ...] = field(default=())


def parse(document: Any) -> list[Finding]:
    """osv-scanner's JSON (`--format json`) as findings; anything else is Unreadable."""
    if not isinstance(document, dict) or not isinstance(document.get("results", []), list):
        raise Unreadable("no results list")
    found: list[Finding] = []
    try:
        history = _history(document)
        for result in document.get("results") or []:
            path = str((result.get("source") or {}).get("path") or "")
            for entry in result.get("packages") or []:
                found += _package_findings(entry, path, history)
    except (AttributeError, TypeError, ValueError, KeyError) as exc:
        raise Unreadable(f"{type(exc).__name__}: {exc}") from None
    return found


def _history(document: dict[str, Any]) -> list[tuple[int | None, str]]:
    """For each entry of the image's history (the scanner's origin index counts those, empty
    ones included), the index of its layer in the root filesystem and its step."""
    out: list[tuple[int | None, str]] = []
    layer = 0
    for entry in (document.get("image_metadata") or {}).get("layer_metadata") or []:
        empty = bool(entry.get("is_empty")) or not entry.get("diff_id")
        out.append((None if empty else layer, str(entry.get("command") or "")))
        layer += 0 if empty else 1
    return out


def _package_findings(entry: dict[str, Any], path: str,
                      history: list[tuple[int | None, str]]) -> list[Finding]:
    package = entry["package"]
    scores = {vid: _score(group.get("max_severity")) for group in entry.get("groups") or []
              for vid in group.get("ids") or []}
    index = (package.get("image_origin_details") or {}).get("index")
    layer, step = history[index] if isinstance(index, int) and 0 <= index < len(history) else (None, "")
    out = []
    for vuln in entry.get("vulnerabilities") or []:
        vid = str(vuln["id"])
        out.append(Finding(
            id=vid, aliases=tuple(str(a) for a in vuln.get("aliases") or ()),
            package=str(package["name"]), ecosystem=str(package["ecosystem"]),
            installed=str(package.get("version") or ""),
            fixed=_fixed(vuln, str(package["name"]), str(package["ecosystem"])),
            score=scores.get(vid), path=path,
            layer=layer, step=step,
            summary=str(vuln.get("summary") or vuln.get("details") or "").strip()[:200]))
    return out


def _score(text: Any) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except (TypeError, ValueError):
        return None


def _fixed(vuln: dict[str, Any], name: str, ecosystem: str) -> tuple[str, ...]:
    """The `fixed` events of the ranges that name this package."""
    out: list[str] = []
    for affected in vuln.get("affected") or []:
        package = affected.get("package") or {}
        if package.get("name") != name or not _same_ecosystem(str(package.get("ecosystem", "")),
                                                              ecosystem):
            continue
        for rng in affected.get("ranges") or []:
            if rng.get("type") == "GIT":            # a commit, not a version one installs
                continue
            out += [str(e["fixed"]) for e in rng.get("events") or [] if "fixed" in e]
    return tuple(dict.fromkeys(out))


def _same_ecosystem(advisory: str, installed: str) -> bool:
    """Debian:12 is not Debian:11: a release's fix is only that release's. An ecosystem
    without a release (PyPI) matches itself; one the scanner gave bare matches any release."""
    if ":" in installed:
        return advisory == installed
    return advisory.split(":")[0] == installed
