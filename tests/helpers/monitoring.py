"""A real monitoring stack for tests: Debian's Pushgateway and Prometheus on free loopback
ports, each in a folder of its own, stopped when the block ends; and promtool."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from .registry import free_port, wait_for_port

TOOLS = ("promtool", "prometheus", "prometheus-pushgateway")


def need_tools() -> None:
    """Skip where the tools are not installed, except in CI, where that is a failure."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing and not os.environ.get("CI"):
        pytest.skip(f"{', '.join(missing)} not installed (.ci/setup-test-tools.sh installs them)")


def promtool(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *args], input=stdin, capture_output=True, text=True,
                          timeout=60)


@contextmanager
def running(argv: list[str], port: int, log: Path) -> Iterator[None]:
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, 30)
        yield
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def pushgateway(root: Path) -> Iterator[str]:
    """A Pushgateway; its URL."""
    port = free_port()
    root.mkdir(parents=True, exist_ok=True)
    # Debian's build persists to /var/lib/prometheus unless told otherwise
    with running(["prometheus-pushgateway", f"--web.listen-address=127.0.0.1:{port}",
                  f"--persistence.file={root / 'pushgateway.data'}"], port,
                 root / "pushgateway.log"):
        yield f"http://127.0.0.1:{port}"


@contextmanager
def prometheus(root: Path, pushgateway_url: str, rules: Path | None = None) -> Iterator[str]:
    """A Prometheus scraping the Pushgateway every second (keeping the pushed labels), with
    `rules` loaded; its URL."""
    port = free_port()
    root.mkdir(parents=True, exist_ok=True)
    target = urllib.parse.urlsplit(pushgateway_url).netloc
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
              "scrape_configs": [{"job_name": "pushgateway", "honor_labels": True,
                                  "static_configs": [{"targets": [target]}]}]}
    if rules is not None:
        config["rule_files"] = [str(rules)]
    (root / "prometheus.yml").write_text(json.dumps(config))   # JSON is YAML
    with running(["prometheus", f"--config.file={root / 'prometheus.yml'}",
                  f"--storage.tsdb.path={root / 'data'}",
                  f"--web.listen-address=127.0.0.1:{port}"], port, root / "prometheus.log"):
        ready(f"http://127.0.0.1:{port}")
        yield f"http://127.0.0.1:{port}"


def ready(prometheus_url: str, seconds: float = 30) -> None:
    """Wait until Prometheus answers queries: it listens before its storage is open, and
    answers 503 until then (seen on a loaded machine)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(f"{prometheus_url}/-/ready", timeout=5):
                return
        except OSError:          # urllib's HTTPError (503) and a refused connection alike
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def query(prometheus_url: str, promql: str) -> list[dict[str, Any]]:
    url = f"{prometheus_url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=10) as answer:
        body = json.load(answer)
    assert body["status"] == "success", body
    return list(body["data"]["result"])


def query_until(prometheus_url: str, promql: str, count: int, seconds: float = 30) -> list[dict[str, Any]]:
    """The query's result once it has `count` series (Prometheus scrapes every second)."""
    deadline = time.monotonic() + seconds
    while True:
        result = query(prometheus_url, promql)
        if len(result) >= count or time.monotonic() > deadline:
            return result
        time.sleep(0.5)
