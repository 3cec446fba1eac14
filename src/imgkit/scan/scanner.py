"""osv-scanner, run on an image saved as `docker save` writes it, offline, against the
advisory database in a folder (osv.dev's zips: DIR/osv-scalibr/<Ecosystem>/all.zip). What
goes wrong here (no scanner, no database, a database without an ecosystem the image has, a
crash, output that is not its JSON) is the host's: exit 3, never a pass."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from ..errors import HostError
from .tool import find_tool

ENV = "IMGKIT_OSV_SCANNER"
PINNED = "v2.6.0"
MODULE = "github.com/google/osv-scanner/v2"
BUILD = (f"GOTOOLCHAIN=go1.27.3 go install {MODULE}/cmd/osv-scanner@{PINNED}"
         " (or .ci/build-scanner.sh in imgkit's repository)")
DB_LAYOUT = "osv-scalibr"          # where osv-scanner 2.6 reads DIR/osv-scalibr/<Ecosystem>/all.zip
DB_HOST = "https://osv-vulnerabilities.storage.googleapis.com"   # osv.dev's bucket
DB_SOURCE = DB_HOST + "/<Ecosystem>/all.zip"
TIMEOUT = 900


def find_scanner() -> Path:
    """$IMGKIT_OSV_SCANNER, else osv-scanner on PATH, else the one .ci/build-scanner.sh builds."""
    return find_tool("osv-scanner", ENV, "imgkit scan", BUILD)


def version_of(scanner: Path) -> str:
    done = subprocess.run([str(scanner), "--version"], capture_output=True, text=True, timeout=60)
    first = done.stdout.splitlines()[0] if done.stdout else ""
    return first.replace("osv-scanner version: ", "osv-scanner ") or f"{scanner} (no version said)"


def holds(db: Path) -> bool:
    """Whether `db` is laid out as osv-scanner's database (scanners.py tells one scanner's
    from the other's)."""
    return (db / DB_LAYOUT).is_dir()


def database_zips(db: Path) -> dict[str, Path]:
    """Each ecosystem the database at `db` holds, with its zip; none is exit 3 saying where
    to get them."""
    held = {p.parent.name: p for p in sorted((db / DB_LAYOUT).glob("*/all.zip"))}
    if not held:
        near = next((d for d in (db.parent, db.parent.parent) if holds(d) and d != db), None)
        raise HostError(f"no advisory database at {db} (looked for {db}/{DB_LAYOUT}/<Ecosystem>/all.zip)",
                        hint=f"did you mean --db {near}? it holds one" if near else
                             f"fetch it: imgkit scan --update-db --db {db}; offline, fetch "
                             f"osv.dev's zips where the network allows: {fetch_command(db)} "
                             "(docs/vulnerabilities.md)")
    return held


def fetch_command(db: Path, ecosystems: tuple[str, ...] = ("PyPI", "Debian")) -> str:
    """The shell loop that fetches osv.dev's zips into the layout the scanner reads."""
    url = DB_SOURCE.replace("<Ecosystem>", "$e")
    return (f"for e in {' '.join(ecosystems)}; do mkdir -p {db}/{DB_LAYOUT}/$e && "
            f"curl -fsSLo {db}/{DB_LAYOUT}/$e/all.zip {url}; done")


def run(scanner: Path, archive: Path, db: Path, out: Path) -> Any:
    """The scanner's JSON of the saved image at `archive`."""
    command = [str(scanner), "scan", "image", "--archive", str(archive), "--offline",
               "--offline-vulnerabilities", "--format", "json", "--output-file", str(out)]
    env = {**os.environ, "OSV_SCANNER_LOCAL_DB_CACHE_DIRECTORY": str(db)}
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise HostError(f"osv-scanner ran past {TIMEOUT} s on {archive.name}") from None
    said = (done.stderr or done.stdout).strip().splitlines()
    missing = next((line for line in said if "could not load db for" in line), None)
    if missing:
        ecosystem = missing.split("could not load db for", 1)[1].split()[0]
        raise HostError(f"the advisory database at {db} has no {ecosystem} records, and the image "
                        f"holds {ecosystem} packages", hint=f"fetch it: {fetch_command(db, (ecosystem,))}")
    if done.returncode not in (0, 1):      # 1: vulnerabilities found; anything else failed
        raise HostError(f"osv-scanner failed (exit {done.returncode}): " + " | ".join(said[-3:]))
    try:
        return json.loads(out.read_text())
    except (OSError, ValueError) as exc:
        raise HostError(f"osv-scanner printed no JSON imgkit can read: {exc}") from None
