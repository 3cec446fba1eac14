"""A scan as metrics (scan/metrics.py): findings counted by severity and gate verdict, zeros
included, promtool's lint passing, a file replaced whole, and pushed scans reaching a real
Prometheus through a real Pushgateway, where a fixed image's count falls back to zero. The
scanner's own run is in tests/test_docker_scan.py."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from prometheus_client.exposition import generate_latest

from imgkit.errors import HostError
from imgkit.matrix.waivers import Waiver
from imgkit.scan.findings import Finding, Scan
from imgkit.scan.gate import Decision, decide
from imgkit.scan.metrics import registry_of, send_scan_metrics

from .helpers.monitoring import need_tools, prometheus, promtool, pushgateway, query_until
from .helpers.registry import free_port

IMAGE_ID = "sha256:" + "d" * 64
TODAY = dt.date(2026, 11, 27)


def finding(vid: str, package: str, score: float | None, fixed: tuple[str, ...] = ("2.0",)) -> Finding:
    return Finding(id=vid, aliases=(), package=package, ecosystem="PyPI", installed="1.0",
                   fixed=fixed, score=score)


FINDINGS = [finding("PYSEC-1", "pip", 9.8), finding("PYSEC-2", "py", 7.5, fixed=()),
            finding("PYSEC-3", "six", 5.0), finding("PYSEC-4", "idna", 2.0),
            finding("PYSEC-5", "wheel", None)]


def scanned(image: str, findings: list[Finding]) -> tuple[Scan, Decision]:
    waiver = Waiver(id="PYSEC-2", package="py", ecosystem="PyPI", reason="unused code path",
                    who="ml-platform", expires=TODAY + dt.timedelta(days=30))
    scan = Scan(image=image, image_id=IMAGE_ID, scanner="2.6.0", findings=tuple(findings))
    return scan, decide(findings, (waiver,), "high", TODAY)


def samples(text: str, name: str) -> dict[tuple[str, str], float]:
    out = {}
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels = dict(part.split("=", 1) for part in line[len(name) + 1:line.index("}")].split(","))
            out[(labels["severity"].strip('"'), labels["verdict"].strip('"'))] = float(line.split()[-1])
    return out


def test_findings_are_counted_by_severity_and_verdict_zeros_included() -> None:
    scan, decision = scanned("imgkit/cuda:11.8", FINDINGS)
    text = generate_latest(registry_of(scan, decision, "high", 2, now=1.7e9)).decode()
    counts = samples(text, "imgkit_scan_findings")
    assert len(counts) == 15                                     # 5 severities x 3 verdicts
    assert counts[("critical", "fail")] == 1 and counts[("high", "waived")] == 1
    assert counts[("medium", "below")] == counts[("low", "below")] == counts[("unknown", "below")] == 1
    assert sum(counts.values()) == len(FINDINGS)
    assert 'imgkit_scan_passed{fail_on="high",image="imgkit/cuda:11.8"} 0.0' in text
    assert 'imgkit_scan_database_age_days{image="imgkit/cuda:11.8"} 2.0' in text


def test_promtool_passes_the_scans_metrics_and_the_file_is_replaced_whole(tmp_path: Path) -> None:
    need_tools()
    scan, decision = scanned("imgkit/cuda:11.8", FINDINGS)
    done = promtool("check", "metrics",
                    stdin=generate_latest(registry_of(scan, decision, "high", None)).decode())
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "scan.prom"
    send_scan_metrics(str(out), scan, decision, "high", 2)
    assert "imgkit_scan_findings" in out.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["scan.prom"]
    with pytest.raises(HostError, match="cannot write the metrics to"):
        send_scan_metrics(str(tmp_path / "missing" / "scan.prom"), scan, decision, "high", 2)


def test_an_unreachable_pushgateway_is_named() -> None:
    scan, decision = scanned("a:1", FINDINGS)
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(HostError) as caught:
        send_scan_metrics(url, scan, decision, "high", 2)
    assert f"the scan (FAILED) could not be pushed to the Pushgateway at {url}" in caught.value.message


def test_pushed_scans_reach_prometheus_and_a_fixed_image_falls_back(tmp_path: Path) -> None:
    need_tools()
    critical = 'imgkit_scan_findings{severity="critical",verdict="fail"}'
    with pushgateway(tmp_path / "pg") as gateway, prometheus(tmp_path / "prom", gateway) as prom:
        for image in ("a:1", "b:1"):
            send_scan_metrics(gateway, *scanned(image, FINDINGS), "high", 2)
        assert {r["metric"]["image"] for r in query_until(prom, f"{critical} == 1", 2)} == {"a:1", "b:1"}
        send_scan_metrics(gateway, *scanned("b:1", FINDINGS[1:]), "high", 2)   # pip upgraded
        fixed = query_until(prom, f'{critical} == 0', 1)
        assert [r["metric"]["image"] for r in fixed] == ["b:1"]
