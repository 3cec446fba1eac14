"""trivy, the other scanner `imgkit scan --scanner trivy` runs: on the image saved as
`docker save` writes it, offline, against the advisory database in trivy's own cache layout
(DIR/db/trivy.db and DIR/db/metadata.json, as `trivy image --download-db-only --cache-dir
DIR` leaves them). Its findings go into the same model as osv-scanner's. What goes wrong
here (no trivy, no database, one of a schema this trivy cannot read, a crash, output that is
not its JSON) is the host's: exit 3, never a pass."""
from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from ..errors import HostError
from .findings import Finding, Unreadable
from .tool import find_tool

ENV = "IMGKIT_TRIVY"
PINNED = "v0.74.0"
MODULE = "github.com/aquasecurity/trivy"
BUILD = (f"CGO_ENABLED=0 GOEXPERIMENT=jsonv2 go install -ldflags '-X {MODULE}/pkg/version/app.ver="
         f"{PINNED[1:]}' {MODULE}/cmd/trivy@{PINNED} (or .ci/build-scanner.sh in imgkit's repository)")
SCHEMA = 2                         # the database schema trivy 0.74 reads (trivy-db's SchemaVersion)
REPOSITORY_ENV = "IMGKIT_TRIVY_DB_REPOSITORY"   # a mirror of trivy's database (an OCI registry)
TIMEOUT = 900
# trivy's result types, as the ecosystems osv-scanner names (waivers name these)
LANGUAGES = {"python-pkg": "PyPI", "pip": "PyPI", "pipenv": "PyPI", "poetry": "PyPI",
             "uv": "PyPI", "conda-pkg": "conda", "node-pkg": "npm", "npm": "npm",
             "gobinary": "Go", "jar": "Maven", "cargo": "crates.io", "rust-binary": "crates.io"}
DISTROS = {"debian": "Debian", "ubuntu": "Ubuntu"}


def find_scanner() -> Path:
    """$IMGKIT_TRIVY, else trivy on PATH, else the one .ci/build-scanner.sh builds."""
    return find_tool("trivy", ENV, "imgkit scan --scanner trivy", BUILD)


def version_of(scanner: Path) -> str:
    done = subprocess.run([str(scanner), "--version"], capture_output=True, text=True, timeout=60)
    said = next((line.split(":", 1)[1].strip() for line in done.stdout.splitlines()
                 if line.startswith("Version:")), "")
    return f"trivy {said}" if said else f"{scanner} (no version said)"


def holds(db: Path) -> bool:
    """Whether `db` holds trivy's database file (scanners.py tells one scanner's from the
    other's)."""
    return (db / "db" / "trivy.db").is_file()


def database(db: Path, now: dt.datetime | None = None) -> tuple[list[str], int | None]:
    """What the database at `db` holds (its schema) and its age in whole days, from when its
    maker says it was made (metadata.json's UpdatedAt); none, or one of another schema, is
    exit 3 saying how to get one."""
    folder = db / "db"
    hint = f"fetch it: imgkit scan --scanner trivy --update-db --db {db} (docs/vulnerabilities.md)"
    try:
        meta = json.loads((folder / "metadata.json").read_text())
    except (OSError, ValueError):
        meta = None
    if not holds(db) or not isinstance(meta, dict):
        raise HostError(f"no trivy database at {db} (looked for {folder}/trivy.db and "
                        "metadata.json)", hint=hint)
    if meta.get("Version") != SCHEMA:
        raise HostError(f"the trivy database at {db} is schema {meta.get('Version')}; trivy "
                        f"{PINNED[1:]} reads schema {SCHEMA}", hint=hint)
    made = _when(meta.get("UpdatedAt"))
    when = now or dt.datetime.now(dt.timezone.utc)
    age = None if made is None else max(0, (when - made).days)
    return [f"trivy-db schema {SCHEMA}"], age


def _when(text: Any) -> dt.datetime | None:
    try:
        found = dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return found if found.tzinfo else found.replace(tzinfo=dt.timezone.utc)


def update(scanner: Path, db: Path, log: Callable[[str], None]) -> None:
    """trivy's own download of its database into `db` (from $IMGKIT_TRIVY_DB_REPOSITORY
    when set: a mirror in an OCI registry). No answer is exit 3."""
    command = [str(scanner), "image", "--download-db-only", "--cache-dir", str(db),
               "--skip-version-check", "--disable-telemetry", "--quiet"]
    mirror = os.environ.get(REPOSITORY_ENV)
    if mirror:
        command += ["--db-repository", mirror]
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise HostError(f"trivy could not fetch its database into {db}: " + " | ".join(said[-2:]),
                        hint="where this machine has no way out, copy a trivy cache's db/ "
                             f"folder into {db}, or name a mirror in {REPOSITORY_ENV}")
    log(f"advisories: trivy's database fetched into {db}")


def run(scanner: Path, archive: Path, db: Path, out: Path) -> Any:
    """trivy's JSON of the saved image at `archive` (its own scan cache in memory: the
    database folder is only read)."""
    command = [str(scanner), "image", "--input", str(archive), "--cache-dir", str(db),
               "--cache-backend", "memory", "--skip-db-update", "--skip-java-db-update",
               "--skip-version-check", "--disable-telemetry", "--offline-scan",
               "--scanners", "vuln", "--list-all-pkgs", "--format", "json", "--output", str(out),
               "--quiet"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise HostError(f"trivy ran past {TIMEOUT} s on {archive.name}") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise HostError(f"trivy failed (exit {done.returncode}): " + " | ".join(said[-3:]))
    try:
        return json.loads(out.read_text())
    except (OSError, ValueError) as exc:
        raise HostError(f"trivy printed no JSON imgkit can read: {exc}") from None


def parse(document: Any, layers: tuple[str, ...] = ()) -> list[Finding]:
    """trivy's JSON (`--format json`, schema 2) as findings, each at the index of its layer
    among `layers` (the image's diff ids); anything else is Unreadable."""
    if not isinstance(document, dict) or document.get("SchemaVersion") != 2:
        raise Unreadable("not trivy's JSON report (SchemaVersion 2)")
    found: list[Finding] = []
    try:
        metadata = document.get("Metadata") or {}
        release = str((metadata.get("OS") or {}).get("Name") or "")
        steps = [str(h.get("created_by") or "") for h in
                 (metadata.get("ImageConfig") or {}).get("history") or [] if not h.get("empty_layer")]
        for result in document.get("Results") or []:
            ecosystem = _ecosystem(result, release)
            # what trivy found the package by (--list-all-pkgs): its source, its file
            packages = {str((p.get("Identifier") or {}).get("UID")): p
                        for p in result.get("Packages") or []}
            for vuln in result.get("Vulnerabilities") or []:
                package = packages.get(str((vuln.get("PkgIdentifier") or {}).get("UID")), {})
                finding = _finding(vuln, package, ecosystem, str(result.get("Target") or ""), layers)
                if finding.layer is not None and finding.layer < len(steps):
                    finding = replace(finding, step=steps[finding.layer])
                found.append(finding)
    except (AttributeError, TypeError, ValueError, KeyError) as exc:
        raise Unreadable(f"{type(exc).__name__}: {exc}") from None
    return found


def _ecosystem(result: dict[str, Any], release: str) -> str:
    """osv-scanner's name for it: Debian:12, Ubuntu:22.04, PyPI."""
    kind = str(result.get("Type") or "")
    if result.get("Class") == "os-pkgs":
        distro = DISTROS.get(kind, kind)
        major = release.split(".")[0] if kind == "debian" else release
        return f"{distro}:{major}" if major else distro
    return LANGUAGES.get(kind, kind)


def _finding(vuln: dict[str, Any], package: dict[str, Any], ecosystem: str, target: str,
             layers: tuple[str, ...]) -> Finding:
    diff_id = (vuln.get("Layer") or {}).get("DiffID")
    # a Debian advisory is about the source package (glibc), as osv-scanner names it
    name = package.get("SrcName") if ecosystem.startswith(("Debian", "Ubuntu")) else None
    fixed = [v.strip() for v in str(vuln.get("FixedVersion") or "").split(",") if v.strip()]
    # a package only an SBOM in the image names is a copy another package vendors (pip's
    # bom.cdx.json lists the setuptools its pkg_resources comes from)
    vendored = package.get("AnalyzedBy") == "sbom"
    found_in = package.get("FilePath") or vuln.get("PkgPath") or (
        "var/lib/dpkg/status" if package.get("AnalyzedBy") == "dpkg" else "")
    path = ("/" + str(found_in).lstrip("/") if found_in else
            "vendored in another package (an SBOM in the image lists it)" if vendored else target)
    return Finding(
        id=str(vuln["VulnerabilityID"]), aliases=tuple(str(a) for a in vuln.get("VendorIDs") or ()),
        package=str(name or vuln["PkgName"]), ecosystem=ecosystem,
        installed=str(vuln.get("InstalledVersion") or ""), fixed=tuple(dict.fromkeys(fixed)),
        score=_score(vuln), rated=str(vuln.get("Severity") or "").lower(),
        path=str(path), vendored=vendored,
        layer=layers.index(diff_id) if diff_id in layers else None,
        summary=str(vuln.get("Title") or vuln.get("Description") or "").strip()[:200])


def _score(vuln: dict[str, Any]) -> float | None:
    """The CVSS v3 base score of the source trivy took its severity from, else the highest
    any source gives."""
    cvss = vuln.get("CVSS") or {}
    chosen = (cvss.get(vuln.get("SeveritySource")) or {}).get("V3Score")
    scores = [s.get("V3Score") for s in cvss.values() if isinstance(s, dict)]
    numbers = [float(s) for s in [chosen, *scores] if isinstance(s, (int, float))]
    return (float(chosen) if isinstance(chosen, (int, float)) else max(numbers)) if numbers else None
