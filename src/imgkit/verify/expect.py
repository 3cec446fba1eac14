"""What an image should hold: from imgkit's labels, else from its tag, then --expect."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .. import labels as label_names
from ..errors import UsageError

KEYS = ("cuda", "cudnn", "nccl", "cublas", "python", "framework", "framework_version", "tf32")
FRAMEWORK_NAMES = {"paddle": "paddle", "paddlepaddle": "paddle", "torch": "torch",
                   "pytorch": "torch"}
VALUE = re.compile(r"^[A-Za-z0-9_.+-]{1,40}$")


@dataclass(frozen=True)
class Expectations:
    values: tuple[tuple[str, str], ...]
    sources: tuple[tuple[str, str], ...]   # key -> "label" | "tag" | "--expect"

    def get(self, key: str) -> str | None:
        return dict(self.values).get(key)

    def source(self, key: str) -> str:
        return dict(self.sources).get(key, "")


def from_labels(labels: dict[str, str]) -> dict[str, str]:
    out = {}
    for key, label in (("cuda", "cuda"), ("cudnn", "cudnn"), ("nccl", "nccl"),
                       ("cublas", "cublas"), ("python", "python"), ("framework", "framework"),
                       ("framework_version", "framework_version")):
        value = labels.get(label_names.component(label))
        if value:
            out[key] = value
    return out


def from_tag(ref: str) -> dict[str, str]:
    """`paddle:2.6.2-gpu-cuda11.8-cudnn8` -> cuda 11.8, cudnn 8, paddle 2.6.2."""
    ref = ref.split("@", 1)[0]   # name@sha256:...: the digest says nothing of the stack
    repository, _, tag = ref.rpartition(":") if ":" in ref.split("/")[-1] else (ref, "", "")
    out = {}
    cuda = re.search(r"cuda[-_]?(\d+\.\d+)", tag) or re.search(r"cu(\d{2})(\d)\b", tag)
    if cuda:
        out["cuda"] = cuda.group(1) if cuda.lastindex == 1 else f"{cuda.group(1)}.{cuda.group(2)}"
    cudnn = re.search(r"cudnn[-_]?(\d+(?:\.\d+)*)", tag)
    if cudnn:
        out["cudnn"] = cudnn.group(1)
    name = repository.split("/")[-1]
    if name in FRAMEWORK_NAMES:
        out["framework"] = FRAMEWORK_NAMES[name]
        version = re.match(r"^(\d+\.\d+(?:\.\d+)?)", tag)
        if version:
            out["framework_version"] = version.group(1)
    return out


def parse_expect_options(options: list[str]) -> dict[str, str]:
    out = {}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or key not in KEYS or not VALUE.match(value):
            raise UsageError(f"--expect {option!r}: expected KEY=VALUE with KEY one of "
                             f"{', '.join(KEYS)}")
        out[key] = value
    return out


def expectations(ref: str, labels: dict[str, str], options: list[str]) -> Expectations:
    layers = (("label", from_labels(labels)), ("tag", from_tag(ref)),
              ("--expect", parse_expect_options(options)))
    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    for source, found in layers:
        for key, value in found.items():
            if source == "tag" and key in values:
                continue  # labels are exact; the tag only fills gaps
            values[key] = value
            sources[key] = source
    return Expectations(tuple(sorted(values.items())), tuple(sorted(sources.items())))


GPUS = re.compile(r"^(none|all|[0-9]{1,3}|[A-Za-z0-9-]+(,[A-Za-z0-9-]+)*)$")


def check_gpus(gpus: str) -> str:
    """docker's --gpus value, checked before anything runs (exit 2)."""
    if not GPUS.match(gpus):
        raise UsageError(f"--gpus {gpus!r}: expected none, all, a count or comma-separated ids")
    return gpus
