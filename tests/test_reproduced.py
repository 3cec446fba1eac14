"""What `imgkit reproduce` proved travels in the verdict: the proof is kept for the image id
it holds for, verify records it as the `reproduced` check (which never fails an image), and
promote's --require-reproduced lets through only a verdict that records it. The real
engine's reproduce-then-verify is in tests/test_docker_reproducible.py."""
from __future__ import annotations

import time

import pytest

from imgkit.registry.cosign import Statement
from imgkit.reproduction import Reproduction, keep, lookup, path_of
from imgkit.verify.run import reproduced_check
from imgkit.verify.signed import refusal, unreproduced
from imgkit.verify.verdict import PASS, Check, Verdict

IMAGE_ID = "sha256:" + "a" * 64
OTHER_ID = "sha256:" + "b" * 64
DIGEST = "sha256:" + "c" * 64


def proof(floating: tuple[str, ...] = ()) -> Reproduction:
    return Reproduction(IMAGE_ID, "imgkit/cuda:11.8-runtime", "BuildKit on Docker engine 28.5.2",
                        time.mktime((2026, 11, 27, 12, 0, 0, 0, 0, 0)), floating)


def test_the_proof_is_kept_for_the_image_id_it_holds_for() -> None:
    keep(proof())
    assert lookup(IMAGE_ID) == proof()
    assert lookup(OTHER_ID) is None
    path_of(OTHER_ID).parent.mkdir(parents=True, exist_ok=True)
    path_of(OTHER_ID).write_text("{not json")
    assert lookup(OTHER_ID) is None                      # unreadable: as if never reproduced


def test_verify_records_it_as_a_check_that_never_fails_an_image() -> None:
    keep(proof(("python3 from the distro's mirror, unlocked",)))
    [check] = reproduced_check(IMAGE_ID)
    assert (check.name, check.verdict, check.required) == ("reproduced", PASS, False)
    assert "2026-11-27 by BuildKit on Docker engine 28.5.2" in check.measured
    assert "unlocked: 1 input(s) float" in check.measured
    assert reproduced_check(OTHER_ID) == ()


def record(*checks: Check) -> dict[str, object]:
    from imgkit.verify.tickets import make_document
    verdict = Verdict(image="imgkit/cuda:11.8-runtime", image_id=IMAGE_ID, gpu_checked=True,
                      checks=(Check("cudart.version", PASS, "11.8", "11.8"), *checks))
    return {**make_document(verdict).model_dump(), "predicate_version": 1,
            "imgkit_version": "0.0.0"}


@pytest.mark.parametrize("require", [False, True])
def test_promote_requires_the_check_only_when_asked(require: bool) -> None:
    plain = [Statement((DIGEST,), record())]
    why = refusal(plain, "r/ml/x@" + DIGEST, DIGEST, IMAGE_ID, allow_gpu_unverified=False,
                  max_age=None, require_reproduced=require)
    assert (why is not None) == require
    if why is not None:
        assert "does not record that the image was reproduced" in why
        assert "imgkit reproduce" in why
    keep(proof())
    reproduced = [Statement((DIGEST,), record(*reproduced_check(IMAGE_ID)))]
    assert refusal(reproduced, "r/ml/x@" + DIGEST, DIGEST, IMAGE_ID, allow_gpu_unverified=False,
                   max_age=None, require_reproduced=require) is None


def test_no_verdict_at_all_is_not_reproduced() -> None:
    assert unreproduced("r/ml/x@" + DIGEST, None) is not None


def test_the_sites_grid_says_an_image_was_reproduced() -> None:
    from imgkit.site.grid import cell
    from imgkit.site.inputs import VerdictFile
    base = {"image": "imgkit/cuda:11.8-runtime", "image_id": IMAGE_ID, "passed": True}
    again = {"name": "reproduced", "verdict": "pass", "required": False}
    assert cell("linux/amd64", VerdictFile.model_validate(
        {**base, "checks": [again]})).said == "passed, GPU not verified, reproduced"
    assert cell("linux/amd64", VerdictFile.model_validate(
        {**base, "gpu_checked": True, "gpu_verified": True, "checks": [again]})).said == \
        "passed, reproduced"
    assert cell("linux/amd64", VerdictFile.model_validate(base)).said == "passed, GPU not verified"
