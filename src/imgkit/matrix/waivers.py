"""images/vulnerabilities.yaml: the known vulnerabilities a team ships on purpose, each with
a reason, who decided, and when that decision runs out, as code beside the families (as AWS's
Deep Learning Containers keep their allowlists). Read and validated with the matrix: every
problem of the file said at once, with its line. `imgkit scan` applies them (scan/gate.py).

    waivers:
      - id: CVE-2023-5752            # the advisory's id or any of its aliases
        package: pip
        ecosystem: PyPI              # as the scanner names it: PyPI, Debian...
        reason: "pip in the venv never installs from Mercurial URLs"
        who: ml-platform@example.com
        expires: 2027-03-31          # after it, the finding fails again
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .. import yamlload
from ..errors import SpecError, every_problem
from .fields import meant, refusal
from .problems import key_of, line_of, plainly

FILE_NAME = "vulnerabilities.yaml"
UNKNOWN = "not a key of a waiver"
# Ecosystems as OSV names them (osv-scanner; imgkit names trivy's findings the same), the
# ones a GPU image holds first. The list grows: a name not here and near none is taken as
# a newer one; a near miss ("pypi.org", "golang") or a tool's name for one is refused.
ECOSYSTEMS = ("PyPI", "Debian", "Ubuntu", "conda", "npm", "Go", "Maven", "crates.io",
              "NuGet", "RubyGems", "Packagist", "Alpine", "Red Hat", "Rocky Linux",
              "AlmaLinux", "SUSE", "openSUSE", "Wolfi", "Chainguard", "Linux")
SAID_OTHERWISE = {"pip": "PyPI", "python": "PyPI", "pypa": "PyPI", "apt": "Debian",
                  "dpkg": "Debian", "deb": "Debian", "node": "npm", "javascript": "npm",
                  "golang": "Go", "cargo": "crates.io", "rust": "crates.io", "java": "Maven"}


class Waiver(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=3, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]+$")
    package: str = Field(min_length=1)
    ecosystem: str = Field(min_length=1)
    reason: str = Field(min_length=10)
    who: str = Field(min_length=1)
    expires: dt.date

    @field_validator("ecosystem")
    @classmethod
    def _known(cls, value: str) -> str:
        name = value.split(":")[0].strip()
        if name.lower() in (e.lower() for e in ECOSYSTEMS):
            return value
        near = SAID_OTHERWISE.get(name.lower()) or meant(name, list(ECOSYSTEMS), cutoff=0.65)
        if near:
            raise refusal(f"{value!r} is not an ecosystem as the scanners name it",
                          hint=f"did you mean {near!r}?")
        return value

    def covers(self, names: frozenset[str], package: str, ecosystem: str) -> bool:
        """Whether this waiver holds for a finding: by id or alias, package, and ecosystem
        (`Debian` holds on every Debian release, `Debian:12` on Debian 12 only)."""
        mine = self.ecosystem.lower().replace(" ", "")
        theirs = ecosystem.lower().replace(" ", "")
        return (self.id in names and self.package.lower() == package.lower()
                and (mine == theirs or (":" not in mine and mine == theirs.split(":")[0])))


class WaiverFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    waivers: list[Waiver] = []


def waivers_path(images: Path) -> Path:
    return images / FILE_NAME


def load_waivers(path: Path) -> tuple[Waiver, ...]:
    """The waivers in `path` (none when there is no such file), or every problem of it."""
    if not path.is_file():
        return ()
    raw, lines = yamlload.read_with_lines(path)
    try:
        return tuple(WaiverFile.model_validate(raw if raw is not None else {}).waivers)
    except ValidationError as error:
        raise every_problem(sorted([SpecError(str(path), key_of(e["loc"]), reason,
                                       hint=_hint(e) or hint, line=line_of(e["loc"], lines))
                             for e in error.errors() for reason, hint in [plainly(e, UNKNOWN, WaiverFile)]],
                                   key=lambda p: p.line or 0)) from None


def _hint(error: Any) -> str:
    """The waivers file's own hint for a problem, where it has one (else plainly's)."""
    if error["type"] in ("extra_forbidden", "missing", "model_type"):
        return "a waiver has: id, package, ecosystem, reason, who, expires (YYYY-MM-DD)"
    if error["loc"][-1:] == ("reason",):
        return "say why the finding is safe to ship, in a sentence"
    return ""
