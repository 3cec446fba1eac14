"""Reading Prometheus' text format, and a report of a host with no GPU device."""
from __future__ import annotations

import copy
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from .reports import GOOD


def value(text: str, name: str, **labels: str) -> float:
    """The one sample of `name` whose labels include `labels`."""
    found = [v for (n, ls), v in samples(text).items() if n == name and set(labels.items()) <= ls]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def no_device() -> dict[str, Any]:
    report = copy.deepcopy(GOOD)
    report["gpu"] = {"device_count": 0, "runtime_error": {"error": "CUDA driver version is "
                                                                   "insufficient for CUDA runtime version"}}
    return report


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of the text, by name and label set."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}
