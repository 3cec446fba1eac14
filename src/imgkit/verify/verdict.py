"""A verdict: the checks made of one image, for the image id that was judged (publishing
gates on that id). Plain frozen data, cheap to import."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from .diagnose import HOST, IMAGE, Scope

if TYPE_CHECKING:
    from .facts import Report

Status = Literal["pass", "fail", "warn", "skip", "info"]
PASS: Status = "pass"
FAIL: Status = "fail"
WARN: Status = "warn"
SKIP: Status = "skip"
INFO: Status = "info"
EVIDENCE = 600          # characters kept of any one field of a check: reports are untrusted


@dataclass(frozen=True)
class Check:
    name: str
    verdict: Status
    expected: str = ""
    measured: str = ""
    diagnosis: str = ""
    scope: Scope = IMAGE    # who must act when it fails: the image or the host
    required: bool = True

    def __post_init__(self) -> None:
        for field in ("name", "expected", "measured", "diagnosis"):
            text = getattr(self, field)
            if len(text) > EVIDENCE:
                object.__setattr__(self, field, text[:EVIDENCE - 1] + "…")


@dataclass(frozen=True)
class Verdict:
    image: str                  # the reference the user named
    image_id: str               # the image that was judged: a verdict is for this id only
    checks: tuple[Check, ...]
    gpu_checked: bool = False   # whether the GPU checks ran (not --gpus none)
    facts: Report | None = None
    probe_seconds: float | None = None   # how long the probe's container ran (None: judged elsewhere)
    title: str = ""             # the image's own name (its image.title label): what a digest
                                # reference a verify job judged was built as, "" if unlabelled
    size: int | None = None     # bytes the image holds unpacked in the engine (None: judged
                                # from its registry's description, or not known)
    command: str = "verify"     # what judged it: verify ran the probe; judge read a report
                                # a probe printed elsewhere (a Job's log)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.verdict == FAIL and c.required]

    @property
    def passed(self) -> bool:
        return not self.failed

    @property
    def gpu_verified(self) -> bool:
        return self.gpu_checked and self.passed

    @property
    def host_failure(self) -> bool:
        return any(c.scope == HOST for c in self.failed)

    @property
    def without_gpu(self) -> str:
        """Why the GPU was not checked, in the words of the command that judged."""
        return without_gpu(self.command)


def without_gpu(command: str) -> str:
    return "--gpus none" if command == "verify" else "its probe ran with --no-gpu"


def failure(image: str, image_id: str, check: Check, *, before: tuple[Check, ...] = (),
            command: str = "verify") -> Verdict:
    """The verdict when no report could be judged: one failing check says why."""
    return Verdict(image=image, image_id=image_id, checks=(*before, check), command=command)
