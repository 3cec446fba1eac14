"""What a signed verdict (an in-toto statement whose signature cosign verified) must say
before an image may be promoted or trusted (`imgkit check-signed`). The signatures are
cosign's (registry/cosign.py), the predicate's schema is attestation.py's; `refusal` is pure
logic."""
from __future__ import annotations

import time

from .. import reproduction
from ..options import Trust
from ..registry import cosign
from ..registry.artifacts import artifact_tag
from ..registry.client import RegistryClient
from . import attestation, tickets
from .attestation import VerdictPredicate, VerdictRecord


def check(client: RegistryClient, repository: str, digest: str, image_id: str, trust: Trust, *,
          allow_gpu_unverified: bool, max_age: float | None,
          require_reproduced: bool = False) -> str | None:
    """Why `repository@digest` (which holds `image_id`) has no signed verdict that allows
    it through, or None when it has one: cosign verifies the signatures against `trust`,
    then the newest verified statement about this digest must pass."""
    reference = f"{client.endpoint.registry}/{repository}@{digest}"
    try:
        statements = cosign.verified_statements(client.endpoint, reference, cosign.VERDICT_TYPE,
                                                trust)
    except cosign.SignatureRefused as refused:
        hint = ""
        if refused.reason.startswith("unsigned") and client.manifest(
                repository, artifact_tag(digest, "verdict")) is not None:
            hint = (" (an unsigned verdict is attached: attest it again with --signing-key, "
                    "so that it is signed)")
        return f"{reference}: {refused.reason}{hint}"
    return refusal(statements, reference, digest, image_id,
                   allow_gpu_unverified=allow_gpu_unverified, max_age=max_age,
                   require_reproduced=require_reproduced)


def refusal(statements: list[cosign.Statement], reference: str, digest: str, image_id: str, *,
            allow_gpu_unverified: bool, max_age: float | None,
            now: float | None = None, require_reproduced: bool = False) -> str | None:
    """Why the newest signed verdict about exactly `digest` (which holds `image_id`) does
    not allow promotion, or None when it does (`require_reproduced`: only when it records
    that `imgkit reproduce` got this image again)."""
    newest = newest_about(statements, reference, digest)
    if isinstance(newest, str):
        return newest
    if newest.image_id != image_id:
        return (f"{reference}: the signed verdict judged image {newest.image_id[:19]}, not "
                f"this one ({image_id[:19]}): a verdict replayed from another image")
    ticket = tickets.ticket_of(newest, image_id)
    why = tickets.refusal(reference, image_id, ticket, allow_gpu_unverified=allow_gpu_unverified)
    if why is not None:
        return why
    age = (now if now is not None else time.time()) - newest.recorded_at
    if max_age is not None and age > max_age:
        return (f"{reference}: its signed verdict is too old ({span(age)} old, "
                f"--max-age {span(max_age)}): verify it again")
    return unreproduced(reference, newest) if require_reproduced else None


def newest_about(statements: list[cosign.Statement], reference: str,
                 digest: str) -> VerdictPredicate | str:
    """The newest signed verdict about exactly `digest`, or why there is none to read."""
    about = [s for s in statements if digest in s.subject_digests]
    if not about:
        others = sorted({d for s in statements for d in s.subject_digests})
        return (f"{reference}: the signed verdict attached to it is about another image "
                f"({', '.join(d[:19] for d in others) or 'no subject'}), not {digest[:19]}: "
                "an attestation moved from another digest")
    found: list[VerdictPredicate] = []
    for statement in about:
        parsed = attestation.parse(statement.predicate)
        if isinstance(parsed, str):
            return f"{reference}: its signed verdict is not an imgkit verdict v1 ({parsed})"
        found.append(parsed)
    return max(found, key=lambda p: p.recorded_at)


def unreproduced(reference: str, record: VerdictRecord | None) -> str | None:
    """Why a verdict does not say its image was reproduced (--require-reproduced), or None."""
    if record is not None and any(c.name == reproduction.CHECK and c.verdict == "pass"
                                  for c in record.checks):
        return None
    return (f"{reference}: its verdict does not record that the image was reproduced, and "
            "--require-reproduced asks for it: run `imgkit reproduce TAG` where the image "
            "is, then verify (or attest) it again so that the verdict records it")


def span(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"
