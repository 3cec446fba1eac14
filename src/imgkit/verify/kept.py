"""`imgkit attest --max-age`: a registry image that already carries a signed, passing
verdict about its very digest, made by this imgkit with the same claims (--expect), bars
(--min) and declared checks (--checks), and no older than --max-age, is not judged again:
nothing is pulled, no probe runs, and the run reports the verdict the image carries. A
pipeline's verify job of an image production already holds unchanged (`--reuse-from`)
then costs seconds on the GPU runner, not a pull and a probe.

`judged_by` says what besides the image decides a verdict (it is recorded in every verdict
document); `reason_to_judge` is pure logic; `look` asks the registry and cosign."""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from ..options import Trust, VerifyOptions
from ..shipped import version
from .diagnose import HOST, IMAGE
from .subject import Subject
from .verdict import INFO, Check, Verdict

if TYPE_CHECKING:
    from ..registry import cosign
    from ..registry.reference import RemoteRef
    from .attestation import VerdictPredicate

CHECK = "verdict.kept"       # the info check a kept verdict's report begins with


def judged_by(options: VerifyOptions) -> str:
    """What besides the image decides its verdict, as one digest: this imgkit (its probe and
    checks), the --expect claims, the --min bars and the declared checks file's bytes."""
    declared = options.checks.read_bytes() if options.checks is not None else b""
    inputs = {"imgkit": version(), "expect": sorted(options.expect),
              "min": asdict(options.thresholds), "checks": hashlib.sha256(declared).hexdigest()}
    return "sha256:" + hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Wanted:
    """What a verdict must be to be kept instead of judging the image again."""
    judged_by: str        # judged_by() of this run's options
    gpu: bool             # this run would check the GPU: a verdict made without one is not enough
    max_age: float        # seconds


def reason_to_judge(newest: VerdictPredicate, image_id: str, wanted: Wanted,
                    now: float | None = None) -> str | None:
    """Why the image `image_id` must be judged again despite the newest signed verdict about
    its digest, or None: keep that verdict."""
    age = (now if now is not None else time.time()) - newest.recorded_at
    from .signed import span
    if newest.image_id != image_id:
        return f"its signed verdict judged image {newest.image_id[:19]}, not {image_id[:19]}"
    if not newest.passed:
        return "its newest signed verdict failed"
    if wanted.gpu and not newest.gpu_checked:
        return "its signed verdict was made without a GPU (--gpus none)"
    if newest.judged_by != wanted.judged_by:
        return ("its signed verdict was made by another imgkit, or with other --expect, --min "
                "or --checks")
    if age > wanted.max_age:
        return f"its signed verdict is {span(age)} old (--max-age {span(wanted.max_age)})"
    return None


def verdict_of(record: VerdictPredicate, image: str, title: str, max_age: float,
               now: float | None = None) -> Verdict:
    """The verdict the image carries as this run's, headed by an info check saying so."""
    from .signed import span
    age = (now if now is not None else time.time()) - record.recorded_at
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(record.recorded_at))
    head = Check(name=CHECK, verdict=INFO, expected=f"a signed, passing verdict at most "
                 f"{span(max_age)} old", measured=f"signed verdict of {when} ({span(age)} old, "
                 f"imgkit {record.imgkit_version})", required=False,
                 diagnosis="not judged again: no pull, no probe (attest without --max-age "
                           "judges it now)")
    checks = [head]
    for c in record.checks:
        extra = c.model_extra or {}
        checks.append(Check(name=c.name, verdict=c.verdict, required=c.required,
                            expected=str(extra.get("expected", "")),
                            measured=str(extra.get("measured", "")),
                            diagnosis=str(extra.get("diagnosis", "")),
                            scope=HOST if extra.get("scope") == HOST else IMAGE))
    return Verdict(image=image, image_id=record.image_id, checks=tuple(checks),
                   gpu_checked=record.gpu_checked, title=title)


@dataclass(frozen=True)
class Kept:
    verdict: Verdict      # the one the image carries, as this run's
    subject: Subject      # the image as its registry describes it


def look(remote: RemoteRef, options: VerifyOptions, trust: Trust, max_age: float,
         retry_for: float) -> Kept | str:
    """The verdict the registry image carries when it may be kept, else why the image is
    judged again. Reads its manifest, config and signed attestations; pulls nothing."""
    from ..registry import cosign
    from ..registry.remote import facts, offline_endpoint
    from .signed import newest_about
    remote, info = facts(remote, retry_for=retry_for, platform=options.platform)
    reference = f"{remote.registry}/{remote.repository}@{remote.digest}"
    try:
        statements: list[cosign.Statement] = cosign.verified_statements(
            offline_endpoint(remote.registry), reference, cosign.VERDICT_TYPE, trust)
    except cosign.SignatureRefused as refused:
        return f"{reference}: {refused.reason}"
    newest = newest_about(statements, reference, remote.digest)
    if isinstance(newest, str):                  # says the reference already
        return newest
    why = reason_to_judge(newest, info.id, Wanted(judged_by(options), options.gpus != "none",
                                                  max_age))
    if why is not None:
        return f"{reference}: {why}"
    from .. import labels
    return Kept(verdict_of(newest, reference, info.labels.get(labels.TAG, ""), max_age),
                Subject(reference, info, remote, in_engine=False))
