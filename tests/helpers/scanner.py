"""The real scanners and real advisory databases for the scan tests: osv-scanner and trivy
as .ci/build-scanner.sh builds them (`make test` runs that build beside the first tests:
this waits for it), and the records in tests/data/advisories in osv.dev's layout and in
trivy's database."""
from __future__ import annotations

import contextlib
import datetime as dt
import functools
import http.server
import json
import os
import shutil
import subprocess
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import yaml

from imgkit import labels

from .background import TOOLS, missing, wait_while_building
from .images import ROOT, build_from_files

ADVISORIES = ROOT / "tests" / "data" / "advisories"


SITE = "/opt/venv/lib/python3.11/site-packages"
DIST = "/usr/local/lib/python3.11/dist-packages"
# (where, package, version): on the vulnerable side of each range
HITS = [(SITE, "setuptools", "65.5.0"), (SITE, "urllib3", "1.26.17"), (DIST, "urllib3", "2.0.6"),
        (SITE, "requests", "2.30.0"), (SITE, "py", "1.11.0")]
# (where, package, version, the record whose range it is just past or before)
MISSES = [(SITE, "setuptools", "65.5.1", "PYSEC-2022-43012"),
          (SITE, "setuptools", "70.0.0", "GHSA-cx63-2mw6-8hw5"),
          (SITE, "setuptools", "78.1.1", "GHSA-5rjg-fvgr-3xxf"),
          (SITE, "urllib3", "1.26.18", "PYSEC-2023-212"), (DIST, "urllib3", "2.0.7", "PYSEC-2023-212"),
          (SITE, "requests", "2.31.0", "PYSEC-2023-74"), (DIST, "requests", "2.2.1", "PYSEC-2023-74"),
          (SITE, "py", "1.11.1", "PYSEC-2022-42969"), (DIST, "pip", "23.3", "PYSEC-2023-228"),
          (DIST, "pip", "25.3", "GHSA-4xh5-x5gv-qwph")]
OLD_PIP = (SITE, "pip", "23.0.1")    # the pip bookworm's venv comes with
# dpkg's database saying libc6 (source package glibc) is the bookworm version before the fix
OLD_LIBC = "2.36-9+deb12u2"


def metadata(where: str, name: str, version: str) -> dict[str, bytes]:
    """A distribution as pip leaves it: its dist-info's METADATA (no code: the scanner
    reads what is installed from the metadata, as pip does)."""
    return {f"{where[1:]}/{name}-{version}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()}


def image_with(engine, ref: str, parent: str, packages: list[tuple[str, str, str]],
               old_libc: bool = False, own_labels: bool = False) -> str:
    """`own_labels`: labelled as imgkit labels an image of a chain (its own tag, its parent as
    its base), so a scan of an image on it names it as the one that brought its layers."""
    files: dict[str, bytes] = {}
    for where, name, version in packages:
        files.update(metadata(where, name, version))
    steps = f'LABEL {labels.TAG}="{ref}" {labels.BASE_NAME}="{parent}"\n' if own_labels else ""
    steps += "".join(f"COPY {path} /{path}\n" for path in files)
    if old_libc:    # the libc6 stanza of dpkg's database, as an image that was never upgraded
        steps += ("USER root\nRUN sed -i '/^Package: libc6$/,/^$/ s/^Version: .*/Version: "
                  f"{OLD_LIBC}/' /var/lib/dpkg/status\nUSER imgkit\n")
    return build_from_files(engine, ref, {"Dockerfile": f"FROM {parent}\n{steps}".encode(), **files})


@dataclass(frozen=True)
class ScanImages:
    old_pip: str      # an image of a team's chain holding the pip a distro's venv comes with
    hits: str         # on it: each package on the vulnerable side of a range, an old libc6
    misses: str       # on imgkit's python layer: each just past or before a range


def make_scan_images(engine, python: str, namespace: str) -> ScanImages:
    """The hits stand on an image of a team's chain that holds an old pip (as a venv made
    by the distro alone would); the misses, on imgkit's python layer."""
    old_pip = image_with(engine, f"{namespace}/scan:old-pip", python, [OLD_PIP], own_labels=True)
    hits = image_with(engine, f"{namespace}/scan:hits", old_pip, HITS, old_libc=True)
    misses = image_with(engine, f"{namespace}/scan:misses", python,
                        [(where, name, version) for where, name, version, _ in MISSES])
    return ScanImages(old_pip=old_pip, hits=hits, misses=misses)



def outside_the_tests_project() -> dict[str, str]:
    """The environment with no IMGKIT_* setting but the tests' own cache (tickets, scans)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("IMGKIT_") or k == "IMGKIT_CACHE_DIR"}


def built(name: str, wait: float = 1500) -> Path:
    """A tool .ci/build-scanner.sh builds (osv-scanner, trivy, trivy-fixture), waiting while
    it still builds it."""
    wait_while_building(name, wait)
    binary = TOOLS / "bin" / name
    found = binary if os.access(binary, os.X_OK) else shutil.which(name)
    if found is None:
        missing(name, ".ci/build-scanner.sh")
    return Path(found)


def osv_scanner() -> Path:
    return built("osv-scanner")


def trivy_database(folder: Path, made: dt.datetime | None = None) -> Path:
    """tests/data/advisories/trivy/db.yaml as trivy's offline database (DIR/db/trivy.db, by
    trivy-fixture, and metadata.json saying when it was made: now, unless `made`)."""
    (folder / "db").mkdir(parents=True, exist_ok=True)
    subprocess.run([str(built("trivy-fixture")), str(folder / "db" / "trivy.db"),
                    str(ADVISORIES / "trivy" / "db.yaml")], check=True, capture_output=True)
    when = made or dt.datetime.now(dt.timezone.utc)
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    (folder / "db" / "metadata.json").write_text(json.dumps(
        {"Version": 2, "NextUpdate": stamp, "UpdatedAt": stamp, "DownloadedAt": stamp}))
    return folder


def _json_ready(record: dict[str, object]) -> dict[str, object]:
    """A record read from YAML with its dates as OSV's JSON writes them."""
    return {k: (v.isoformat().replace("+00:00", "Z") if isinstance(v, (dt.date, dt.datetime)) else v)
            for k, v in record.items()}


def advisory_database(folder: Path) -> Path:
    """The records as osv-scanner's offline database: PyPI's (PyPA's and GitHub's records)
    and Debian's zips."""
    by_ecosystem = {"PyPI": [], "Debian": []}   # type: dict[str, list[tuple[str, str]]]
    for path in sorted((ADVISORIES / "pypa").glob("*.yaml")):
        record = _json_ready(yaml.safe_load(path.read_text()))
        by_ecosystem["PyPI"].append((f"{record['id']}.json", json.dumps(record)))
    for path in sorted((ADVISORIES / "ghsa").glob("*.json")):
        by_ecosystem["PyPI"].append((path.name, path.read_text()))
    for path in sorted((ADVISORIES / "debian").glob("*.json")):
        by_ecosystem["Debian"].append((path.name, path.read_text()))
    for ecosystem, records in by_ecosystem.items():
        target = folder / "osv-scalibr" / ecosystem
        target.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(target / "all.zip", "w") as archive:
            for name, text in records:
                archive.writestr(name, text)
    return folder


@contextlib.contextmanager
def served_bucket(tmp_path: Path) -> Iterator[str]:
    """The records in osv.dev's bucket layout (<Ecosystem>/all.zip), served over HTTP on
    127.0.0.1: what IMGKIT_OSV_SOURCE names in place of osv.dev for `scan --update-db`."""
    bucket = tmp_path / "bucket"
    for zipped in advisory_database(tmp_path / "made").rglob("all.zip"):
        target = bucket / zipped.parent.name / "all.zip"
        target.parent.mkdir(parents=True)
        target.write_bytes(zipped.read_bytes())
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(bucket))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
