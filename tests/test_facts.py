"""The probe's report as untrusted input (pure logic): parsed into typed facts or refused
with where and why; then checked against what the host saw of the image."""
from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from imgkit.engine import PathStat
from imgkit.probe import PROBE_VERSION
from imgkit.probe.channel import frame, new_token
from imgkit.verify.corroborate import MAX_PATHS, file_checks, paths_to_check, user_check
from imgkit.verify.facts import InvalidReport, parse_output, parse_report
from imgkit.verify.verdict import EVIDENCE, FAIL, PASS, Check

from .helpers.reports import GOOD


def good() -> dict[str, Any]:
    return copy.deepcopy(GOOD)


def test_a_real_shaped_report_parses_into_frozen_facts() -> None:
    report = parse_report(good())
    assert report.libraries.version("cudnn") == "9.1.0"
    assert report.frameworks["torch"].step_on_gpu
    with pytest.raises(Exception):
        report.system.uid = 0


@pytest.mark.parametrize("mutate,where", [
    (lambda r: r["system"].pop("uid"), "system.uid"),
    (lambda r: r["system"].update(uid="root"), "system.uid"),
    (lambda r: r["libraries"]["families"]["cudart"].update(copies="x"), "libraries.families.cudart.copies"),
    (lambda r: r["gpu"]["work"]["gemm"].update(fp32=[1, 2]), "gpu.work.gemm.fp32"),
    (lambda r: r["system"].update(python="3" * 100), "system.python"),
    (lambda r: r["libraries"].update(search_dirs=["/x"] * 5000), "libraries.search_dirs"),
])
def test_a_malformed_report_is_refused_naming_where(mutate, where: str) -> None:
    report = good()
    mutate(report)
    with pytest.raises(InvalidReport) as info:
        parse_report(report)
    assert where in str(info.value)


@pytest.mark.parametrize("text,reason", [
    ("", "not JSON"), ("[1, 2]", "a JSON list"), ('{"a": 1}', "no probe_version"),
    ('{"probe_version": 99}', "probe_version is 99"), ("Segmentation fault", "not JSON"),
])
def test_output_that_is_no_report(text: str, reason: str) -> None:
    with pytest.raises(InvalidReport) as info:
        parse_output(frame(text, "0123456789abcdef"), "0123456789abcdef")
    assert reason in str(info.value)


@pytest.mark.parametrize("output", [
    "", "Segmentation fault\n", json.dumps(good()),            # a bare report: no frame
    frame(json.dumps(good()), "aaaaaaaaaaaaaaaa"),               # framed with another token
    f"IMGKIT-REPORT-BEGIN 0123456789abcdef\n{json.dumps(good())}\n",   # never closed
])
def test_output_without_the_framed_report_is_refused(output: str) -> None:
    with pytest.raises(InvalidReport) as info:
        parse_output(output, "0123456789abcdef")
    assert "no probe report in its output" in str(info.value)


def test_what_the_image_prints_around_the_report_is_ignored() -> None:
    token = new_token()
    noise = "banner from a .pth hook {\n" + frame('{"probe_version": 1}', "bbbbbbbbbbbbbbbb")
    output = noise + frame(json.dumps(good()), token) + "goodbye\n{\"probe_version\": 1}\n"
    assert parse_output(output, token).probe_version == PROBE_VERSION
    assert parse_output(output).probe_version == PROBE_VERSION   # a Job's log: any token, the last


def test_evidence_is_bounded_whatever_the_report_says() -> None:
    check = Check("x", FAIL, measured="a" * 50_000_000, diagnosis="b" * 10_000)
    assert len(check.measured) == EVIDENCE and check.measured.endswith("…")
    assert len(check.diagnosis) == EVIDENCE


def stats_of(report: dict[str, Any], **changes: PathStat | None) -> dict[str, PathStat | None]:
    facts = parse_report(report)
    sizes = {c.realpath: c.size for f in facts.libraries.families.values() for c in f.copies}
    found: dict[str, PathStat | None] = {p: PathStat(sizes.get(p, 10))
                                         for p in paths_to_check(facts)}
    found.update(changes)
    return found


def test_files_that_agree_pass() -> None:
    facts = parse_report(good())
    assert file_checks(facts, lambda paths: stats_of(good())).verdict == PASS


def test_a_file_the_image_lacks_or_sized_otherwise_fails() -> None:
    facts = parse_report(good())
    missing = file_checks(facts, lambda paths: stats_of(good(), **{"/l/libcudart.so.12": None}))
    assert missing.verdict == FAIL and "/l/libcudart.so.12 is not in the image" in missing.diagnosis
    resized = file_checks(facts, lambda paths: stats_of(good(), **{"/l/libcudnn.so.9": PathStat(7)}))
    assert "7 bytes in the image, the report says 1" in resized.diagnosis


def test_a_report_naming_too_many_files_is_not_trusted() -> None:
    report = good()
    report["libraries"]["driver_libs_in_image"] = [f"/x/{i}" for i in range(MAX_PATHS + 1)]
    asked: list[list[str]] = []
    check = file_checks(parse_report(report), lambda paths: asked.append(paths) or {})  # type: ignore[func-returns-value]
    assert check.verdict == FAIL and asked == []


@pytest.mark.parametrize("config_user,uid,user,ok", [
    ("", 0, "root", True), ("", 1000, "imgkit", False),
    ("imgkit", 1000, "imgkit", True), ("imgkit", 0, "root", False),
    ("1000:1000", 1000, "imgkit", True), ("1000", 1001, "other", False),
])
def test_the_report_ran_as_the_images_user(config_user: str, uid: int, user: str, ok: bool) -> None:
    report = good()
    report["system"].update(uid=uid, user=user)
    check = user_check(parse_report(report), config_user)
    assert (check.verdict == PASS) == ok, check


def test_nvidias_sbsa_wheel_tag_is_taken_for_the_aarch64_build_it_is() -> None:
    """nvidia-cusparselt-cu13 0.8.1 (torch 2.15's) writes `Tag: py3-none-manylinux2014_sbsa`
    in its WHEEL: the requirement check takes it as aarch64, as the installer did (seen: the
    image's own `pip check` passes it)."""
    from pip._vendor.packaging import tags

    from imgkit.probe.requirements import _aarch64_too
    found = _aarch64_too(tags, tags.parse_tag("py3-none-manylinux2014_sbsa"))
    assert tags.Tag("py3", "none", "manylinux2014_aarch64") in found
    plain = tags.parse_tag("py3-none-manylinux2014_x86_64")
    assert _aarch64_too(tags, plain) == set(plain)
