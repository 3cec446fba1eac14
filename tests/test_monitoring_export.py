"""imgkit export monitoring: alerting rules promtool accepts and whose alerts fire on the
series verify --metrics writes (promtool's rule unit tests), loaded by a real Prometheus
that fires "no longer verifies" on a pushed failing verdict; a dashboard whose every query
answers from pushed verdicts."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from imgkit.cli import app
from imgkit.verify.metrics import Identity, push_metrics

from .helpers.metrics import no_device
from .helpers.monitoring import need_tools, prometheus, promtool, pushgateway, query
from .helpers.reports import GOOD, run

ALERTS, DASHBOARD = "imgkit-alerts.yml", "imgkit-dashboard.json"


def export(out: Path, *extra: str) -> Path:
    result = CliRunner().invoke(app, ["export", "monitoring", "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    return out


def test_the_rules_pass_promtool(tmp_path: Path) -> None:
    need_tools()
    out = export(tmp_path, "--margin", "0.2", "--period", "6h")
    done = promtool("check", "rules", str(out / ALERTS))
    assert done.returncode == 0 and "SUCCESS: 5 rules found" in done.stdout, done.stdout + done.stderr
    text = (out / ALERTS).read_text()
    assert "* 0.8)" in text and "> 43200" in text       # the margin and two periods of 6 h


@pytest.mark.parametrize("args", [["--period", "30s"], ["--period", "soon"], ["--margin", "2"]])
def test_bad_settings_are_refused(tmp_path: Path, args: list[str]) -> None:
    result = CliRunner().invoke(app, ["export", "monitoring", "--out", str(tmp_path / "o"), *args])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert not (tmp_path / "o").exists()


UNIT_TESTS = """
rule_files: [{rules}]
evaluation_interval: 1m
tests:
  - interval: 1h
    input_series:
      - series: 'imgkit_verify_passed{{image="a:1",Hostname="n1",fault="none",model_name="H100"}}'
        values: '1 1 _ _'
      - series: 'imgkit_verify_passed{{image="a:1",Hostname="n1",fault="host",model_name="H100",DCGM_FI_DRIVER_VERSION="580.1"}}'
        values: '_ _ 0 0'
      - series: 'imgkit_verify_gemm_peak_ratio{{image="a:1",Hostname="n1",precision="tf32",model_name="H100"}}'
        values: '0.8 0.8 0.5 0.5'
      - series: 'imgkit_verify_gemm_peak_ratio{{image="a:1",Hostname="n2",precision="tf32",model_name="H100"}}'
        values: '0.79 0.79 0.78 0.78'
      - series: 'imgkit_verify_tf32_in_effect{{image="a:1",Hostname="n1",framework="torch",op="matmul"}}'
        values: '0 0 1 1'
      - series: 'imgkit_verify_timestamp_seconds{{image="a:1",Hostname="n1"}}'
        values: '0 3600 7200 10800'
      - series: 'imgkit_verify_timestamp_seconds{{image="b:1",Hostname="n1"}}'
        values: '0 0 0 0'
    alert_rule_test:
      - eval_time: 1h
        alertname: ImgkitImageNoLongerVerifies
        exp_alerts: []
      - eval_time: 3h
        alertname: ImgkitImageNoLongerVerifies
        exp_alerts:
          - exp_labels: {{severity: critical, image: "a:1", Hostname: n1, fault: host, model_name: H100,
                          DCGM_FI_DRIVER_VERSION: "580.1"}}
            exp_annotations:
              summary: a:1 no longer verifies on n1
              description: 'imgkit verify failed a:1 on n1 (H100, driver 580.1): the host is at fault.
                Its failed checks: imgkit_verify_check_passed{{image="a:1"}} == 0.'
      - eval_time: 1h
        alertname: ImgkitGemmThroughputDropped
        exp_alerts: []
      - eval_time: 3h
        alertname: ImgkitGemmThroughputDropped
        exp_alerts:
          - exp_labels: {{severity: warning, image: "a:1", Hostname: n1, precision: tf32, model_name: H100}}
            exp_annotations:
              summary: Gemm throughput of a:1 dropped on n1
              description: "tf32 gemm reached 50% of the GPU's peak, more than 10% under the best this
                image reached on a H100 in 7d."
      - eval_time: 3h
        alertname: ImgkitTf32StateChanged
        exp_alerts:
          - exp_labels: {{severity: warning, image: "a:1", Hostname: n1, framework: torch, op: matmul}}
            exp_annotations:
              summary: TF32 of torch matmul changed in a:1 on n1
              description: "The framework's default FP32 matmul switched between TF32 and full FP32: a
                driver, an environment variable or the image changed what its FP32 math means."
      - eval_time: 3h
        alertname: ImgkitCheckNotRun
        exp_alerts:
          - exp_labels: {{severity: warning, image: "b:1", Hostname: n1}}
            exp_annotations:
              summary: No verdict of b:1 from n1 for two periods
              description: "The last verdict is older than 7200 s (twice the 3600 s schedule): the
                check stopped running or cannot push."
"""  # noqa: E501 (a series per line, as promtool's docs write them)


def test_the_alerts_fire_on_the_series_verify_writes(tmp_path: Path) -> None:
    """promtool's own rule tests, with a period of 1 h: a host fault, a drop of 0.8 to 0.5 of
    peak on one node (the other node's 0.78 is within 10%), TF32 turning on, a node that
    stopped sending; and nothing fires while all is well."""
    need_tools()
    export(tmp_path, "--period", "1h")
    (tmp_path / "tests.yml").write_text(UNIT_TESTS.format(rules=ALERTS))
    done = promtool("test", "rules", str(tmp_path / "tests.yml"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_dashboard_is_a_grafana_model_whose_queries_answer(tmp_path: Path) -> None:
    need_tools()
    export(tmp_path)
    model = json.loads((tmp_path / DASHBOARD).read_text())
    assert model["uid"] == "imgkit-verdicts" and model["schemaVersion"] >= 36
    names = [v["name"] for v in model["templating"]["list"]]
    assert names == ["datasource", "image", "node"]
    ids = [p["id"] for p in model["panels"]]
    assert len(ids) == len(set(ids)) and all({"gridPos", "datasource", "targets"} <= set(p)
                                             for p in model["panels"])
    with pushgateway(tmp_path / "pg") as gateway, \
            prometheus(tmp_path / "prom", gateway, rules=tmp_path / ALERTS) as prom:
        push_metrics(gateway, run(GOOD), Identity("", "linux/amd64", "n1"))
        broken = run(no_device())
        push_metrics(gateway, broken, Identity("", "linux/amd64", "n2"))
        exprs = [t["expr"].replace("$image", ".*").replace("$node", ".*")
                 for p in model["panels"] for t in p["targets"]]
        deadline = time.monotonic() + 30
        while not all(query(prom, e) for e in exprs):
            assert time.monotonic() < deadline, [e for e in exprs if not query(prom, e)]
            time.sleep(0.5)
        firing = wait_for_alert(prom, "ImgkitImageNoLongerVerifies")
    assert [(a["labels"]["Hostname"], a["labels"]["fault"]) for a in firing] == [("n2", "host")]


def wait_for_alert(prom: str, name: str, seconds: float = 30) -> list[dict]:
    import urllib.request
    deadline = time.monotonic() + seconds
    while True:
        with urllib.request.urlopen(f"{prom}/api/v1/alerts", timeout=10) as answer:
            alerts = [a for a in json.load(answer)["data"]["alerts"]
                      if a["labels"]["alertname"] == name and a["state"] == "firing"]
        if alerts or time.monotonic() > deadline:
            return alerts
        time.sleep(0.5)
