"""Verdicts as tickets for one image id (pure logic and files): what publishing will accept;
and a verdict or a scan that cannot be kept, said."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from imgkit.verify import tickets
from imgkit.verify.verdict import FAIL, PASS, Check, Verdict

A, B = "sha256:" + "a" * 64, "sha256:" + "b" * 64


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IMGKIT_CACHE_DIR", str(tmp_path))


def verdict(image_id: str = A, *, passed: bool = True, gpu: bool = True,
            ref: str = "paddle:2.6.2") -> Verdict:
    checks = (Check("cudart.version", PASS if passed else FAIL, "11.8", "11.8" if passed else "12.1"),)
    return Verdict(image=ref, image_id=image_id, checks=checks, gpu_checked=gpu)


def test_a_verdict_is_recorded_under_the_id_it_judged() -> None:
    recorded = tickets.record(verdict(A, gpu=False))
    assert tickets.lookup(A) == recorded and not recorded.gpu_checked  # type: ignore[union-attr]
    assert tickets.lookup(B) is None
    assert tickets.path_of(A).name == "a" * 64 + ".json"


def test_a_damaged_ticket_is_no_ticket() -> None:
    tickets.record(verdict(A))
    tickets.path_of(A).write_text("{not json")
    assert tickets.lookup(A) is None
    with pytest.raises(ValueError):
        tickets.path_of("latest")


def test_the_newest_ticket_of_a_reference() -> None:
    tickets.record(verdict(A))
    time.sleep(0.01)
    tickets.record(verdict(B))
    tickets.record(verdict("sha256:" + "c" * 64, ref="other:1"))
    latest = tickets.latest_for("paddle:2.6.2")
    assert latest is not None and latest.image_id == B


@pytest.mark.parametrize("ticket_of,allow,reason", [
    (None, False, "was never verified"),
    (verdict(A, passed=False), False, "its verification failed: cudart.version"),
    (verdict(A, gpu=False), False, "without a GPU"),
    (verdict(A, gpu=False), True, None),
    (verdict(A), False, None),
])
def test_what_may_be_published(ticket_of: Verdict | None, allow: bool, reason: str | None) -> None:
    ticket = tickets.record(ticket_of) if ticket_of else None
    why = tickets.refusal("paddle:2.6.2", A, ticket, allow_gpu_unverified=allow)
    assert (why is None) if reason is None else (why is not None and reason in why)


def test_a_tag_that_moved_since_its_verdict_says_so() -> None:
    earlier = tickets.record(verdict(A))
    why = tickets.refusal("paddle:2.6.2", B, tickets.lookup(B), allow_gpu_unverified=True, earlier=earlier)
    assert why is not None and "verified as sha256:aaaaaaaaaaaa" in why and "now sha256:bbbbbbbbbbbb" in why


def test_a_run_judged_by_expect_overrides_never_replaces_a_plain_ticket() -> None:
    plain = tickets.record(verdict(A))
    assert plain is not None
    assert tickets.record(verdict(A, passed=False), ("cuda=12.4",)) is None
    assert tickets.lookup(A) == plain                       # the image's own claims stand
    tickets.path_of(A).unlink()
    overridden = tickets.record(verdict(A, passed=False), ("cuda=12.4",))
    assert overridden is not None and overridden.overrides == ("cuda=12.4",)
    assert tickets.record(verdict(A)) is not None and not tickets.lookup(A).overrides  # type: ignore[union-attr]


def test_a_cache_this_user_cannot_write_is_said_and_the_verdict_stands(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """HOME a folder that does not exist (system users), a read-only home (locked-down pods):
    the ticket is not kept, which is said with where to point IMGKIT_CACHE_DIR; no traceback."""
    from imgkit.errors import HostError
    from imgkit.options import DEFAULTS
    from imgkit.verify.command import keep_ticket_or_say
    monkeypatch.setenv("IMGKIT_CACHE_DIR", "/proc/imgkit-cache")
    with pytest.raises(HostError, match="cannot write imgkit's cache at /proc/imgkit-cache") as said:
        tickets.record(verdict(A))
    assert "IMGKIT_CACHE_DIR" in said.value.hint
    keep_ticket_or_say(verdict(A), DEFAULTS)
    warned = capsys.readouterr().err
    assert "not recorded as the ticket of sha256:aaaaaaaaaaaa" in warned and "IMGKIT_CACHE_DIR" in warned


def test_a_scan_that_cannot_be_kept_is_said_and_stands(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from imgkit.scan import record
    monkeypatch.setenv("IMGKIT_CACHE_DIR", "/proc/imgkit-cache")
    record.keep_or_say(record.ScanRecord(
        image_id=A, image="ml/x:1", failed=False, failing=[], fail_on="high",
        scanner="osv-scanner 2.6.0", database_age_days=0, recorded_at=0.0, database="/db"), "{}")
    warned = capsys.readouterr().err
    assert "not kept as the scan of sha256:aaaaaaaaaaaa: cannot write imgkit's cache" in warned
