"""The build summary: plain aligned text, every tag whole (CI logs are read and grepped)."""
from __future__ import annotations

from imgkit.outcome import BUILT, FAILED, UP_TO_DATE, Result
from imgkit.report import build_summary


def test_summary_keeps_tags_whole_and_columns_aligned() -> None:
    long_tag = "imgkit/cuda:11.8-runtime-cudnn9.10-nccl2.21-py3.11-bookworm"
    text = build_summary([Result(long_tag, UP_TO_DATE, 0.0, 3_040_000_000),
                          Result("paddle:2.6.2", BUILT, 58.46, 6_740_000_000),
                          Result("x:1", FAILED, 1.0, reason="step 3/9 exited 7")], 61.2)
    lines = text.splitlines()
    assert lines[0] == "imgkit build: 3 images in 61.2 s (1 up-to-date, 1 built, 1 failed)"
    assert lines[1].split() == ["tag", "status", "size", "seconds", "note"]
    rows = lines[3:]
    assert rows[0].startswith(long_tag + "  ")
    assert "6.7 GB" in rows[1] and "58.5" in rows[1]
    assert rows[2].endswith("step 3/9 exited 7")
    status_column = lines[1].index("status")
    assert all(row[status_column:].split()[0] in (UP_TO_DATE, BUILT, FAILED) for row in rows)


def test_empty_summary_says_so() -> None:
    assert "nothing to do" in build_summary([], 0.0).splitlines()[0]
