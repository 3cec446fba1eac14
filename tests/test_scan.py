"""The scan's pure parts, no engine: osv-scanner's JSON as findings (a real output of the
pinned scanner, tests/data/scan), the gate's decision at each threshold, waivers, and the
waiver file's problems, every one at once with its line."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from imgkit.errors import SpecError, SpecErrors
from imgkit.matrix.waivers import Waiver, load_waivers
from imgkit.registry.cosign import Statement
from imgkit.scan import attested
from imgkit.scan.findings import Finding, Unreadable, parse
from imgkit.scan.gate import at_or_above, decide
from imgkit.scan.report import lines

REAL = Path(__file__).parent / "data" / "scan" / "osv-scanner-2.6.0.json"
TODAY = dt.date(2026, 11, 27)


def finding(score: float | None, fixed: tuple[str, ...] = (), vid: str = "PYSEC-1",
            aliases: tuple[str, ...] = ("CVE-2000-1",), package: str = "pip",
            ecosystem: str = "PyPI") -> Finding:
    return Finding(id=vid, aliases=aliases, package=package, ecosystem=ecosystem,
                   installed="1.0", fixed=fixed, score=score)


def waiver(expires: dt.date = TODAY, **overrides: str) -> Waiver:
    fields = {"id": "CVE-2000-1", "package": "pip", "ecosystem": "PyPI",
              "reason": "never reached in this image", "who": "ml-platform", **overrides}
    return Waiver(expires=expires, **fields)


def test_the_scanners_own_output_maps_each_package_its_layer_and_step() -> None:
    found = parse(json.loads(REAL.read_text()))
    assert [(f.id, f.package, f.installed, f.level, f.fixed) for f in found] == [
        ("PYSEC-2023-228", "pip", "23.0.1", "low", ("23.3",))] * 2
    assert found[0].aliases == ("CVE-2023-5752",) and found[0].score == 3.3
    # the scanner's index counts history (empty steps too): entry 2 is the root filesystem's
    # next layer, 1, made by the python layer's RUN
    assert found[0].layer == 1 and found[0].step.startswith("RUN /bin/sh -c printf")
    assert found[0].path.endswith("pip-23.0.1.dist-info/METADATA")
    assert found[1].path == "/usr/share/python-wheels/pip-23.0.1-py3-none-any.whl"


@pytest.mark.parametrize("document", [[], {"results": "x"}, {"results": [{"packages": [{}]}]},
                                      {"results": [{"packages": [{"package": {"name": "a"},
                                                                  "vulnerabilities": [{}]}]}]}])
def test_what_the_scanner_never_writes_is_unreadable(document: object) -> None:
    with pytest.raises(Unreadable):
        parse(document)


def test_a_fix_is_its_own_release_and_never_a_commit() -> None:
    vuln = {"id": "DSA-1", "affected": [
        {"package": {"name": "glibc", "ecosystem": "Debian:11"},
         "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "2.31-13+deb11u7"}]}]},
        {"package": {"name": "glibc", "ecosystem": "Debian:12"},
         "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "2.36-9+deb12u3"}]},
                    {"type": "GIT", "events": [{"introduced": "0"}, {"fixed": "4e98d578"}]}]}]}
    document = {"results": [{"packages": [{"package": {"name": "glibc", "version": "2.36-9",
                                                       "ecosystem": "Debian:12"},
                                           "vulnerabilities": [vuln]}]}]}
    assert parse(document)[0].fixed == ("2.36-9+deb12u3",)


@pytest.mark.parametrize(("score", "level"), [(None, "unknown"), (0.1, "low"), (3.9, "low"),
                                              (4.0, "medium"), (6.9, "medium"), (7.0, "high"),
                                              (8.9, "high"), (9.0, "critical"), (10.0, "critical")])
def test_levels_are_cvss_v3_ratings(score: float | None, level: str) -> None:
    assert finding(score).level == level


def test_the_threshold_and_what_has_no_score() -> None:
    assert at_or_above("high", "high") and at_or_above("critical", "high")
    assert not at_or_above("medium", "high")
    # no score: held from medium down (it may be anything), never silently passed by a strict gate
    assert at_or_above("unknown", "low") and at_or_above("unknown", "medium")
    assert not at_or_above("unknown", "high")
    decision = decide([finding(7.5), finding(5.0, vid="PYSEC-2")], (), "high", TODAY)
    assert [j.verdict for j in decision.judged] == ["fail", "below"] and decision.failed
    assert not decide([finding(5.0)], (), "high", TODAY).failed


def test_a_waiver_by_alias_until_it_expires_never_of_what_a_version_fixes() -> None:
    unfixable = finding(9.8)
    assert decide([unfixable], (waiver(TODAY),), "low", TODAY).judged[0].verdict == "waived"
    expired = decide([unfixable], (waiver(TODAY - dt.timedelta(days=1)),), "low", TODAY)
    assert expired.failed and "expired" in expired.judged[0].why
    fixable = decide([finding(9.8, fixed=("2.0",))], (waiver(TODAY),), "low", TODAY)
    assert fixable.failed and "2.0 fixes it now" in fixable.judged[0].why
    # another package's waiver, or another ecosystem's, covers nothing: a warning, not a pass
    other = decide([unfixable], (waiver(TODAY, package="setuptools"),
                                 waiver(TODAY, ecosystem="Debian")), "low", TODAY)
    assert other.failed and len(other.unused) == 2
    # a Debian waiver covers the finding on any Debian release
    debian = finding(8.0, package="glibc", ecosystem="Debian:12")
    assert not decide([debian], (waiver(TODAY, package="glibc", ecosystem="Debian"),),
                      "low", TODAY).failed


def test_a_waiver_of_a_vendored_copy_holds_though_its_package_has_a_fix() -> None:
    """No upgrade of setuptools reaches the copy inside pip: the waiver holds, saying what
    fixes it and who must ship that; unwaived, it fails as any finding does."""
    from dataclasses import replace
    vendored = replace(finding(7.5, fixed=("78.1.1",), package="setuptools"), vendored=True)
    held = decide([vendored], (waiver(TODAY, package="setuptools"),), "low", TODAY)
    assert not held.failed and "vendored copy: 78.1.1 fixes it only when" in held.judged[0].why
    assert decide([vendored], (), "high", TODAY).failed


def test_the_report_says_each_finding_on_one_whole_line_and_the_verdict() -> None:
    from imgkit.scan.findings import Scan
    found = [finding(9.8, fixed=("23.3",)), finding(2.0, vid="PYSEC-2", aliases=())]
    decision = decide(found, (), "high", TODAY)
    said = lines(Scan("x:1", "sha256:" + "a" * 64, "osv-scanner 2.6.0", tuple(found)), decision, "high")
    assert said[0].startswith("FAIL ") and "PYSEC-1 (CVE-2000-1)" in said[0] and "-> 23.3" in said[0]
    assert said[1].startswith("ok ") and "(no fix yet)" in said[1]
    assert said[-1].startswith("FAILED: x:1") and "1 failing" in said[-1]


def test_a_failing_scan_says_what_to_do_for_each_kind_of_finding() -> None:
    """A distro fix: rebuild the image whose layer installed the package (an up-to-date
    build skips it otherwise); a Python fix: raise the pin; no fix: waive it."""
    import dataclasses

    from imgkit.scan.report import next_steps
    glibc = dataclasses.replace(finding(9.8, fixed=("2.36-9+deb12u4",), vid="DSA-1", package="glibc",
                                        ecosystem="Debian:12"), origin="imgkit/python:3.11-bookworm")
    found = [glibc, finding(9.8, fixed=("23.3",)), finding(9.1, vid="PYSEC-9", package="paddle"),
             finding(2.0, fixed=("9.9",), vid="PYSEC-2", package="urllib3")]     # below the gate
    said = next_steps(decide(found, (), "high", TODAY))
    assert said[0].startswith("next: the distro's fix comes with a rebuild") and \
        "`imgkit build --force --keep-parents --only 'imgkit/python:3.11-bookworm'`" in said[0]
    assert said[1] == ("next: raise the pin of pip to a fixed version (the family's packages, or "
                       "`venv:` for the venv's own), then build")
    assert said[2].startswith("next: PYSEC-9: no fix reaches this image yet; waive it")
    assert next_steps(decide(found[3:], (), "high", TODAY)) == []        # a pass: nothing to do


def test_every_problem_of_the_waiver_file_at_once_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "vulnerabilities.yaml"
    path.write_text("waivers:\n"
                    "  - id: CVE-2023-5752\n    package: pip\n    ecosystem: PyPI\n"
                    "    reason: short\n    who: me\n    expires: next year\n"
                    "  - id: CVE-2023-1\n    package: py\n    ecosystem: PyPI\n"
                    "    reason: the svn support is never used\n    expires: 2027-01-01\n"
                    "    owner: me\n")
    with pytest.raises(SpecErrors) as raised:
        load_waivers(path)
    problems = {(p.key, p.line) for p in raised.value.problems}
    assert ("waivers[0].reason", 5) in problems and ("waivers[0].expires", 7) in problems
    assert ("waivers[1].owner", 13) in problems and any(k == "waivers[1].who" for k, _ in problems)
    assert "YYYY-MM-DD" in str(raised.value.message)


def test_a_waiver_file_written_as_people_write_them_gets_each_fix(tmp_path: Path) -> None:
    """A date without its zeros, an empty reason, a bare id for a waiver, a tool's name for
    an ecosystem: each said in words with the fix, in one run and in line order."""
    path = tmp_path / "vulnerabilities.yaml"
    path.write_text("waivers:\n"
                    "  - id: CVE-2025-47273\n    package: setuptools\n    ecosystem: pip\n"
                    "    reason:\n    who: me\n    expires: 2027-5-31\n"
                    "  - CVE-2023-5752\n"
                    "  - id: DSA-5514-1\n    package: glibc\n    ecosystem: debain:12\n"
                    "    reason: the flaw needs a setuid binary we do not ship\n    who: me\n"
                    "    expires: 2027-01-01\n")
    with pytest.raises(SpecErrors) as raised:
        load_waivers(path)
    said = {p.key: (p.reason, p.hint) for p in raised.value.problems}
    assert said["waivers[0].ecosystem"] == ("'pip' is not an ecosystem as the scanners name it",
                                            "did you mean 'PyPI'?")
    assert said["waivers[0].reason"] == ("expected text, got nothing",
                                         "say why the finding is safe to ship, in a sentence")
    assert said["waivers[0].expires"] == ("expected a date, got the text '2027-5-31'",
                                          "YYYY-MM-DD: 2027-05-31")
    assert said["waivers[1]"][0] == "must be a mapping of keys to values, got the text 'CVE-2023-5752'"
    assert said["waivers[2].ecosystem"][1] == "did you mean 'Debian'?"
    assert [p.line for p in raised.value.problems] == [4, 5, 7, 8, 11]
    # a name near none of OSV's is taken as a newer ecosystem, not refused
    assert waiver(TODAY, ecosystem="Hackage").ecosystem == "Hackage"


def test_a_waiver_naming_a_release_holds_on_that_release_only() -> None:
    on_12 = finding(8.0, package="glibc", ecosystem="Debian:12")
    on_13 = finding(8.0, package="glibc", ecosystem="Debian:13")
    held = decide([on_12, on_13], (waiver(TODAY, package="glibc", ecosystem="Debian:12"),),
                  "low", TODAY)
    assert [j.verdict for j in held.judged] == ["waived", "fail"]
    # Red Hat as OSV spells it, with or without its space
    red_hat = finding(8.0, package="glibc", ecosystem="Red Hat:9")
    assert not decide([red_hat], (waiver(TODAY, package="glibc", ecosystem="red hat"),),
                      "low", TODAY).failed


def test_no_file_no_waivers_and_an_empty_one_is_none(tmp_path: Path) -> None:
    assert load_waivers(tmp_path / "vulnerabilities.yaml") == ()
    (tmp_path / "vulnerabilities.yaml").write_text("")
    assert load_waivers(tmp_path / "vulnerabilities.yaml") == ()
    (tmp_path / "vulnerabilities.yaml").write_text("waivers: [{id: x}]\n")
    with pytest.raises(SpecError):
        load_waivers(tmp_path / "vulnerabilities.yaml")


def test_publish_refuses_no_scan_a_failing_one_and_one_against_a_stale_database() -> None:
    from imgkit.scan.record import ScanRecord, refusal
    image_id = "sha256:" + "b" * 64

    def scanned(**fields: object) -> ScanRecord:
        base: dict[str, object] = {"image_id": image_id, "image": "ml/x:1", "failed": False,
                                   "failing": [], "fail_on": "high", "scanner": "osv-scanner 2.6.0",
                                   "database_age_days": 0, "recorded_at": 0.0}
        return ScanRecord.model_validate({**base, **fields})
    assert "never scanned" in str(refusal("ml/x:1", image_id, None))
    assert "imgkit scan ml/x:1" in str(refusal("ml/x:1", image_id, None))
    failing = [f"PYSEC-{n} pip 1.0" for n in range(7)]
    said = str(refusal("ml/x:1", image_id, scanned(failed=True, failing=failing)))
    assert "PYSEC-0 pip 1.0" in said and "and 2 more" in said
    assert "30 days old" in str(refusal("ml/x:1", image_id, scanned(database_age_days=30)))
    assert refusal("ml/x:1", image_id, scanned()) is None


# -- promote: the signed scan a candidate carries (scan/attested.py) ---------------------------
def signed_scan(image_id: str = "sha256:" + "a" * 64, failed: bool = False, days_ago: float = 1,
                stale: bool = False, digest: str = "sha256:" + "d" * 64) -> Statement:
    finished = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=days_ago)
    return Statement(subject_digests=(digest,), predicate={
        "invocation": {"parameters": None, "uri": "", "event_id": "", "builder.id": ""},
        "scanner": {"uri": "pkg:golang/github.com/google/osv-scanner/v2@v2.6.0", "version": "2.6.0",
                    "db": {"uri": "/db", "version": "1 days old"},
                    "result": {"image": "x", "image_id": image_id, "failed": failed,
                               "fail_on": "high", "database": {"stale": stale},
                               "findings": [{"id": "PYSEC-2023-228", "package": "pip",
                                             "installed": "23.0.1",
                                             "verdict": "fail" if failed else "pass"}]}},
        "metadata": {"scanStartedOn": finished.isoformat(), "scanFinishedOn": finished.isoformat()}})


@pytest.mark.parametrize("statements, said", [
    ([signed_scan()], None),
    ([signed_scan(failed=True)], "its signed scan failed (fail_on: high): PYSEC-2023-228 pip 23.0.1"),
    ([signed_scan(image_id="sha256:" + "b" * 64)], "a scan replayed from another image"),
    ([signed_scan(stale=True)], "stale advisory database"),
    ([signed_scan(days_ago=9)], "9 days old"),
    ([signed_scan(days_ago=9), signed_scan(days_ago=1)], None),      # the newest decides
    ([signed_scan(digest="sha256:" + "e" * 64)], "about another image"),
    ([Statement(subject_digests=("sha256:" + "d" * 64,), predicate={"x": 1})], "not one imgkit attached"),
])
def test_promote_holds_the_newest_signed_scan_of_this_digest(statements: list[Statement],
                                                              said: str | None) -> None:
    why = attested.refusal(statements, "reg/x@sha256:dd", "sha256:" + "d" * 64, "sha256:" + "a" * 64)
    assert (why is None) if said is None else (why is not None and said in why), why


def test_a_database_folder_named_one_level_off_says_which_holds_it(tmp_path: Path) -> None:
    """`--db advisories/osv-scalibr` or a folder beside it: the folder above holds the
    database; the hint said how to fetch one again."""
    from imgkit.errors import HostError
    from imgkit.scan.scanner import database_zips
    zipped = tmp_path / "advisories" / "osv-scalibr" / "PyPI" / "all.zip"
    zipped.parent.mkdir(parents=True)
    zipped.write_bytes(b"")
    assert database_zips(tmp_path / "advisories") == {"PyPI": zipped}
    for off in ("advisories/osv-scalibr", "advisories/osv"):
        with pytest.raises(HostError) as info:
            database_zips(tmp_path / off)
        assert info.value.hint == f"did you mean --db {tmp_path / 'advisories'}? it holds one"
    with pytest.raises(HostError) as info:
        database_zips(tmp_path / "elsewhere")
    assert info.value.hint.startswith(f"fetch it: imgkit scan --update-db --db {tmp_path}/elsewhere")
