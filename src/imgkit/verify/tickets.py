"""A verdict is a ticket for exactly one image id.

Every `imgkit verify` records its verdict here ($IMGKIT_CACHE_DIR/verdicts, else
~/.cache/imgkit/verdicts), under the id of the image it judged. Publishing asks for the
ticket of the id a tag points at *now*: a tag that moved, or an image rebuilt since, has
none, and is refused.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..cache import cache_dir
from ..cachefile import write_whole
from .attestation import CheckRecord, VerdictRecord, record_of
from .verdict import Verdict

FORMAT = 1
IMAGE_ID = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class Ticket:
    image_id: str
    image: str               # the reference verify was given
    passed: bool
    gpu_checked: bool        # False: verified with --gpus none, the GPU was not proven
    failed: tuple[str, ...]  # names of the required checks that failed
    host_failure: bool
    recorded_at: float
    overrides: tuple[str, ...] = ()   # --expect KEY=VALUE the run judged by, over labels and tag


def path_of(image_id: str) -> Path:
    return cache_dir() / "verdicts" / _file_name(image_id)


def file_folder() -> Path:
    """Where each ticket's whole verdict is kept (what `verify --json` writes: the probe's
    facts too), one file per image id: the history `imgkit site` shows without --verdicts."""
    return cache_dir() / "verdict-files"


def keep_file(image_id: str, text: str) -> None:
    """Keep `text` (verify's JSON verdict of `image_id`) beside its ticket."""
    write_whole(file_folder() / _file_name(image_id), text)


def _file_name(image_id: str) -> str:
    if not IMAGE_ID.match(image_id):
        raise ValueError(f"not an image id: {image_id!r}")
    return f"{image_id.split(':', 1)[1]}.json"


def make_document(verdict: Verdict, overrides: tuple[str, ...] = (),
                  judged_by: str | None = None) -> VerdictRecord:
    """What a ticket file holds, and what is attached next to a digest: the ticket, every
    check, and the libraries seen (what an extension built on this image is compared with)."""
    from .evaluate import library_summary
    return VerdictRecord(
        format=FORMAT, image_id=verdict.image_id, image=verdict.image, passed=verdict.passed,
        gpu_checked=verdict.gpu_checked, failed=[c.name for c in verdict.failed],
        host_failure=verdict.host_failure, recorded_at=time.time(), overrides=list(overrides),
        checks=[CheckRecord(**asdict(c)) for c in verdict.checks],
        libraries=library_summary(verdict.facts) if verdict.facts else None,
        judged_by=judged_by)


def record(verdict: Verdict, overrides: tuple[str, ...] = ()) -> Ticket | None:
    """Keep `verdict` as the ticket of the image id it judged; see keep()."""
    return keep(make_document(verdict, overrides))


def keep(document: VerdictRecord) -> Ticket | None:
    """Keep a verdict `document` (make_document's) as the ticket of the image id it judged,
    replacing an older one, and return it. A run judged by --expect overrides never replaces
    a ticket a plain verify recorded (the image's own claims): then nothing is kept, None."""
    image_id = document.image_id
    if document.overrides:
        earlier = lookup(image_id)
        if earlier is not None and not earlier.overrides:
            return None
    write_whole(path_of(image_id), document.model_dump_json(indent=1))
    return ticket_of(document, image_id)


def ticket_of(raw: object, image_id: str) -> Ticket | None:
    """The ticket a recorded verdict (a file here, or the verdict attached in a registry,
    as a VerdictRecord or as read) holds for `image_id`, or None when it is not one for that
    id."""
    found = raw if isinstance(raw, VerdictRecord) else record_of(raw)
    if found is None or found.format != FORMAT or found.image_id != image_id:
        return None
    return Ticket(image_id=found.image_id, image=found.image, passed=found.passed,
                  gpu_checked=found.gpu_checked, failed=tuple(found.failed),
                  host_failure=found.host_failure, recorded_at=found.recorded_at,
                  overrides=tuple(found.overrides))


def document(image_id: str) -> VerdictRecord | None:
    """The whole recorded verdict of `image_id` (its checks included), as verify wrote it:
    what publishing attaches to the digest."""
    try:
        found = record_of(json.loads(path_of(image_id).read_text()))
    except (OSError, ValueError):
        return None
    return found if found is not None and ticket_of(found, image_id) is not None else None


def lookup(image_id: str) -> Ticket | None:
    return ticket_of(document(image_id), image_id)


def latest_for(ref: str) -> Ticket | None:
    """The newest ticket recorded for the reference `ref`, whatever image id it judged."""
    found = [t for t in (lookup(f"sha256:{p.stem}") for p in (cache_dir() / "verdicts").glob("*.json")
                         if re.fullmatch(r"[0-9a-f]{64}", p.stem)) if t is not None and t.image == ref]
    return max(found, key=lambda t: t.recorded_at, default=None)


def refusal(ref: str, image_id: str, ticket: Ticket | None, *, allow_gpu_unverified: bool,
            earlier: Ticket | None = None) -> str | None:
    """Why `ref` (now the image `image_id`) may not be published, or None when it may.
    `earlier`: the newest ticket of `ref` for any id (to say that the tag moved)."""
    if ticket is None:
        if earlier is not None and earlier.image_id != image_id:
            return (f"{ref} was verified as {earlier.image_id[:19]}, but it is now {image_id[:19]} "
                    f"(rebuilt or retagged since): run `imgkit verify {ref}` again")
        return (f"{ref} ({image_id[:19]}) was never verified: run `imgkit verify {ref}`")
    if ticket.host_failure:
        return f"{ref}: its verification could not run on that host ({', '.join(ticket.failed)})"
    if not ticket.passed:
        return f"{ref}: its verification failed: {', '.join(ticket.failed)}"
    if not ticket.gpu_checked and not allow_gpu_unverified:
        return (f"{ref} was verified without a GPU (--gpus none): verify it on a GPU host, or "
                "pass --allow-gpu-unverified and the record says so")
    return None


def libraries_of(image_id: str) -> dict[str, list[list[str]]] | None:
    """The NVIDIA library copies the recorded verdict of `image_id` saw, or None."""
    found = document(image_id)
    return found.libraries if found is not None else None
