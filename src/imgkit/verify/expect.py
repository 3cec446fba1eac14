"""What an image should hold: from imgkit's labels, else from its tag, then --expect."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .. import labels as label_names
from ..errors import UsageError
from ..gpus import cdi_names

KEYS = ("cuda", "cudnn", "nccl", "cublas", "python", "framework", "framework_version", "tf32",
        "tf32_conv")
FRAMEWORK_NAMES = {"paddle": "paddle", "paddlepaddle": "paddle", "torch": "torch",
                   "pytorch": "torch", "jax": "jax"}
VALUE = re.compile(r"^[A-Za-z0-9_.+-]{1,40}$")
REQUIRE_CUDA = re.compile(r"cuda>=\s*(\d+\.\d+)")


def required_cuda(require: str) -> str | None:
    """The CUDA release an NVIDIA_REQUIRE_CUDA value names ("cuda>=12.4 brand=..." -> 12.4)."""
    found = REQUIRE_CUDA.search(require)
    return found.group(1) if found else None


@dataclass(frozen=True)
class Expectations:
    values: tuple[tuple[str, str], ...]
    sources: tuple[tuple[str, str], ...]   # key -> "label" | "tag" | "--expect"

    def get(self, key: str) -> str | None:
        return dict(self.values).get(key)

    def source(self, key: str) -> str:
        return dict(self.sources).get(key, "")

    def said_by(self, key: str) -> str:
        """Who claims `key`, for a diagnosis: 'the tag says 12.4'."""
        return {"label": "its labels say", "tag": "its tag says",
                "--expect": "--expect says"}.get(self.source(key), "the tag/labels say")


def from_labels(labels: dict[str, str]) -> dict[str, str]:
    out = {}
    for key, label in (("cuda", "cuda"), ("cudnn", "cudnn"), ("nccl", "nccl"),
                       ("cublas", "cublas"), ("python", "python"), ("framework", "framework"),
                       ("framework_version", "framework_version"), ("tf32", "tf32"),
                       ("tf32_conv", "tf32_conv")):
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


VERSION = r"[0-9]+(?:\.[0-9]+)*"
# What each key's value must look like (checked before anything runs: a typo is exit 2, not
# a failed verdict blamed on the image), with an example for the message.
VALUE_OF = {
    "cuda": (re.compile(r"^[0-9]+\.[0-9]+(?:\.[0-9]+)?$"), "a CUDA release such as 12.4"),
    "cudnn": (re.compile(rf"^{VERSION}$"), "a version or series such as 9 or 8.9.7"),
    "nccl": (re.compile(rf"^{VERSION}$"), "a version or series such as 2.21"),
    "cublas": (re.compile(rf"^{VERSION}$"), "a version or series such as 12.4"),
    "python": (re.compile(r"^3\.[0-9]+$"), "a Python series such as 3.11"),
    "framework": (re.compile(rf"^(?:{'|'.join(FRAMEWORK_NAMES)})$"),
                  "one of " + ", ".join(sorted(FRAMEWORK_NAMES))),
    "framework_version": (re.compile(rf"^{VERSION}(?:[+.-]?[A-Za-z0-9.]+)?$"),
                          "a version such as 2.6.2 or 2.5.1+cu124"),
    "tf32": (re.compile(r"^(?:on|off)$"), "on or off"),
    "tf32_conv": (re.compile(r"^(?:on|off)$"), "on or off"),
}


def parse_expect_options(options: list[str] | tuple[str, ...]) -> dict[str, str]:
    """--expect KEY=VALUE options, each checked against what its key can hold (exit 2)."""
    out = {}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or key not in KEYS:
            # only on the way out: no pydantic before a run
            from ..matrix.fields import meant
            near = meant(key.strip(), list(KEYS)) if sep else ""
            framework = FRAMEWORK_NAMES.get(key.strip().lower())
            raise UsageError(f"--expect {option!r}: expected KEY=VALUE with KEY one of "
                             f"{', '.join(KEYS)}",
                             hint=f"--expect framework={framework} --expect framework_version="
                                  f"{value}" if framework and sep else
                                  f"did you mean --expect {near}={value}?" if near else "")
        pattern, wanted = VALUE_OF[key]
        if not VALUE.match(value) or not pattern.match(value):
            # a package's version as NVIDIA's images write it: 2.21.5-1+cuda12.4 is 2.21.5
            leading = re.match(r"^[0-9]+(?:\.[0-9]+)+", value)
            raise UsageError(f"--expect {option!r}: {key} takes {wanted}",
                             hint=f"--expect {key}={leading.group(0)}"
                             if leading and pattern.match(leading.group(0)) else "")
        out[key] = FRAMEWORK_NAMES[value] if key == "framework" else value
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


# docker's --gpus: none, all, a count, or devices by index or UUID (GPU-..., MIG-...)
DEVICE = r"(?:[0-9]{1,3}|(?:GPU|MIG)-[0-9A-Fa-f-]{8,64}(?:/[0-9]+/[0-9]+)?)"
GPUS = re.compile(rf"^(?:none|all|[0-9]{{1,3}}|{DEVICE}(?:,{DEVICE})*)$")


GPUS_HINT = ("e.g. --gpus all, --gpus 2, --gpus 0,1, --gpus GPU-3b4c... (nvidia-smi -L lists "
             "them) or --gpus nvidia.com/gpu=all (nvidia-ctk cdi list lists those)")


def check_gpus(gpus: str) -> str:
    """--gpus, checked before anything runs (exit 2): docker's forms or CDI names."""
    try:
        names = cdi_names(gpus)
    except ValueError as exc:
        raise UsageError(f"--gpus {gpus!r}: {exc}", hint=GPUS_HINT)
    if names is None and not GPUS.match(gpus):
        word = next((w for w in ("all", "none") if gpus.strip().lower() in (w, w[:-1], w + "s")
                     or (len(gpus) > 1 and w.startswith(gpus.strip().lower()))), "")
        raise UsageError(f"--gpus {gpus!r}: expected none, all, a count, comma-separated "
                         "device indexes or UUIDs (GPU-..., MIG-...), or CDI device names "
                         "(VENDOR/CLASS=NAME)",
                         hint=f"did you mean --gpus {word}?" if word else GPUS_HINT)
    return gpus
