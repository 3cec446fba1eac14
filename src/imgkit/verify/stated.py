"""The versions an image states by names the claims table (data/claims.yaml) lacks:
TENSORFLOW_VERSION, NUMPY_VERSION, com.nvidia.tensorrt.version. claims.py holds each to
what the probe read by that name; here, only which they are, and whether answering them
needs the probe's list of what is installed.

Asked before the probe's container starts, so it does without YAML and the report's
models (the judges import those while the probe runs): the table's names are read from its
lines, one claim to a line (tests/test_claims.py holds them to the table as YAML reads it)."""
from __future__ import annotations

import re
from functools import lru_cache

from ..shipped import PACKAGE_DIR

NUMBERS = re.compile(r"^v?(\d+(?:\.\d+)*)")
NAMED = re.compile(r"^(?:cuda|cudnn|nccl|cublas|tensorrt|trt|python|py)[-_ ]?(?=\d)", re.I)
CU_TAG = re.compile(r"^cu(1\d|[89])(\d)$")       # PyTorch's wheel tags: cu124, cu118, cu92
UNLISTED = {"env": re.compile(r"^([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)_VERSION$"),
            "label": re.compile(r"^com\.nvidia\.([a-z0-9][a-z0-9_-]*)\.version$")}
# NGC's NVIDIA_<PRODUCT>_VERSION is the container's release, YY.MM (24.10, 22.12-tf1),
# never the version of the package of that name (nvidia-tensorflow 1.15.5+nv22.12): stated,
# never judged. NVIDIA_DALI_CUDA120_VERSION=1.43.0 is a package's, and judged.
NGC_RELEASE = re.compile(r"^\d{2}\.\d{2}(?:-[\w.]+)?$")
TABLE_LINE = re.compile(r"^\s*- \{name: ([^,\s]+), kind: (env|label)\b", re.MULTILINE)


def version_of(text: str, parts: int) -> str | None:
    """`2.21.5-1+cuda12.4` -> 2.21.5 (a Debian revision, a local build suffix dropped); a
    package's `name=version` form is read after its `=`; the library's name before the
    number as people write it (`cuda-12.4`, `cudnn9`), and PyTorch's `cu124` (12.4)."""
    value = text.strip().rsplit("=", 1)[-1]
    wheel_tag = CU_TAG.match(value)
    if wheel_tag:
        value = f"{wheel_tag.group(1)}.{wheel_tag.group(2)}"
    found = NUMBERS.match(NAMED.sub("", value, count=1))
    return ".".join(found.group(1).split(".")[:parts]) if found else None


@lru_cache(maxsize=1)
def listed_names() -> frozenset[tuple[str, str]]:
    """(kind, name) of every claim of the table."""
    text = (PACKAGE_DIR / "verify" / "data" / "claims.yaml").read_text(encoding="utf-8")
    return frozenset((kind, name) for name, kind in TABLE_LINE.findall(text))


def unlisted(kind: str, said: dict[str, str]) -> list[tuple[str, str, str, str]]:
    """(name, text, thing, version) of each version stated by a name the table lacks,
    `thing` the name's own part in lower case (`tensorflow`, `tensorrt`)."""
    found = []
    for name, text in sorted(said.items()):
        named = UNLISTED[kind].match(name)
        version = version_of(text or "", 3)
        if (kind, name) not in listed_names() and named is not None and version is not None:
            found.append((name, text, named.group(1).lower(), version))
    return found      # the others are the table's, or not versions (a path, a word)


def judged_by_name(thing: str, text: str) -> bool:
    return not (thing.startswith("nvidia_") and NGC_RELEASE.match(text.strip()))


def wants_inventory(env: dict[str, str], labels: dict[str, str] | None = None) -> bool:
    """Whether the image states versions that the probe's list of what is installed may
    answer by name (NUMPY_VERSION, PIP_VERSION): that list is read then, and only then, in
    the same run (milliseconds inside the container)."""
    return any(thing != "python" and judged_by_name(thing, text)
               for kind, said in (("env", env), ("label", labels or {}))
               for _, text, thing, _ in unlisted(kind, said))
