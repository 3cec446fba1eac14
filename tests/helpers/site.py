"""A matrix and verdicts for `imgkit site`, made without an engine."""
from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

from imgkit.matrix.targets import Plan, Target
from imgkit.verify.report import verdict_json
from imgkit.verify.verdict import Verdict

from .reports import GOOD, run

FAMILIES = (("imgkit/cuda:12.4-runtime-py3.11-bookworm", "cuda", "cuda", ""),
            ("torch:2.5.1-cuda12.4", "torch", "framework", "2.5.1"),
            ("torch-notebook:2.5.1-cuda12.4", "notebook", "extension", "2.5.1"),
            ("jax:0.4-cuda12.4", "jax", "framework", "0.4"),
            ("imgkit/python:3.11-bookworm", "cuda", "python", ""))


def plan_of(count: int = 0) -> Plan:
    """The five images above (or `count` made-up ones), two platforms for the framework."""
    made = FAMILIES if not count else tuple((f"team/model-{i}:1.{i}-cuda12.4", f"family-{i % 20}",
                                             "framework", f"1.{i}") for i in range(count))
    return Plan(targets=tuple(Target(
        tag=tag, layer=layer, family=family, parent=None, base=None, os="bookworm", python="3.11",
        cuda=None if layer == "python" else "12.4",
        components=(("framework", family), ("framework_version", version)) if version else (),
        platforms=("linux/amd64", "linux/arm64") if tag.startswith("torch:") else ("linux/amd64",))
        for tag, family, layer, version in made))


def slow() -> dict[str, Any]:
    report = copy.deepcopy(GOOD)
    report["gpu"]["work"]["gemm"]["bf16"]["tflops"] = 100.0
    return report


def write_verdict(folder: Path, name: str, image: str, verdict: Verdict, age: float = 0,
                  image_id: str = "", size: int | None = None) -> Path:
    path = folder / f"{name}.json"
    path.write_text(verdict_json(Verdict(image, image_id or verdict.image_id, verdict.checks,
                                         verdict.gpu_checked, verdict.facts, size=size)))
    stamp = path.stat().st_mtime - age
    os.utime(path, (stamp, stamp))
    return path


def verdicts(folder: Path) -> Path:
    """A GPU pass of the CUDA image, a failed torch (an older pass of another build of it
    too, with other packages), a notebook judged without a GPU under a registry's name, JAX
    with none, a file that is no verdict."""
    folder.mkdir(parents=True, exist_ok=True)
    write_verdict(folder, "cuda", FAMILIES[0][0], run(GOOD))
    write_verdict(folder, "torch-old", FAMILIES[1][0], run(listed(GOOD, "1.26.4", "3.0.11")),
                  age=3600, image_id="sha256:" + "1" * 64)
    write_verdict(folder, "torch", FAMILIES[1][0], run(listed(slow(), "2.0.1", "3.0.13", "requests")))
    write_verdict(folder, "notebook", "registry.example.com/ml/" + FAMILIES[2][0], run(GOOD, gpu=False))
    (folder / "broken.json").write_text('{"image": "x"}')
    (folder / "notes.json").write_text("not json")
    return folder


def three_builds(folder: Path) -> Path:
    """The verdicts of verdicts(), and a third build of torch before both, with its size:
    each build of torch recorded its unpacked size."""
    verdicts(folder)
    for name, size in (("torch-old", 6_500_000_000), ("torch", 6_620_000_000)):
        path = folder / f"{name}.json"
        document = json.loads(path.read_text())
        stamp = path.stat().st_mtime
        path.write_text(json.dumps({**document, "size": size}))
        os.utime(path, (stamp, stamp))
    write_verdict(folder, "torch-oldest", FAMILIES[1][0], run(listed(GOOD, "1.25.0", "3.0.9")),
                  age=7200, image_id="sha256:" + "2" * 64, size=6_400_000_000)
    return folder


def listed(report: dict[str, Any], numpy: str, libssl: str, *extra: str) -> dict[str, Any]:
    """`report` with the packages an attest run lists (its inventory)."""
    out = copy.deepcopy(report)
    out["inventory"] = {"dpkg": [{"name": "libssl3", "version": libssl}],
                        "python": [{"name": "numpy", "version": numpy, "location": "/opt/venv"},
                                   *({"name": e, "version": "1.0", "location": "/opt/venv"}
                                     for e in extra)]}
    return out
