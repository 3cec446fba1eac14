"""What the signed scan attached to a candidate (cosign's `vuln` attestation, written by a
signing publish) must say before promote copies it to production, where the project gates
on known vulnerabilities: a scan of this very image, passed, against a database that was
fresh, and recent itself (advisories arrive daily). The signatures are cosign's
(registry/cosign.py); `refusal` is pure logic."""
from __future__ import annotations

import datetime as dt
import time

from pydantic import BaseModel, ConfigDict, ValidationError

from ..options import Trust
from ..registry import cosign
from ..registry.client import RegistryClient
from .record import STALE_DAYS


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Finding(_Loose):
    id: str = ""
    package: str = ""
    installed: str = ""
    verdict: str = ""


class _Result(_Loose):
    """`imgkit scan --json`'s document: what publish attached as the scanner's result."""
    image_id: str
    failed: bool
    fail_on: str = ""
    database: dict[str, object] = {}
    findings: list[_Finding] = []


class _Scanner(_Loose):
    version: str = ""
    result: _Result


class _Metadata(_Loose):
    scanFinishedOn: dt.datetime


class VulnPredicate(_Loose):
    scanner: _Scanner
    metadata: _Metadata


def check(client: RegistryClient, repository: str, digest: str, image_id: str,
          trust: Trust) -> str | None:
    """Why `repository@digest` (which holds `image_id`) has no signed scan that lets it
    through, or None when it has one."""
    reference = f"{client.endpoint.registry}/{repository}@{digest}"
    try:
        statements = cosign.verified_statements(client.endpoint, reference, cosign.VULN_TYPE,
                                                trust)
    except cosign.SignatureRefused as refused:
        return (f"{reference}: no signed scan ({refused.reason}), and this project gates on "
                "known vulnerabilities (vulnerability_db): scan it (`imgkit scan`) and publish "
                "it with --signing-key, which attaches the scan")
    return refusal(statements, reference, digest, image_id)


def signed_result(client: RegistryClient, repository: str, digest: str,
                  trust: Trust) -> tuple[object, float] | None:
    """The newest scan about exactly `repository@digest` whose signature verifies against
    `trust`: its result (`imgkit scan --json`'s document) and when it finished; None when
    none does (unsigned, another signer, not one imgkit attached)."""
    reference = f"{client.endpoint.registry}/{repository}@{digest}"
    try:
        statements = cosign.verified_statements(client.endpoint, reference, cosign.VULN_TYPE,
                                                trust)
    except cosign.SignatureRefused:
        return None
    found = []
    for statement in statements:
        if digest not in statement.subject_digests:
            continue
        try:
            predicate = VulnPredicate.model_validate(statement.predicate)
        except ValidationError:      # not one imgkit attached
            continue
        result = statement.predicate["scanner"]["result"]  # type: ignore[index]  # validated
        found.append((result, predicate.metadata.scanFinishedOn.timestamp()))
    return max(found, key=lambda item: item[1]) if found else None


def refusal(statements: list[cosign.Statement], reference: str, digest: str, image_id: str,
            now: float | None = None) -> str | None:
    """Why the newest signed scan about exactly `digest` does not allow promotion, or None."""
    found: list[VulnPredicate] = []
    for statement in statements:
        if digest not in statement.subject_digests:
            continue
        try:
            found.append(VulnPredicate.model_validate(statement.predicate))
        except ValidationError:
            return f"{reference}: its signed scan is not one imgkit attached (no imgkit scan result)"
    if not found:
        return (f"{reference}: the signed scans attached to it are about another image: an "
                "attestation moved from another digest")
    newest = max(found, key=lambda p: p.metadata.scanFinishedOn)
    result = newest.scanner.result
    if result.image_id != image_id:
        return (f"{reference}: its signed scan is of image {result.image_id[:19]}, not this one "
                f"({image_id[:19]}): a scan replayed from another image")
    if result.failed:
        failing = [f"{f.id} {f.package} {f.installed}" for f in result.findings if f.verdict == "fail"]
        return (f"{reference}: its signed scan failed (fail_on: {result.fail_on}): "
                + ("; ".join(failing[:5]) or "see the scan"))
    if result.database.get("stale"):
        return f"{reference}: it was scanned against a stale advisory database: scan it again"
    age = (now if now is not None else time.time()) - newest.metadata.scanFinishedOn.timestamp()
    if age > STALE_DAYS * 86400:
        return (f"{reference}: its signed scan is {age / 86400:.0f} days old, and advisories "
                f"arrive daily (older than {STALE_DAYS} days is stale): scan it again and "
                "publish it")
    return None
