"""A verdict as Prometheus metrics (verify --metrics): the series and their values from
probe reports, every file passing promtool's `check metrics`, a file replaced whole, and a
push to a real Pushgateway that a real Prometheus scrapes and answers a query about.

The GPU numbers here are the synthetic report of test_evaluate (an H100-like device), not
a probe's real output: no GPU was lent when this was written (docs/gpu.md has the real runs)."""
from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import pytest

from imgkit.errors import HostError
from imgkit.verify.metrics import Identity, metrics_text, push_metrics, write_metrics
from imgkit.verify.verdict import FAIL, Check, Verdict, failure

from .helpers.metrics import no_device, samples, value
from .helpers.monitoring import need_tools, prometheus, promtool, pushgateway, query, query_until
from .helpers.registry import free_port
from .helpers.reports import GOOD, run

DIGEST = "sha256:" + "d" * 64
SUBJECT = Identity(DIGEST, "linux/amd64", "gpu-node-7")






def slow_gemm() -> dict[str, Any]:
    report = copy.deepcopy(GOOD)
    report["gpu"]["work"]["gemm"]["bf16"]["tflops"] = 100.0
    return report




def verdicts() -> dict[str, Verdict]:
    crashed = failure("broken:1", "sha256:" + "1" * 64,
                      Check("probe", FAIL, "exits 0", "exit 139", "the probe crashed"))
    return {"passed": run(GOOD), "slow": run(slow_gemm()), "host": run(no_device()),
            "no-gpu": run(GOOD, gpu=False), "crashed": crashed}


def test_a_passing_verdict_on_a_gpu_as_series() -> None:
    text = metrics_text(run(GOOD), SUBJECT, now=1.7e9)
    assert value(text, "imgkit_verify_passed", fault="none", digest=DIGEST, platform="linux/amd64",
                 model_name="NVIDIA H100 80GB HBM3", Hostname="gpu-node-7",
                 DCGM_FI_DRIVER_VERSION="580.1", gpu="0",
                 UUID="GPU-5f0c2a8e-1b7d-4c3e-9a21-6d8e4f0b7c19") == 1      # DCGM's join key
    assert value(text, "imgkit_verify_gpu_verified") == 1
    assert value(text, "imgkit_verify_timestamp_seconds") == 1.7e9
    assert value(text, "imgkit_verify_gemm_flops_per_second", precision="tf32",
                 UUID="GPU-5f0c2a8e-1b7d-4c3e-9a21-6d8e4f0b7c19") == 350e12
    assert value(text, "imgkit_verify_gemm_peak_ratio", precision="tf32") == pytest.approx(350 / 494.7)
    assert value(text, "imgkit_verify_conv_flops_per_second", precision="fp16") == 400e12
    assert value(text, "imgkit_verify_check_passed", check="gemm.tf32", required="true") == 1
    # torch's FP32 matmul measured at full FP32 (error 1e-7): TF32 not in effect
    assert value(text, "imgkit_verify_tf32_in_effect", framework="torch", op="matmul") == 0
    assert value(text, "imgkit_verify_image_info", cuda="12.4", cudnn="9.1.0", nccl="2.21.5",
                 framework="torch 2.5.1+cu124", digest=DIGEST) == 1
    # one GPU moves nothing over NCCL: no bandwidth series rather than a made-up one
    assert not any(n.startswith("imgkit_verify_nccl") for n, _ in samples(text))


def test_a_failed_verdict_names_who_must_act() -> None:
    slow = metrics_text(run(slow_gemm()), SUBJECT)
    assert value(slow, "imgkit_verify_passed", fault="image") == 0
    assert value(slow, "imgkit_verify_check_passed", check="gemm.bf16") == 0
    assert value(slow, "imgkit_verify_gemm_peak_ratio", precision="bf16") == pytest.approx(100 / 989.4)
    host = metrics_text(run(no_device()), SUBJECT)
    assert value(host, "imgkit_verify_passed", fault="host") == 0
    assert value(host, "imgkit_verify_check_passed", check="gpu.visible") == 0
    assert not any(n.startswith("imgkit_verify_gemm") for n, _ in samples(host))


def test_without_a_gpu_the_gpu_is_not_verified_and_no_throughput_is_made_up() -> None:
    text = metrics_text(run(GOOD, gpu=False), SUBJECT)
    assert value(text, "imgkit_verify_passed", fault="none") == 1
    assert value(text, "imgkit_verify_gpu_verified") == 0
    assert not any("flops" in n or "tf32" in n for n, _ in samples(text))
    # a skipped check is left out, not counted as passed
    assert not any(dict(ls).get("check") == "gpu" for n, ls in samples(text))


def test_a_verdict_without_a_report_still_says_it_failed() -> None:
    text = metrics_text(verdicts()["crashed"], Identity("", "", "node"))
    assert value(text, "imgkit_verify_passed", fault="image", digest="") == 0
    assert value(text, "imgkit_verify_check_passed", check="probe") == 0
    assert not any(n == "imgkit_verify_image_info" for n, _ in samples(text))


def test_the_file_is_replaced_whole(tmp_path: Path) -> None:
    out = tmp_path / "imgkit.prom"
    out.write_text("stale 1\n")
    write_metrics(out, run(GOOD), SUBJECT)
    assert "stale" not in out.read_text() and value(out.read_text(), "imgkit_verify_passed") == 1
    assert [p.name for p in tmp_path.iterdir()] == ["imgkit.prom"]      # no temporary left
    with pytest.raises(HostError, match="cannot write the metrics to .*/missing/imgkit.prom"):
        write_metrics(tmp_path / "missing" / "imgkit.prom", run(GOOD), SUBJECT)


def test_promtool_passes_every_verdict() -> None:
    need_tools()
    for name, verdict in verdicts().items():
        done = promtool("check", "metrics", stdin=metrics_text(verdict, SUBJECT))
        assert done.returncode == 0, (name, done.stdout + done.stderr)


def test_an_unreachable_pushgateway_is_named_and_the_verdict_is_said() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(HostError) as caught:
        push_metrics(url, run(GOOD), SUBJECT, timeout=5)
    assert f"the verdict (passed) could not be pushed to the Pushgateway at {url}" in caught.value.message


def test_pushed_verdicts_reach_prometheus(tmp_path: Path) -> None:
    """Three images' verdicts on one node, and a second node's: each its own group, and a
    new verdict replaces its group (a fixed image stops being reported failed)."""
    need_tools()
    with pushgateway(tmp_path / "pg") as gateway, prometheus(tmp_path / "prom", gateway) as prom:
        for image, report in (("a:1", GOOD), ("b:1", slow_gemm()), ("c:1", no_device())):
            verdict = run(report)
            push_metrics(gateway, Verdict(image, verdict.image_id, verdict.checks, True,
                                          verdict.facts), SUBJECT)
        push_metrics(gateway, run(GOOD), Identity(DIGEST, "linux/amd64", "gpu-node-8"))
        result = query_until(prom, "imgkit_verify_passed", 4)
        seen = {(r["metric"]["image"], r["metric"]["Hostname"]): (r["value"][1], r["metric"]["fault"])
                for r in result}
        assert seen == {("a:1", "gpu-node-7"): ("1", "none"), ("b:1", "gpu-node-7"): ("0", "image"),
                        ("c:1", "gpu-node-7"): ("0", "host"),
                        (run(GOOD).image, "gpu-node-8"): ("1", "none")}
        fixed = run(GOOD)
        push_metrics(gateway, Verdict("b:1", fixed.image_id, fixed.checks, True, fixed.facts), SUBJECT)
        now_passing = query_until(prom, 'imgkit_verify_passed{image="b:1"} == 1', 1)
        assert now_passing and now_passing[0]["metric"]["fault"] == "none"
        deadline = time.monotonic() + 30
        while {r["metric"]["image"] for r in query(prom, "imgkit_verify_passed == 0")} != {"c:1"}:
            assert time.monotonic() < deadline, query(prom, "imgkit_verify_passed == 0")
            time.sleep(0.5)
