"""What a failed cosign run said, read for a person: the one error line that matters
(cosign prints it twice, and a cut must not fall mid-word), and which outside party failed:
a Sigstore service, the registry, the key, or the signature itself."""
from __future__ import annotations

import re

from ..errors import (
    ImgkitError,
    RegistryAuthError,
    RegistryUnreachable,
    SigstoreError,
    UsageError,
)
from .client import unreachable

KEPT = 400
AUTH_WORDS = ("unauthorized", "authentication required", "denied", "status 401", "status 403")
# What each Sigstore service is called where cosign names it, most specific first
SIGSTORE_PARTS = (
    (re.compile(r"oauth2\.sigstore\.dev|ID token|openid-configuration|device flow", re.I),
     "Sigstore's OIDC sign-in (keyless signing needs an identity token)"),
    (re.compile(r"fulcio", re.I), "Fulcio, Sigstore's certificate authority (keyless signing)"),
    (re.compile(r"\btuf\b|tuf-repo|ctlog|trusted root|trust root", re.I),
     "Sigstore's trust root (TUF), which keyless verification needs"),
    (re.compile(r"rekor|\btlog|log/entries", re.I), "Rekor, Sigstore's transparency log"),
    (re.compile(r"sigstore\.dev", re.I), "Sigstore's public services"),
)


def essence(stderr: str, limit: int = KEPT) -> str:
    """cosign's error, once: its last `Error:` line (else every line but warnings), cut at
    a word boundary to the last `limit` characters when longer."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line.removeprefix("Error:").strip() for line in lines if line.startswith("Error:")]
    said = errors[-1] if errors else " ".join(
        line for line in lines if not line.startswith(("WARNING", "error during command execution")))
    said = " ".join(said.split())
    if len(said) <= limit:
        return said
    tail = said[-limit:]
    return "…" + tail[tail.find(" ") + 1:] if " " in tail else "…" + tail


def sigstore_part(text: str) -> str | None:
    return next((name for pattern, name in SIGSTORE_PARTS if pattern.search(text)), None)


def blame(stderr: str, *, verb: str, registry: str, keyless: bool) -> ImgkitError | None:
    """The error a failed `cosign VERB` (attest, verify-attestation) is when a party other
    than the signature is at fault (the key, Sigstore, the registry), saying what to do
    about it; None when none is (the signature itself, or cosign's own failure)."""
    said = essence(stderr)
    lowered = said.lower()
    if "reading key" in lowered or "password" in lowered:
        return UsageError(f"cosign could not read the signing key: {said}",
                          hint="set COSIGN_PASSWORD in the environment for an encrypted key file "
                               "(never on the command line)")
    part = sigstore_part(said)
    if part is not None:
        reason = unreachable(said)
        return SigstoreError(
            f"Sigstore: cosign {verb} could not reach {part}: {reason}" if reason else
            f"Sigstore: cosign {verb} failed at {part}: {said}", hint=sigstore_hint(verb, keyless))
    if any(word in lowered for word in AUTH_WORDS):
        return RegistryAuthError(registry, f"cosign {verb} was refused: {said}")
    reason = unreachable(said)
    if reason is not None:
        return RegistryUnreachable(registry, f"{reason} (cosign {verb}: {said})")
    return None


def sigstore_hint(verb: str, keyless: bool) -> str:
    if verb == "attest" and keyless:
        return ("keyless signing needs Sigstore's public services and the CI's OIDC token; where "
                "they cannot be reached, sign with a key: --signing-key cosign.key (from `cosign "
                "generate-key-pair`), and trust it with --trusted-key cosign.pub (`imgkit ci "
                "--signing-key env://COSIGN_PRIVATE_KEY --trusted-key cosign.pub` for a pipeline)")
    if verb == "attest":
        return ("a key's signature needs no transparency log: add --no-tlog, or let this host "
                "reach rekor.sigstore.dev")
    if keyless:
        return ("keyless verdicts verify against Sigstore's trust root, fetched from "
                "tuf-repo-cdn.sigstore.dev: let this host reach it, or sign and trust with a key "
                "(--signing-key / --trusted-key)")
    return ("a key's signature can be checked without the transparency log: add --no-tlog, or "
            "let this host reach rekor.sigstore.dev")
