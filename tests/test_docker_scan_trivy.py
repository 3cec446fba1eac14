"""`imgkit scan --scanner trivy` with the real trivy (built from its Go module by
.ci/build-scanner.sh), offline, against a trivy database holding the same real advisories
as osv-scanner's tests (tests/data/advisories/trivy, written by trivy's own fixture loader),
on the same images: the findings are trivy's own, in the same model, with the layer and
image of the chain that brought each package; what the host lacks is exit 3."""
from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers.scanner import MISSES, OLD_LIBC, ScanImages, built, outside_the_tests_project, trivy_database

pytestmark = pytest.mark.docker

# (id, package, installed): the records as trivy keys them (by CVE), on the hits image
HITS = {("CVE-2022-40897", "setuptools", "65.5.0"), ("CVE-2024-6345", "setuptools", "65.5.0"),
        ("CVE-2025-47273", "setuptools", "65.5.0"), ("CVE-2023-45803", "urllib3", "1.26.17"),
        ("CVE-2023-45803", "urllib3", "2.0.6"), ("CVE-2023-32681", "requests", "2.30.0"),
        ("CVE-2022-42969", "py", "1.11.0"), ("CVE-2023-5752", "pip", "23.0.1"),
        ("CVE-2025-8869", "pip", "23.0.1"), ("CVE-2023-4911", "glibc", OLD_LIBC)}
# osv-scanner's record -> the CVE trivy keys it by
CVE = {"PYSEC-2022-43012": "CVE-2022-40897", "GHSA-cx63-2mw6-8hw5": "CVE-2024-6345",
       "GHSA-5rjg-fvgr-3xxf": "CVE-2025-47273", "PYSEC-2023-212": "CVE-2023-45803",
       "PYSEC-2023-74": "CVE-2023-32681", "PYSEC-2022-42969": "CVE-2022-42969",
       "PYSEC-2023-228": "CVE-2023-5752", "GHSA-4xh5-x5gv-qwph": "CVE-2025-8869"}


@pytest.fixture(scope="module")
def trivy_db(tmp_path_factory) -> Path:
    return trivy_database(tmp_path_factory.mktemp("trivy-db"))


def imgkit_scan(image: str, *args: str, cwd: Path, trivy: str | None = None,
                extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**outside_the_tests_project(), "IMGKIT_TRIVY": trivy or str(built("trivy")),
           **(extra_env or {})}
    done = subprocess.run([sys.executable, "-m", "imgkit", "scan", image, "--scanner", "trivy",
                           *args], capture_output=True, text=True, timeout=900, cwd=cwd, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def scan(db: Path, tmp_path: Path, image: str, *args: str) -> tuple[int, dict, str]:
    out = tmp_path / f"scan-{len(list(tmp_path.glob('scan-*')))}.json"
    done = imgkit_scan(image, "--db", str(db), "--json", str(out), *args, cwd=tmp_path)
    document = json.loads(out.read_text()) if out.is_file() else {}
    return done.returncode, document, done.stdout + done.stderr


def found(document: dict) -> set[tuple[str, str, str]]:
    return {(f["id"], f["package"], f["installed"]) for f in document["findings"]}


def test_trivy_finds_each_side_of_every_range_in_the_same_model(
        scan_images: ScanImages, trivy_db, tmp_path, namespace) -> None:
    code, document, said = scan(trivy_db, tmp_path, scan_images.hits)
    assert HITS <= found(document), (HITS - found(document), said)
    assert document["scanner"] == "trivy 0.74.0", document["scanner"]
    by_id = {(f["id"], f["installed"]): f for f in document["findings"]}
    glibc = by_id[("CVE-2023-4911", OLD_LIBC)]     # libc6, matched by its source package
    assert glibc["ecosystem"] == "Debian:12" and glibc["fixed"] == ["2.36-9+deb12u3"], glibc
    assert "DSA-5514-1" in glibc["aliases"] and "sed -i" in glibc["step"], glibc
    assert set(by_id[("CVE-2023-45803", "2.0.6")]["fixed"]) == {"1.26.18", "2.0.7"}
    assert by_id[("CVE-2023-5752", "23.0.1")]["origin"] == f"{namespace}/scan:old-pip"
    assert by_id[("CVE-2022-42969", "1.11.0")]["origin"] == scan_images.hits
    # trivy's own ratings decide: GitHub's high for setuptools fails the default gate
    assert (by_id[("CVE-2024-6345", "65.5.0")]["level"], by_id[("CVE-2024-6345", "65.5.0")]["verdict"]) \
        == ("high", "fail")
    assert by_id[("CVE-2023-5752", "23.0.1")]["level"] == "low"
    assert code == 1 and "FAILED" in said
    # each just past or before its record's range: not found by that record
    _, clean, said = scan(trivy_db, tmp_path, scan_images.misses, "--fail-on", "low")
    for _, name, version, record in MISSES:
        assert (CVE[record], name, version) not in found(clean), (record, name, version, said)
    # and trivy reads pip's bom.cdx.json: its pkg_resources comes from setuptools 70.3.0
    assert [(f["id"], f["installed"]) for f in clean["findings"] if f["vendored"]] \
        == [("CVE-2025-47273", "70.3.0")], said


def test_the_findings_are_trivys_own_json(scan_images: ScanImages, trivy_db, engine,
                                          tmp_path) -> None:
    """trivy run by hand on the same saved image and database finds exactly what imgkit
    reports: imgkit maps, it does not match."""
    archive = tmp_path / "hits.tar"
    with archive.open("wb") as out:
        for chunk in engine.save(engine.image(scan_images.hits).id):
            out.write(chunk)
    own = tmp_path / "own.json"
    subprocess.run([str(built("trivy")), "image", "--input", str(archive), "--cache-dir",
                    str(trivy_db), "--cache-backend", "memory", "--skip-db-update",
                    "--skip-java-db-update", "--offline-scan", "--scanners", "vuln", "--format",
                    "json", "--list-all-pkgs", "--output", str(own), "--quiet"],
                   check=True, timeout=600)
    theirs = set()
    for result in json.loads(own.read_text()).get("Results") or []:
        sources = {p["Identifier"]["UID"]: p.get("SrcName") for p in result.get("Packages") or []}
        for v in result.get("Vulnerabilities") or []:      # a Debian package: by its source
            source = sources.get(v["PkgIdentifier"]["UID"]) if result["Class"] == "os-pkgs" else None
            theirs.add((v["VulnerabilityID"], source or v["PkgName"], v["InstalledVersion"]))
    _, document, said = scan(trivy_db, tmp_path, scan_images.hits)
    assert found(document) == theirs, said


def test_waivers_by_a_debian_advisory_and_of_a_vendored_copy(scan_images: ScanImages, trivy_db,
                                                              tmp_path) -> None:
    """A waiver written with osv-scanner's id (DSA-5514-1) covers trivy's CVE finding (trivy
    gives the DSA as an alias); glibc has a fix, so that waiver fails, saying so. A waiver of
    the setuptools inside pip holds though setuptools has a fix: no upgrade reaches that copy.
    The scanner and database come from the project file."""
    project = tmp_path / "project"
    (project / "images").mkdir(parents=True)
    (project / "imgkit.toml").write_text(f'images = "images"\nvulnerability_db = "{trivy_db}"\n'
                                         'scanner = "trivy"\n')
    later = (dt.date.today() + dt.timedelta(days=30)).isoformat()
    (project / "images" / "vulnerabilities.yaml").write_text(
        f"waivers:\n  - {{id: DSA-5514-1, package: glibc, ecosystem: Debian, expires: {later},\n"
        "     reason: no setuid programs run in the image, who: ml-platform}\n"
        f"  - {{id: CVE-2025-47273, package: setuptools, ecosystem: PyPI, expires: {later},\n"
        "     reason: pip vendors pkg_resources only; package_index is not in it, who: ml-platform}\n")
    out = tmp_path / "waived.json"
    done = imgkit_scan(scan_images.hits, "--json", str(out), "--fail-on", "critical", cwd=project)
    glibc = next(f for f in json.loads(out.read_text())["findings"] if f["package"] == "glibc")
    assert done.returncode == 1 and glibc["verdict"] == "fail", done.stdout + done.stderr
    assert "2.36-9+deb12u3 fixes it now" in glibc["why"] and "setuid" in glibc["why"], glibc
    done = imgkit_scan(scan_images.misses, "--json", str(out), "--fail-on", "low", cwd=project)
    [vendored] = [f for f in json.loads(out.read_text())["findings"] if f["vendored"]]
    assert vendored["verdict"] == "waived" and "vendored copy" in vendored["why"], vendored
    assert "trivy 0.74.0" in done.stdout


def test_what_the_host_lacks_is_exit_3_never_a_pass(scan_images: ScanImages, trivy_db,
                                                    tmp_path) -> None:
    image = scan_images.misses
    empty = tmp_path / "empty"
    empty.mkdir()
    none = imgkit_scan(image, "--db", str(empty), cwd=tmp_path)
    assert none.returncode == 3 and "no trivy database" in none.stderr, none.stderr
    old_schema = trivy_database(tmp_path / "v1")
    (old_schema / "db" / "metadata.json").write_text(json.dumps({"Version": 1}))
    other = imgkit_scan(image, "--db", str(old_schema), cwd=tmp_path)
    assert other.returncode == 3 and "schema 1" in other.stderr, other.stderr
    crashing = tmp_path / "crash.sh"
    crashing.write_text("#!/bin/sh\necho 'Version: 0.74.0'\nexit 2\n")
    crashing.chmod(0o755)
    crashed = imgkit_scan(image, "--db", str(trivy_db), cwd=tmp_path, trivy=str(crashing))
    assert crashed.returncode == 3 and "trivy failed" in crashed.stderr, crashed.stderr
    stale = trivy_database(tmp_path / "stale", dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=30))
    old = imgkit_scan(image, "--db", str(stale), "--fail-on", "critical", cwd=tmp_path)
    assert old.returncode == 0 and "30 days old" in old.stderr, old.stderr
    unreachable = imgkit_scan(image, "--db", str(tmp_path / "fetched"), "--update-db", cwd=tmp_path,
                              extra_env={"IMGKIT_TRIVY_DB_REPOSITORY": "127.0.0.1:9/trivy-db:2"})
    assert unreachable.returncode == 3 and "could not fetch" in unreachable.stderr, unreachable.stderr
    unknown = subprocess.run([sys.executable, "-m", "imgkit", "scan", image, "--scanner", "grype",
                              "--db", str(trivy_db)], capture_output=True, text=True, cwd=tmp_path)
    assert unknown.returncode == 2 and "osv-scanner, trivy" in unknown.stderr, unknown.stderr
