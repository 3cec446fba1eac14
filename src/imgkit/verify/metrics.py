"""A verdict as metrics, in Prometheus' text format: what node_exporter's textfile collector
and a Pushgateway read (and promtool's `check metrics` lints).

Names follow Prometheus' conventions (base units in the name, `_ratio` for a share, `_info`
for identity); identity that changes with every build (digest, versions) is on the `_info`
series and the verdict only, so a rebuilt image does not multiply the other series. The
GPU labels are spelt as DCGM exporter spells them (`gpu`, `Hostname`, `DCGM_FI_DRIVER_VERSION`),
so a query can join a verdict to the node's health; its camelCase `modelName` is `model_name`
here, as promtool's lint requires."""
from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Gauge, push_to_gateway, write_to_textfile
from prometheus_client.exposition import generate_latest

from ..errors import HostError
from .gpu_checks import CONV_PRECISION, peak_of
from .precision import ran_as_tf32
from .verdict import FAIL, PASS, WARN, Verdict

if TYPE_CHECKING:
    from .facts import Report

PREFIX = "imgkit_verify"
JOB = "imgkit_verify"    # the Pushgateway's job: one group per image and node below it
# the probe measures GEMM and convolution throughput on the first device it sees
NAMES = {"gemm": "GEMM", "conv": "cuDNN convolution"}


@dataclass(frozen=True)
class Identity:
    """Who the numbers are about, besides the verdict: the registry digest judged ("" for
    an image never pushed; the `_info` series carries its image id), its platform, and the
    node it ran on."""
    digest: str
    platform: str = ""
    hostname: str = ""


def node_name() -> str:
    """The node a verdict was made on: NODE_NAME where Kubernetes' downward API sets it (a
    pod's own hostname is the pod's), else this host's name."""
    return os.environ.get("NODE_NAME") or socket.gethostname()


def fault(verdict: Verdict) -> str:
    """Who must act: "none" when it passed, else "host" or "image" (as the verdict says)."""
    if verdict.passed:
        return "none"
    return "host" if verdict.host_failure else "image"


class Series:
    """Gauges in a registry of their own (no process metrics): one family per name, made
    on first use, with one sample per label set."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._gauges: dict[str, Gauge] = {}

    def set(self, name: str, help_text: str, labels: dict[str, str], value: float) -> None:
        gauge = self._gauges.get(name)
        if gauge is None:
            gauge = self._gauges[name] = Gauge(name, help_text, tuple(labels),
                                               registry=self.registry)
        gauge.labels(**labels).set(value)


def registry_of(verdict: Verdict, identity: Identity, *, now: float | None = None) -> CollectorRegistry:
    """Every series of one verdict."""
    series = Series()
    gauge = series.set
    facts = verdict.facts
    # only what was judged: a report made with --gpus none says nothing of a GPU
    gpu = _gpu_labels(facts if verdict.gpu_checked else None, identity.hostname)
    image = {"image": verdict.image}
    gauge(f"{PREFIX}_passed", "1 when every required check passed; fault names who must act "
          "when not (host or image)",
          {**image, "digest": identity.digest, "platform": identity.platform, **gpu,
           "fault": fault(verdict)}, float(verdict.passed))
    gauge(f"{PREFIX}_gpu_verified", "1 when the image passed with its GPU checks run; 0 with "
          "--gpus none or when any required check failed (see imgkit_verify_check_passed)",
          {**image, "Hostname": gpu["Hostname"]}, float(verdict.gpu_verified))
    gauge(f"{PREFIX}_timestamp_seconds", "When the verdict was made (Unix time)",
          {**image, "Hostname": gpu["Hostname"]}, now if now is not None else time.time())
    if verdict.probe_seconds is not None:
        gauge(f"{PREFIX}_probe_duration_seconds", "How long the probe's container ran",
              {**image, "Hostname": gpu["Hostname"]}, verdict.probe_seconds)
    for check in verdict.checks:
        if check.verdict in (PASS, WARN, FAIL):
            gauge(f"{PREFIX}_check_passed", "1 when the check passed (a warning passes), 0 "
                  "when it failed; skipped and informational checks are left out",
                  {**image, "check": check.name, "required": str(check.required).lower(),
                   "Hostname": gpu["Hostname"]}, float(check.verdict != FAIL))
    if facts is not None:
        _info(series, verdict, identity, facts)
        if verdict.gpu_checked:
            _throughput(series, image, gpu, facts)
            _tf32(series, image, gpu, facts)
    return series.registry


def metrics_text(verdict: Verdict, identity: Identity, *, now: float | None = None) -> str:
    return generate_latest(registry_of(verdict, identity, now=now)).decode()


def is_pushgateway(where: str) -> bool:
    return where.startswith(("http://", "https://"))


def send_metrics(where: str, verdict: Verdict, identity: Identity) -> None:
    """To a Pushgateway (an http(s) URL) or into a file."""
    if is_pushgateway(where):
        push_metrics(where, verdict, identity)
    else:
        write_metrics(Path(where), verdict, identity)


def write_metrics(path: Path, verdict: Verdict, identity: Identity) -> None:
    """The file, replaced whole (a textfile collector never reads half of it)."""
    write_registry(path, registry_of(verdict, identity))


def push_metrics(url: str, verdict: Verdict, identity: Identity, timeout: float = 30) -> None:
    """Replace this image's group on this node in the Pushgateway at `url` (PUT: series the
    new verdict lacks go too), grouped by job, image and Hostname."""
    push_registry(url, JOB, registry_of(verdict, identity),
                  {"image": verdict.image, "Hostname": identity.hostname},
                  f"the verdict ({'passed' if verdict.passed else 'FAILED'})", timeout=timeout)


def write_registry(path: Path, registry: CollectorRegistry) -> None:
    """Any registry's series into a file, replaced whole (`--metrics FILE`)."""
    try:
        write_to_textfile(str(path), registry)
    except OSError as exc:
        raise HostError(f"cannot write the metrics to {path}: {exc.strerror or exc}",
                        hint="give --metrics a file in a folder that exists and can be written")


def push_registry(url: str, job: str, registry: CollectorRegistry, group: dict[str, str],
                  what: str, timeout: float = 30) -> None:
    """Any registry's series to the Pushgateway at `url`, replacing `job`'s `group` (PUT);
    `what` names what could not be pushed."""
    try:
        push_to_gateway(url, job=job, registry=registry, timeout=timeout, grouping_key=group)
    except OSError as exc:    # urllib's URLError and HTTPError are OSErrors
        said = getattr(exc, "reason", None) or exc
        raise HostError(f"{what} could not be pushed to the Pushgateway at {url}: {said}",
                        hint="check that the Pushgateway runs and this host reaches it; the "
                             "result itself stands (its ticket is kept)")


def _gpu_labels(facts: Report | None, hostname: str) -> dict[str, str]:
    """DCGM exporter's names for the GPU measured (the first the container sees)."""
    nvml = facts.gpu.nvml if facts else None
    devices = nvml.devices if nvml else ()
    work = facts.gpu.work if facts else None
    index = work.devices[0].index if work and work.devices else (devices[0].index if devices else None)
    return {"gpu": "" if index is None else str(index),
            "UUID": (devices[0].uuid or "") if devices else "",
            "model_name": devices[0].name if devices else "",
            "Hostname": hostname,
            "DCGM_FI_DRIVER_VERSION": (nvml.driver or "") if nvml else ""}


def _info(series: Series, verdict: Verdict, identity: Identity, facts: Report) -> None:
    libraries = facts.libraries
    frameworks = sorted((name, fw.version or "") for name, fw in facts.frameworks.items()
                        if fw.imported)
    labels = {"image": verdict.image, "digest": identity.digest, "platform": identity.platform,
              "image_id": verdict.image_id, "python": facts.system.python,
              "cuda": libraries.version("cudart") or "", "cudnn": libraries.version("cudnn") or "",
              "nccl": libraries.version("nccl") or "",
              "framework": ",".join(f"{name} {version}".strip() for name, version in frameworks)}
    series.set(f"{PREFIX}_image_info", "The image judged and its stack, as the probe read it "
               "from the libraries (not the tag)", labels, 1)


def _throughput(series: Series, image: dict[str, str], gpu: dict[str, str],
                facts: Report) -> None:
    work = facts.gpu.work
    if work is None:
        return
    peak = peak_of(facts)
    where = {**image, "gpu": gpu["gpu"], "UUID": gpu["UUID"], "model_name": gpu["model_name"],
             "Hostname": gpu["Hostname"]}
    measured = [("gemm", precision, timing) for precision, timing in sorted(work.gemm.items())]
    if work.conv is not None:
        measured.append(("conv", CONV_PRECISION, work.conv))
    for kind, precision, timing in measured:
        if timing.tflops is None:
            continue
        labels = {**where, "precision": precision}
        series.set(f"{PREFIX}_{kind}_flops_per_second", f"{NAMES[kind]} throughput the probe "
                   "measured (on the first GPU the container sees)", labels, timing.tflops * 1e12)
        share = peak.share(precision, timing.tflops) if peak else None
        if share is not None:
            series.set(f"{PREFIX}_{kind}_peak_ratio", f"{NAMES[kind]} throughput as a share of "
                       "the GPU's dense peak (scaled to the SMs visible)", labels, share)
    nccl = work.nccl
    if nccl is not None and nccl.busbw_gbs is not None:
        labels = {**where, "gpus": str(nccl.gpus)}
        series.set(f"{PREFIX}_nccl_bus_bandwidth_bytes_per_second", "NCCL all-reduce bus "
                   "bandwidth", labels, nccl.busbw_gbs * 1e9)


def _tf32(series: Series, image: dict[str, str], gpu: dict[str, str],
          facts: Report) -> None:
    """Whether each framework's default FP32 matmul and convolution ran as TF32 (the error
    signature the probe measured), whatever was claimed: a change is what an alert wants."""
    for (name, op), tf32 in ran_as_tf32(facts).items():
        labels = {**image, "framework": name, "op": op, "Hostname": gpu["Hostname"]}
        series.set(f"{PREFIX}_tf32_in_effect", "1 when the framework's default FP32 math ran "
                   "as TF32 (its error signature), 0 when as full FP32", labels, float(tf32))
