"""What a monitoring stack needs to watch the verdicts `imgkit verify --metrics` sends, as
text: Prometheus alerting rules and a Grafana dashboard.

The rules: an image no longer verifies on a node, its throughput fell more than a margin
under the best the same image reached on the same GPU model, its TF32 state changed, and
no verdict came for two periods of the check's schedule."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .. import yamlload

GROUP = "imgkit-verdicts"
WINDOW = "7d"     # how far back "the best it reached" looks


@dataclass(frozen=True)
class MonitoringSettings:
    margin: float = 0.10          # a drop below the reference by more than this share alerts
    period_seconds: int = 86400   # how often a verdict is expected (the fleet check's schedule)


def throughput_dropped(kind: str, margin: float) -> str:
    """Each series under (1 - margin) of the best this image reached on this GPU model."""
    ratio = f"imgkit_verify_{kind}_peak_ratio"
    return (f"{ratio} < on (image, precision, model_name) group_left () "
            f"(max by (image, precision, model_name) (max_over_time({ratio}[{WINDOW}])) "
            f"* {1 - margin:g})")


def rules(settings: MonitoringSettings) -> str:
    """A Prometheus rule file (what `promtool check rules` reads)."""
    late = 2 * settings.period_seconds
    alerts: list[dict[str, Any]] = [
        {"alert": "ImgkitImageNoLongerVerifies",
         "expr": "imgkit_verify_passed == 0",
         "labels": {"severity": "critical"},
         "annotations": {
             "summary": "{{ $labels.image }} no longer verifies on {{ $labels.Hostname }}",
             "description": "imgkit verify failed {{ $labels.image }} on {{ $labels.Hostname }} "
                            "({{ $labels.model_name }}, driver "
                            "{{ $labels.DCGM_FI_DRIVER_VERSION }}): the {{ $labels.fault }} "
                            "is at fault. Its failed checks: "
                            "imgkit_verify_check_passed{image=\"{{ $labels.image }}\"} == 0."}},
        *({"alert": f"Imgkit{title}ThroughputDropped",
           "expr": throughput_dropped(kind, settings.margin),
           "labels": {"severity": "warning"},
           "annotations": {
               "summary": f"{title} throughput of {{{{ $labels.image }}}} dropped on "
                          "{{ $labels.Hostname }}",
               "description": f"{{{{ $labels.precision }}}} {kind} reached "
                              "{{ $value | humanizePercentage }} of the GPU's peak, more than "
                              f"{settings.margin:.0%} under the best this image reached on a "
                              f"{{{{ $labels.model_name }}}} in {WINDOW}."}}
          for kind, title in (("gemm", "Gemm"), ("conv", "Conv"))),
        {"alert": "ImgkitTf32StateChanged",
         "expr": f"changes(imgkit_verify_tf32_in_effect[{late}s]) > 0",
         "labels": {"severity": "warning"},
         "annotations": {
             "summary": "TF32 of {{ $labels.framework }} {{ $labels.op }} changed in "
                        "{{ $labels.image }} on {{ $labels.Hostname }}",
             "description": "The framework's default FP32 {{ $labels.op }} switched between "
                            "TF32 and full FP32: a driver, an environment variable or the "
                            "image changed what its FP32 math means."}},
        {"alert": "ImgkitCheckNotRun",
         "expr": f"time() - imgkit_verify_timestamp_seconds > {late}",
         "labels": {"severity": "warning"},
         "annotations": {
             "summary": "No verdict of {{ $labels.image }} from {{ $labels.Hostname }} for "
                        "two periods",
             "description": f"The last verdict is older than {late} s (twice the "
                            f"{settings.period_seconds} s schedule): the check stopped running "
                            "or cannot push."}},
    ]
    return yamlload.dump({"groups": [{"name": GROUP, "rules": alerts}]})


def dashboard(settings: MonitoringSettings) -> str:
    """A Grafana dashboard (JSON model, importable): the verdict of each image on each node
    over time, throughput against the best reached, and how old each verdict is."""
    source = {"type": "prometheus", "uid": "${datasource}"}
    where = 'image=~"$image", Hostname=~"$node"'

    def panel(number: int, title: str, kind: str, expr: str, legend: str, y: int,
              **extra: Any) -> dict[str, Any]:
        return {"id": number, "title": title, "type": kind, "datasource": source,
                "gridPos": {"h": 8, "w": 24 if kind == "status-history" else 12,
                            "x": 0 if kind == "status-history" or number % 2 == 0 else 12,
                            "y": y},
                "targets": [{"refId": "A", "datasource": source, "expr": expr,
                             "legendFormat": legend}], **extra}

    verdict_colours = {"fieldConfig": {"defaults": {"mappings": [{"type": "value", "options": {
        "0": {"text": "failed", "color": "red"}, "1": {"text": "passed", "color": "green"}}}]},
        "overrides": []}}
    panels = [
        panel(1, "Verdict by node and image", "status-history", f"imgkit_verify_passed{{{where}}}",
              "{{Hostname}} {{image}}", 0, **verdict_colours),
        panel(2, "GEMM share of peak", "timeseries",
              f"imgkit_verify_gemm_peak_ratio{{{where}}}", "{{image}} {{precision}} on {{Hostname}}", 8),
        panel(3, "Best GEMM share reached (the reference)", "timeseries",
              f"max by (image, precision, model_name) (max_over_time(imgkit_verify_gemm_peak_ratio"
              f"{{{where}}}[{WINDOW}]))", "{{image}} {{precision}} on {{model_name}}", 8),
        panel(4, "Convolution share of peak", "timeseries",
              f"imgkit_verify_conv_peak_ratio{{{where}}}", "{{image}} on {{Hostname}}", 16),
        panel(5, "Age of the last verdict", "timeseries",
              f"time() - imgkit_verify_timestamp_seconds{{{where}}}", "{{image}} on {{Hostname}}", 16,
              fieldConfig={"defaults": {"unit": "s", "thresholds": {"mode": "absolute", "steps": [
                  {"color": "green", "value": None},
                  {"color": "red", "value": 2 * settings.period_seconds}]}}, "overrides": []}),
    ]

    def variable(name: str, label: str) -> dict[str, Any]:
        return {"name": name, "type": "query", "datasource": source, "includeAll": True,
                "multi": True, "allValue": ".*", "current": {"text": "All", "value": "$__all"},
                "query": {"query": f"label_values(imgkit_verify_passed, {label})",
                          "refId": f"{name}-values"}, "refresh": 2}

    model = {"title": "imgkit verdicts", "uid": "imgkit-verdicts", "tags": ["imgkit", "gpu"],
             "schemaVersion": 39, "version": 1, "editable": True,
             "time": {"from": "now-7d", "to": "now"}, "refresh": "1m",
             "templating": {"list": [
                 {"name": "datasource", "type": "datasource", "query": "prometheus",
                  "label": "Prometheus"},
                 variable("image", "image"), variable("node", "Hostname")]},
             "panels": panels}
    return json.dumps(model, indent=2) + "\n"

