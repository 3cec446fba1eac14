"""What changed between two verdicts of one image and platform (the newest and the one
before it, of another image id): the stack as the libraries report it, the frameworks,
every pip and apt package when both reports listed them (`imgkit attest` does), the
image's size and the GEMM throughput against peak. docker-stacks' manifest diff, with the
GPU numbers beside it. Pure logic."""
from __future__ import annotations

from dataclasses import dataclass

from ..console import human_size
from ..verify.facts import Report
from ..verify.gpu_checks import gemm_shares
from .inputs import VerdictFile

FAMILIES = ("cudart", "cublas", "cudnn", "nccl")


@dataclass(frozen=True)
class Moved:
    kind: str          # "library", "framework", "pip", "apt", "size" or "throughput"
    name: str
    before: str        # "" when added
    after: str         # "" when removed


@dataclass(frozen=True)
class Changes:
    before: VerdictFile
    moved: tuple[Moved, ...]
    packages_compared: bool      # both reports listed their packages


def changes(before: VerdictFile, after: VerdictFile) -> Changes:
    old, new = before.facts, after.facts
    if old is None or new is None:
        return Changes(before, tuple(_size(before, after)), False)
    moved = _diff("library", _libraries(old), _libraries(new))
    moved += _diff("framework", _frameworks(old), _frameworks(new))
    compared = False
    if old.inventory is not None and new.inventory is not None:
        compared = True
        moved += _diff("pip", {d.name: d.version for d in old.inventory.python},
                       {d.name: d.version for d in new.inventory.python})
        moved += _diff("apt", {p.name: p.version for p in old.inventory.dpkg},
                       {p.name: p.version for p in new.inventory.dpkg})
    moved += _size(before, after)
    moved += _diff("throughput", _shares(before), _shares(after))
    return Changes(before, tuple(moved), compared)


def _size(before: VerdictFile, after: VerdictFile) -> list[Moved]:
    """The unpacked size, when both verdicts say it and it moved, with the difference."""
    if before.size is None or after.size is None or before.size == after.size:
        return []
    delta = after.size - before.size
    return [Moved("size", "image, unpacked", human_size(before.size),
                  f"{human_size(after.size)} ({'+' if delta > 0 else '-'}{human_size(abs(delta))})")]


def _diff(kind: str, old: dict[str, str], new: dict[str, str]) -> list[Moved]:
    return [Moved(kind, name, old.get(name, ""), new.get(name, ""))
            for name in sorted(old.keys() | new.keys()) if old.get(name) != new.get(name)]


def _libraries(report: Report) -> dict[str, str]:
    return {f: v for f in FAMILIES if (v := report.libraries.version(f))}


def _frameworks(report: Report) -> dict[str, str]:
    return {name: fw.version or "?" for name, fw in report.frameworks.items() if fw.imported}


def _shares(verdict: VerdictFile) -> dict[str, str]:
    """Each GEMM precision as a share of the GPU's peak, of a verdict made on a GPU."""
    if verdict.facts is None or not verdict.gpu_checked:
        return {}
    return {f"GEMM {p.upper()} of peak": f"{share:.0%}" for p, share in gemm_shares(verdict.facts).items()}
