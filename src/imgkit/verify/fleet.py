"""A fleet check: one node's report held to a reference, the verdict the image was promoted
with (its `imgkit verify --json` document). Throughput is compared as a share of each GPU's
peak, so a node with another GPU model is held to what the image reached, not to that
model's TFLOPS; TF32 must be in effect where it was. A node that falls short is the node's
fault (exit 3), not the image's: the image already proved itself. Pure logic."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from .diagnose import HOST
from .facts import InvalidReport, Report, parse_report
from .gpu_checks import CONV_PRECISION, gemm_shares, peak_of
from .precision import ran_as_tf32
from .verdict import FAIL, INFO, PASS, Check, Verdict


@dataclass(frozen=True)
class Reference:
    """What the reference verdict measured: each throughput as a share of its GPU's peak,
    and whether each framework's FP32 matmul and convolution ran as TF32."""
    file: str
    image_id: str
    gpu: str
    shares: tuple[tuple[str, float], ...]          # ("gemm tf32", 0.61), ("conv fp16", 0.4)
    tf32: tuple[tuple[str, bool], ...]             # ("paddle matmul", True)


def shares_of(report: Report) -> dict[str, float]:
    """Each throughput the probe timed, as a share of its GPU's peak ({} when unknown)."""
    found = {f"gemm {precision}": share for precision, share in gemm_shares(report).items()}
    work, peak = report.gpu.work, peak_of(report)
    conv = work.conv.tflops if work is not None and work.conv is not None else None
    share = peak.share(CONV_PRECISION, conv) if peak is not None and conv else None
    if share is not None:
        found[f"conv {CONV_PRECISION}"] = share
    return found


def tf32_of(report: Report) -> dict[str, bool]:
    """Whether each framework's default FP32 matmul and convolution ran as TF32 (its error
    signature), where the probe measured it."""
    return {f"{name} {op}": tf32 for (name, op), tf32 in ran_as_tf32(report).items()}


def read_reference(path: Path) -> Reference:
    """The reference verdict: an `imgkit verify --json` (or `judge --json`) document with
    the probe's facts; anything else is bad input naming the file (exit 2)."""
    try:
        document = json.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"--reference {path}: {exc.strerror}")
    except ValueError as exc:
        raise UsageError(f"--reference {path}: not JSON ({exc})")
    facts = document.get("facts") if isinstance(document, dict) else None
    if not isinstance(facts, dict):
        raise UsageError(f"--reference {path}: not a verdict with the probe's facts",
                         hint="give the `imgkit verify IMAGE --json FILE` of the verdict the image "
                              "was promoted with")
    try:
        report = parse_report(facts)
    except InvalidReport as exc:
        raise UsageError(f"--reference {path}: its facts cannot be used: {exc}",
                         hint="verify the image again with this imgkit to make a reference")
    if not report.gpu.nvml.devices or report.gpu.work is None:
        raise UsageError(f"--reference {path}: it was verified without a GPU (--gpus none), "
                         "so it measured nothing to hold a node to")
    return Reference(str(path), str(document.get("image_id") or ""),
                     report.gpu.nvml.devices[0].name, tuple(sorted(shares_of(report).items())),
                     tuple(sorted(tf32_of(report).items())))


def fleet_checks(verdict: Verdict, reference: Reference, margin: float) -> list[Check]:
    """The node's numbers against the reference's: each share of peak at least (1 - margin)
    of the reference's, TF32 in effect wherever it was."""
    if reference.image_id and reference.image_id != verdict.image_id:
        return [Check("fleet.reference", FAIL, f"a verdict of {verdict.image_id[:19]}",
                      f"a verdict of {reference.image_id[:19]}",
                      f"{reference.file} judged another image: give the verdict this image was "
                      "promoted with")]
    facts = verdict.facts
    if facts is None or facts.gpu.work is None:
        return [Check("fleet.throughput", INFO, "the reference's throughput", "not measured",
                      "no GPU work in this report: nothing to compare", required=False)]
    node_gpu = facts.gpu.nvml.devices[0].name if facts.gpu.nvml.devices else "?"
    shares, states = shares_of(facts), tf32_of(facts)
    checks = [_throughput(name, shares.get(name), share, margin, reference.gpu, node_gpu)
              for name, share in reference.shares]
    checks += [_tf32(name, states.get(name), was) for name, was in reference.tf32]
    return checks


def _throughput(name: str, share: float | None, reference: float, margin: float,
                reference_gpu: str, node_gpu: str) -> Check:
    kind, precision = name.split(" ", 1)
    check_name = f"fleet.{kind}.{precision}"
    floor = reference * (1 - margin)
    expected = f">= {floor:.0%} of peak ({reference:.0%} on {reference_gpu}, less {margin:.0%})"
    if share is None:
        return Check(check_name, FAIL, expected, "not measured",
                     f"this node ({node_gpu}) did not time {kind} at {precision}, which the "
                     "reference did", scope=HOST)
    measured = f"{share:.0%} of peak on {node_gpu}"
    if share >= floor:
        return Check(check_name, PASS, expected, measured)
    return Check(check_name, FAIL, expected, measured,
                 f"this node computes {kind} at {precision} {1 - share / reference:.0%} slower "
                 "than the image did when it was verified: look at the node (clocks, power "
                 "cap, thermals, ECC, a MIG layout, other work on the GPU)", scope=HOST)


def _tf32(name: str, now: bool | None, was: bool) -> Check:
    framework, op = name.split(" ", 1)
    said = "TF32" if was else "full FP32"
    if now is None:
        return Check(f"fleet.tf32.{framework}.{op}", INFO, said, "not measured",
                     f"this node's report has no FP32 {op} error for {framework}", required=False)
    if now == was:
        return Check(f"fleet.tf32.{framework}.{op}", PASS, said, said)
    return Check(f"fleet.tf32.{framework}.{op}", FAIL, said, "TF32" if now else "full FP32",
                 f"{framework}'s FP32 {op} ran as {'TF32' if now else 'full FP32'} here, "
                 f"{said} when the image was verified: the node's environment changes the "
                 "math (NVIDIA_TF32_OVERRIDE, a driver or library the node injects)", scope=HOST)
