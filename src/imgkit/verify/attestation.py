"""The signed form of a verdict: the predicate of an in-toto statement of type
`https://imgkit.dev/attestations/verdict/v1` (schema: docs/signing.md, whose JSON
Schema a test re-makes from this model). Made here, signed by cosign (registry/cosign.py),
judged when promoting (verify/signed.py)."""
from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..shipped import version

PREDICATE_VERSION: Literal[1] = 1


class CheckRecord(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    verdict: Literal["pass", "fail", "warn", "skip", "info"]
    required: bool = True


class VerdictRecord(BaseModel):
    """A recorded verdict: the ticket `imgkit verify` keeps for the image id it judged (in
    imgkit's cache), the document attached next to the digest it judged, and, with two more
    fields, the predicate signed about it. Read back from a file or a registry, it is
    untrusted input until it validates here."""
    model_config = ConfigDict(extra="allow")
    format: int = Field(description="the verdict document's format (1)")
    image_id: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    image: str = Field(description="the reference verify was given")
    passed: bool
    gpu_checked: bool = Field(description="false: verified with --gpus none")
    failed: list[str] = Field(description="the required checks that failed")
    host_failure: bool = Field(description="the host, not the image, kept a check from running")
    recorded_at: float = Field(description="when the verdict was made, seconds since the epoch")
    overrides: list[str] = Field(default_factory=list,
                                 description="--expect KEY=VALUE the run was judged by")
    checks: list[CheckRecord] = Field(default_factory=list)
    libraries: Optional[dict[str, list[list[str]]]] = None
    judged_by: Optional[str] = Field(
        None, description="what besides the image decided the verdict (imgkit's version, "
                          "--expect, --min, the declared checks), as one sha256 digest: "
                          "`attest --max-age` keeps only a verdict judged as it would judge")


class VerdictPredicate(VerdictRecord):
    """What `imgkit verify` concluded about one image, as signed. `image_id` is the image
    config digest the probe ran in (a registry manifest's config.digest); the statement's
    subject is the manifest digest."""
    predicate_version: Literal[1] = Field(description="this schema's version")
    imgkit_version: str = Field(description="the imgkit that judged the image")


def predicate(record: VerdictRecord) -> bytes:
    """The predicate signed for a recorded verdict (tickets.make_document's)."""
    signed = VerdictPredicate.model_validate(
        {**record.model_dump(), "predicate_version": PREDICATE_VERSION, "imgkit_version": version()})
    return signed.model_dump_json(exclude_none=True).encode()


def record_of(raw: object) -> VerdictRecord | None:
    """A verdict document read back (a ticket file, a registry's verdict), or None when it
    is not one."""
    try:
        return VerdictRecord.model_validate(raw)
    except ValidationError:
        return None


def parse(raw: Any) -> VerdictPredicate | str:
    """A signed statement's predicate as a verdict, or what is wrong with it (where: why)."""
    try:
        return VerdictPredicate.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc']) or 'predicate'}: {first['msg']}"
