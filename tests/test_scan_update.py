"""`imgkit scan --update-db`: osv.dev's zips fetched into the layout osv-scanner reads, from a
real HTTP server on 127.0.0.1 standing in for osv.dev's bucket (IMGKIT_OSV_SOURCE): missing
or day-old zips fetched, fresh ones left, an unreachable source exit 3 with nothing half
written; and `imgkit ci` in a project that names a database fetches them before attest."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from imgkit.scan.database import ecosystems_for

from .helpers.scanner import served_bucket


@pytest.fixture()
def osv_bucket(tmp_path: Path) -> Iterator[str]:
    with served_bucket(tmp_path) as url:
        yield url


def update_db(db: Path, source: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "imgkit", "scan", "--update-db", "--db", str(db)],
                          capture_output=True, text=True, cwd=cwd, timeout=120,
                          env={**os.environ, "IMGKIT_OSV_SOURCE": source})


def test_the_zips_are_fetched_once_a_day_into_the_scanners_layout(osv_bucket: str,
                                                                  tmp_path: Path) -> None:
    db = tmp_path / "advisories"
    first = update_db(db, osv_bucket, tmp_path)
    assert first.returncode == 0, first.stderr
    zips = {p.parent.name: p for p in db.glob("osv-scalibr/*/all.zip")}
    assert set(zips) == {"PyPI", "Debian"}
    served = tmp_path / "bucket" / "PyPI" / "all.zip"
    assert zips["PyPI"].read_bytes() == served.read_bytes()
    assert "PyPI fetched from" in first.stderr and "Debian fetched from" in first.stderr
    again = update_db(db, osv_bucket, tmp_path)               # fresh: nothing fetched
    assert again.returncode == 0 and "fetched" not in again.stderr, again.stderr
    day_old = time.time() - 86400 - 60
    os.utime(zips["Debian"], (day_old, day_old))
    later = update_db(db, osv_bucket, tmp_path)
    assert "Debian fetched from" in later.stderr and "PyPI fetched" not in later.stderr


def test_an_unreachable_source_is_the_hosts_exit_3_and_leaves_the_copy_before(
        osv_bucket: str, tmp_path: Path) -> None:
    db = tmp_path / "advisories"
    assert update_db(db, osv_bucket, tmp_path).returncode == 0
    kept = (db / "osv-scalibr" / "PyPI" / "all.zip").read_bytes()
    day_old = time.time() - 2 * 86400
    for path in db.rglob("all.zip"):
        os.utime(path, (day_old, day_old))
    gone = update_db(db, "http://127.0.0.1:9", tmp_path)     # nothing listens there
    assert gone.returncode == 3, gone.stderr
    assert "could not fetch" in gone.stderr and "Traceback" not in gone.stderr
    assert (db / "osv-scalibr" / "PyPI" / "all.zip").read_bytes() == kept
    assert not list(db.rglob("*.part"))
    nothing = subprocess.run([sys.executable, "-m", "imgkit", "scan"], capture_output=True,
                             text=True, cwd=tmp_path)
    assert nothing.returncode == 2 and "needs an IMAGE" in nothing.stderr


def test_the_ecosystems_are_pypi_and_those_of_the_distributions_built_on() -> None:
    assert ecosystems_for([]) == ("PyPI", "Debian")
    assert ecosystems_for(["debian"]) == ("PyPI", "Debian")
    assert ecosystems_for(["ubuntu", "debian"]) == ("PyPI", "Debian", "Ubuntu")


def test_imgkit_ci_in_a_project_that_names_a_database_fetches_it_before_attest(
        tmp_path: Path) -> None:
    root = Path(__file__).resolve().parent.parent
    (tmp_path / "imgkit.toml").write_text(f'images = "{root / "images"}"\n'
                                          'vulnerability_db = "advisories"\n')
    out = tmp_path / "ci.yml"
    done = subprocess.run([sys.executable, "-m", "imgkit", "ci", "gitlab", "--registry",
                           "registry.example.com/ml", "--cuda", "11.8", "--out", str(out)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.index("imgkit scan --update-db") < text.index("imgkit attest")
