"""trivy's side of the scan, no engine: its real JSON (the pinned trivy's output on the
tests' hits image, tests/data/scan, with --list-all-pkgs's package lists cut to the
packages that have findings) as findings in the one model, its database's layout,
schema and age, and the scanner's name as a setting."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from imgkit.errors import HostError, UsageError
from imgkit.scan import trivy
from imgkit.scan.findings import Unreadable
from imgkit.scan.scanners import scanner_named

REAL = Path(__file__).parent / "data" / "scan" / "trivy-0.74.0.json"
NOW = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.timezone.utc)


def real() -> tuple[dict, tuple[str, ...]]:
    document = json.loads(REAL.read_text())
    return document, tuple(document["Metadata"]["DiffIDs"])


def test_the_real_output_maps_ids_aliases_source_packages_and_layers() -> None:
    document, layers = real()
    found = {(f.id, f.package, f.installed): f for f in trivy.parse(document, layers)}
    glibc = found[("CVE-2023-4911", "glibc", "2.36-9+deb12u2")]       # libc6, by its source
    assert glibc.ecosystem == "Debian:12" and glibc.path == "/var/lib/dpkg/status"
    assert glibc.aliases == ("DSA-5514-1",) and glibc.fixed == ("2.36-9+deb12u3",)
    assert glibc.layer == 10 and "sed -i" in glibc.step
    urllib3 = found[("CVE-2023-45803", "urllib3", "2.0.6")]
    assert set(urllib3.fixed) == {"1.26.18", "2.0.7"} and urllib3.ecosystem == "PyPI"
    assert urllib3.path == "/usr/local/lib/python3.11/dist-packages/urllib3-2.0.6.dist-info/METADATA"
    high = found[("CVE-2024-6345", "setuptools", "65.5.0")]
    assert (high.level, high.score, high.rated) == ("high", 8.8, "high")
    pip = found[("CVE-2023-5752", "pip", "23.0.1")]
    assert (pip.level, pip.layer) == ("low", 4) and "COPY" in pip.step
    unrated = found[("CVE-2022-42969", "py", "1.11.0")]   # no rating, no score: unknown
    assert (unrated.level, unrated.fixed) == ("unknown", ())


def test_a_copy_only_an_sbom_names_is_vendored() -> None:
    """pip's own bom.cdx.json lists the setuptools its pkg_resources comes from; trivy reads
    it, and the finding is a vendored copy in the python layer's RUN."""
    document, layers = real()
    [vendored] = [f for f in trivy.parse(document, layers) if f.vendored]
    assert (vendored.id, vendored.package, vendored.installed) == ("CVE-2025-47273", "setuptools",
                                                                   "70.3.0")
    assert vendored.path.startswith("vendored") and vendored.step.startswith("RUN")


def test_without_the_layers_a_finding_has_no_layer_and_trivys_rating_still_decides() -> None:
    document, _ = real()
    found = trivy.parse(document)
    assert {f.layer for f in found} == {None}
    assert {f.level for f in found if f.id == "CVE-2025-47273"} == {"high"}


@pytest.mark.parametrize("document", [[], {"SchemaVersion": 1}, {"SchemaVersion": 2, "Results": [
    {"Class": "lang-pkgs", "Type": "python-pkg", "Vulnerabilities": [{"PkgName": "pip"}]}]}])
def test_what_trivy_never_writes_is_unreadable(document: object) -> None:
    with pytest.raises(Unreadable):
        trivy.parse(document)


def database(tmp_path: Path, meta: object, db_file: bool = True) -> Path:
    (tmp_path / "db").mkdir(parents=True)
    if db_file:
        (tmp_path / "db" / "trivy.db").write_bytes(b"")
    (tmp_path / "db" / "metadata.json").write_text(json.dumps(meta))
    return tmp_path


def test_the_database_is_trivys_layout_schema_2_aged_by_its_metadata(tmp_path: Path) -> None:
    db = database(tmp_path, {"Version": 2, "UpdatedAt": "2026-11-18T06:00:00.123Z"})
    assert trivy.database(db, NOW) == (["trivy-db schema 2"], 10)


@pytest.mark.parametrize("meta, db_file, said", [
    ({"Version": 2, "UpdatedAt": "2026-11-27T00:00:00Z"}, False, "no trivy database"),
    ("not an object", True, "no trivy database"),
    ({"Version": 1, "UpdatedAt": "2026-11-27T00:00:00Z"}, True, "schema 1")])
def test_a_database_trivy_cannot_read_is_the_hosts(tmp_path: Path, meta: object, db_file: bool,
                                                    said: str) -> None:
    with pytest.raises(HostError, match=said):
        trivy.database(database(tmp_path, meta, db_file), NOW)


def test_the_scanner_is_named_or_the_default_and_no_other() -> None:
    assert scanner_named(None).name == "osv-scanner"
    assert scanner_named("trivy").name == "trivy"
    with pytest.raises(UsageError, match="grype"):
        scanner_named("grype")


def test_the_vuln_predicate_names_trivys_module_as_the_scanner(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from imgkit.scan import record
    monkeypatch.setenv("IMGKIT_CACHE_DIR", str(tmp_path))
    image_id = "sha256:" + "c" * 64
    record.keep(record.ScanRecord(image_id=image_id, image="ml/x:1", failed=False, failing=[],
                                  fail_on="high", scanner="trivy 0.74.0", database_age_days=0,
                                  recorded_at=0.0, database="/db"), '{"findings": []}')
    predicate = json.loads(record.vuln_predicate(image_id) or b"{}")
    assert predicate["scanner"]["uri"] == "pkg:golang/github.com/aquasecurity/trivy@v0.74.0"
    assert predicate["scanner"]["version"] == "0.74.0"


def test_one_scanners_database_given_to_the_other_says_which_it_is(tmp_path: Path) -> None:
    from imgkit.scan.scanners import scanner_named
    trivy_db = database(tmp_path / "t", {"Version": 2})
    with pytest.raises(HostError, match="is trivy's database") as info:
        scanner_named("osv-scanner").database(trivy_db)
    assert "--scanner trivy" in info.value.hint
    (tmp_path / "o" / "osv-scalibr" / "PyPI").mkdir(parents=True)
    with pytest.raises(HostError, match="is osv-scanner's database"):
        scanner_named("trivy").database(tmp_path / "o")
