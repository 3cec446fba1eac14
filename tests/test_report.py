"""What users and CI read: the build summary and the verdict, as plain lines, tables and files."""
from __future__ import annotations

from imgkit.builder.outcome import BUILT, FAILED, UP_TO_DATE, Result
from imgkit.builder.report import build_summary


def test_summary_keeps_tags_whole_and_columns_aligned() -> None:
    long_tag = "imgkit/cuda:11.8-runtime-cudnn9.10-nccl2.21-py3.11-bookworm"
    text = build_summary([Result(long_tag, UP_TO_DATE, 0.0, 3_040_000_000),
                          Result("paddle:2.6.2", BUILT, 58.46, 6_740_000_000, added=3_210_000_000),
                          Result("x:1", FAILED, 1.0, reason="step 3/9 exited 7")], 61.2)
    lines = text.splitlines()
    assert lines[0] == "imgkit build: 3 images in 61.2 s (1 up-to-date, 1 built, 1 failed)"
    assert lines[1].split() == ["tag", "status", "size", "adds", "seconds", "note"]
    rows = lines[3:]
    assert rows[0].startswith(long_tag + "  ")
    assert "6.7 GB" in rows[1] and "3.2 GB" in rows[1] and "58.5" in rows[1]
    assert rows[2].endswith("step 3/9 exited 7")
    status_column = lines[1].index("status")
    assert all(row[status_column:].split()[0] in (UP_TO_DATE, BUILT, FAILED) for row in rows)


def test_empty_summary_says_so() -> None:
    assert build_summary([], 0.2) == "imgkit build: 0 images in 0.2 s (nothing to do)"   # no table


# -- verdicts -------------------------------------------------------------------------------
def verdict_with(*checks):
    from imgkit.verify.verdict import Verdict
    return Verdict(image="paddle:2.6.2-gpu-cuda11.8-cudnn8", image_id="sha256:" + "ab" * 32,
                   checks=tuple(checks), gpu_checked=False)


LONG = "/opt/venv/lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libcudart.so.11.0 (11.8)" * 2


def sample():
    from imgkit.verify.verdict import FAIL, PASS, Check
    return verdict_with(Check("dlopen libcudart.so", PASS, "resolves", LONG),
                        Check("cudart.version", FAIL, "12.1", "11.8", "cudart is 11.8 | not\n12.1"))


def test_outside_a_terminal_each_check_is_one_whole_line(capsys) -> None:
    from imgkit.verify.report import print_verdict
    print_verdict(sample(), terminal=False)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("pass  dlopen libcudart.so  expected: resolves  measured: " + LONG)
    assert lines[2] == ("fail  cudart.version  expected: 12.1  measured: 11.8  "
                        "diagnosis: cudart is 11.8 | not 12.1")
    assert lines[-1].startswith("FAILED: 1 required check(s); fix the image first: cudart.version")


def test_markdown_is_a_table_with_escaped_cells() -> None:
    from imgkit.verify.report import verdict_markdown
    text = verdict_markdown(sample())
    assert "| check | expected | measured | verdict | diagnosis |" in text
    assert "| cudart.version | 12.1 | 11.8 | fail | cudart is 11.8 \\| not 12.1 |" in text


def test_junit_is_read_by_a_junit_consumer(tmp_path) -> None:
    from junitparser import Failure, JUnitXml

    from imgkit.verify.report import verdict_junit
    path = tmp_path / "v.xml"
    path.write_text(verdict_junit(sample()))
    (suite,) = list(JUnitXml.fromfile(str(path)))
    assert (suite.tests, suite.failures) == (2, 1)
    failed = [case for case in suite if any(isinstance(r, Failure) for r in case.result)]
    assert [case.name for case in failed] == ["cudart.version"]


def test_the_matrix_listing_keeps_long_tags_whole(tmp_path) -> None:
    import json
    from pathlib import Path

    from imgkit.matrix.command import list_plan
    from imgkit.matrix.load import load_plan
    from imgkit.matrix.report import plan_listing
    from imgkit.selection import Selection
    images = Path(__file__).resolve().parent.parent / "images"
    out = tmp_path / "plan.json"
    list_plan(Selection(images, cuda="12.4"), json_file=out)
    doc = json.loads(out.read_text())
    tags = [i["tag"] for i in doc["images"]]
    assert "imgkit/cuda:12.4-runtime-cudnn9.10-nccl2.23-py3.11-bookworm" in tags
    assert doc["images"][-1] == {**doc["images"][-1], "tag": "pytorch:2.5.1-cuda12.4-cudnn9-runtime",
                                 "final": True}
    text = plan_listing(load_plan(Selection(images, cuda="12.4")))
    assert all(f"\n{tag} " in text for tag in tags)  # every tag whole, at a line's start


def test_push_bars_add_up_the_layers_of_each_image() -> None:
    from imgkit.publish.report import PushBars
    bars = PushBars()
    bars.update("a:1", "l1", 10, 100)
    bars.update("a:1", "l2", 5, 50)
    bars.update("a:1", "l1", 100, 100)
    bars.update("b:1", "l1", 1, 2)
    assert bars.sent("a:1") == (105, 150) and bars.sent("b:1") == (1, 2)
    assert bars.sent("never") == (0, 0)


def test_a_report_judged_elsewhere_is_headed_by_judge_and_says_why_the_gpu_was_not_checked() -> None:
    """`imgkit judge` of a Job's report made with --no-gpu: its verdict names judge, and the
    reason the GPU went unchecked is the report's (no --gpus flag was given to judge)."""
    import copy
    import json

    from imgkit.engine import ImageInfo
    from imgkit.options import VerifyOptions
    from imgkit.probe import channel
    from imgkit.verify.report import verdict_json, verdict_lines, verdict_markdown, verdict_summary
    from imgkit.verify.run import judge_report

    from .helpers.reports import GOOD, TAG
    report = copy.deepcopy(GOOD)
    report["args"] = {"no_gpu": True}
    log = "pod started\n" + channel.frame(json.dumps(report), channel.new_token())
    info = ImageInfo(id="sha256:" + "0" * 64, tags=(TAG,), labels={}, layers=(), size=0,
                     user="imgkit")
    verdict = judge_report(None, TAG, log, VerifyOptions(), info=info)
    assert verdict.command == "judge" and not verdict.gpu_checked
    assert verdict_lines(verdict)[0].startswith(f"imgkit judge {TAG} ")
    assert verdict_summary(verdict).endswith("(its probe ran with --no-gpu)")
    assert "--gpus none" not in "\n".join(verdict_lines(verdict))
    assert verdict_markdown(verdict).startswith(f"### imgkit judge `{TAG}`")
    assert json.loads(verdict_json(verdict))["command"] == "judge"
