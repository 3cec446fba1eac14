"""The signed-verdict gate as pure logic (the signatures are cosign's: test_docker_signing.py)
and the predicate's schema, which docs/signing.md publishes."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from imgkit.registry.cosign import statement_of
from imgkit.verify import attestation
from imgkit.verify.signed import refusal

ROOT = Path(__file__).resolve().parent.parent
IMAGE = "sha256:" + "a" * 64
DIGEST = "sha256:" + "d" * 64


def statement(digest: str = DIGEST, **changes: Any) -> dict[str, Any]:
    document = {"format": 1, "image_id": IMAGE, "image": "r/x:1", "passed": True,
                "gpu_checked": True, "failed": [], "host_failure": False,
                "recorded_at": 1000.0, "overrides": [], "checks": [], "libraries": None}
    predicate = json.loads(attestation.predicate(
        attestation.VerdictRecord.model_validate({**document, **changes})))
    return {"_type": "https://in-toto.io/Statement/v0.1", "predicateType": "https://imgkit.dev/attestations/verdict/v1",
            "subject": [{"name": "r/x", "digest": {"sha256": digest.split(":")[1]}}],
            "predicate": predicate}


def judged(statements: list[dict[str, Any]], **options: Any) -> str | None:
    settings = {"allow_gpu_unverified": False, "max_age": None, "now": 2000.0, **options}
    return refusal([statement_of(s) for s in statements], "r/x@" + DIGEST, DIGEST, IMAGE, **settings)


def test_a_passing_verdict_about_this_digest_and_image_lets_it_through() -> None:
    assert judged([statement()]) is None


@pytest.mark.parametrize("statements,words", [
    ([statement(digest="sha256:" + "e" * 64)], "about another image"),
    ([statement(image_id="sha256:" + "b" * 64)], "replayed from another image"),
    ([statement(passed=False, failed=["gpu.visible"])], "its verification failed: gpu.visible"),
    ([statement(host_failure=True, failed=["host.driver"])], "could not run on that host"),
    ([statement(gpu_checked=False)], "without a GPU"),
    ([{**statement(), "predicate": {"passed": True}}], "not an imgkit verdict v1"),
])
def test_an_unfit_signed_verdict_is_refused_with_its_reason(statements: list[dict[str, Any]],
                                                            words: str) -> None:
    why = judged(statements)
    assert why is not None and words in why, why


def test_the_newest_signed_verdict_decides() -> None:
    older_pass, newer_fail = statement(recorded_at=1000.0), statement(recorded_at=1500.0, passed=False)
    assert "failed" in (judged([older_pass, newer_fail]) or "")
    assert judged([newer_fail, statement(recorded_at=1800.0)]) is None


def test_max_age_and_the_gpu_waiver() -> None:
    assert "too old" in (judged([statement()], max_age=600.0) or "")
    assert judged([statement()], max_age=3600.0) is None
    assert judged([statement(gpu_checked=False)], allow_gpu_unverified=True) is None


def test_the_predicate_made_for_a_verdict_says_which_imgkit_and_schema_version() -> None:
    made = json.loads(attestation.predicate(attestation.VerdictRecord.model_validate(
        {**statement()["predicate"], "recorded_at": time.time()})))
    assert made["predicate_version"] == 1 and made["imgkit_version"]


def test_docs_publish_the_predicate_schema_the_code_checks() -> None:
    published = (ROOT / "docs" / "attestations" / "verdict-v1.schema.json").read_text()
    assert json.loads(published) == attestation.VerdictPredicate.model_json_schema(), (
        "docs/attestations/verdict-v1.schema.json is stale: run make docs")
