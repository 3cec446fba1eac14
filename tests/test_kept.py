"""`imgkit attest --max-age`'s decision, as pure logic: which signed verdict is kept instead
of judging the image again, and the report made of it. (tests/test_docker_signing.py runs
it with cosign and a registry.)"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from imgkit.options import Thresholds, VerifyOptions
from imgkit.shipped import version
from imgkit.verify.attestation import VerdictPredicate
from imgkit.verify.kept import CHECK, Wanted, judged_by, reason_to_judge, verdict_of

IMAGE_ID = "sha256:" + "a" * 64
NOW = 1_800_000_000.0


def record(**changes: Any) -> VerdictPredicate:
    body: dict[str, Any] = {
        "predicate_version": 1, "imgkit_version": version(), "format": 1, "image_id": IMAGE_ID,
        "image": "reg.example/ml/x@sha256:" + "b" * 64, "passed": True, "gpu_checked": True,
        "failed": [], "host_failure": False, "recorded_at": NOW - 3600, "overrides": [],
        "checks": [{"name": "gpu.visible", "verdict": "pass", "required": True,
                    "expected": "a GPU", "measured": "1 x H200", "diagnosis": "", "scope": "image"},
                   {"name": "cudart.version", "verdict": "pass", "required": True,
                    "expected": "12.4", "measured": "12.4"}],
        "judged_by": judged_by(VerifyOptions())}
    body.update(changes)
    return VerdictPredicate.model_validate(body)


WANTED = Wanted(judged_by(VerifyOptions()), gpu=True, max_age=86400)


def test_what_decides_a_verdict_is_one_digest_that_moves_with_each_input(tmp_path: Path):
    checks = tmp_path / "checks.yaml"
    checks.write_text("schemaVersion: 2.0.0\n")
    plain = judged_by(VerifyOptions())
    assert plain == judged_by(VerifyOptions(gpus="none", timeout=30))   # how it ran: not what it judged
    assert judged_by(VerifyOptions(expect=("cuda=12.4", "cudnn=9"))) == \
        judged_by(VerifyOptions(expect=("cudnn=9", "cuda=12.4")))
    moved = {judged_by(VerifyOptions(expect=("cuda=12.4",))),
             judged_by(VerifyOptions(thresholds=Thresholds(gemm=0.6))),
             judged_by(VerifyOptions(checks=checks))}
    assert plain not in moved and len(moved) == 3
    before = judged_by(VerifyOptions(checks=checks))
    checks.write_text("schemaVersion: 2.0.0\ncommandTests: []\n")
    assert judged_by(VerifyOptions(checks=checks)) != before        # the file's bytes, not its name


def test_a_fresh_passing_verdict_judged_the_same_way_is_kept():
    assert reason_to_judge(record(), IMAGE_ID, WANTED, now=NOW) is None
    # made without a GPU: kept by a run that asks for none
    assert reason_to_judge(record(gpu_checked=False), IMAGE_ID,
                           Wanted(WANTED.judged_by, gpu=False, max_age=86400), now=NOW) is None


@pytest.mark.parametrize(("changes", "wanted", "words"), [
    ({"recorded_at": NOW - 2 * 86400}, WANTED, "2.0d old (--max-age 1.0d)"),
    ({"passed": False, "failed": ["gpu.visible"]}, WANTED, "failed"),
    ({"gpu_checked": False}, WANTED, "without a GPU"),
    ({"image_id": "sha256:" + "c" * 64}, WANTED, "judged image sha256:cccccccccccc"),
    ({"judged_by": None}, WANTED, "another imgkit"),                 # an older imgkit's verdict
    ({}, Wanted(judged_by(VerifyOptions(expect=("cuda=12.4",))), True, 86400), "other --expect"),
])
def test_a_verdict_that_is_old_failed_weaker_or_judged_otherwise_is_judged_again(
        changes: dict[str, Any], wanted: Wanted, words: str):
    why = reason_to_judge(record(**changes), IMAGE_ID, wanted, now=NOW)
    assert why is not None and words in why, why


def test_the_kept_verdict_is_reported_with_every_check_and_says_it_was_kept():
    verdict = verdict_of(record(), "reg.example/ml/x@sha256:" + "b" * 64, "ml/x:1", 86400, now=NOW)
    assert [c.name for c in verdict.checks] == [CHECK, "gpu.visible", "cudart.version"]
    head = verdict.checks[0]
    assert head.verdict == "info" and not head.required
    assert "1.0h old" in head.measured and version() in head.measured
    assert "not judged again" in head.diagnosis
    assert verdict.checks[1].measured == "1 x H200" and verdict.checks[2].expected == "12.4"
    assert verdict.passed and verdict.gpu_verified and verdict.image_id == IMAGE_ID
    assert verdict.title == "ml/x:1"


def test_a_verdict_is_recorded_with_what_judged_it(tmp_path: Path):
    from imgkit.verify.tickets import make_document
    from imgkit.verify.verdict import Check, Verdict
    verdict = Verdict("x", IMAGE_ID, (Check("gpu.visible", "pass"),), gpu_checked=True)
    document = make_document(verdict, (), judged_by(VerifyOptions()))
    assert document.judged_by == WANTED.judged_by
    assert time.time() - document.recorded_at < 60
