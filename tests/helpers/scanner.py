"""The real scanner and a real advisory database for the scan tests: osv-scanner as
.ci/build-scanner.sh builds it (`make test` runs that build beside the first tests: this
waits for it), and osv.dev's layout of the records in tests/data/advisories."""
from __future__ import annotations

import contextlib
import datetime as dt
import functools
import http.server
import json
import os
import shutil
import threading
import time
import zipfile
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from .images import ROOT

TOOLS = Path(os.environ.get("IMGKIT_TOOLS") or Path.home() / ".cache" / "imgkit-tools")
ADVISORIES = ROOT / "tests" / "data" / "advisories"


def osv_scanner(wait: float = 900) -> Path:
    """The built scanner, waiting while .ci/build-scanner.sh still builds it."""
    binary, status = TOOLS / "bin" / "osv-scanner", TOOLS / "osv-scanner.status"
    deadline = time.monotonic() + wait
    while status.is_file() and status.read_text().strip() == "building" and time.monotonic() < deadline:
        time.sleep(5)
    found = binary if os.access(binary, os.X_OK) else shutil.which("osv-scanner")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("no osv-scanner: .ci/build-scanner.sh builds it")
        pytest.skip("no osv-scanner: run .ci/build-scanner.sh")
    return Path(found)


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
