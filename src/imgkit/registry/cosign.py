"""Signed attestations through cosign itself (no signature format or crypto of imgkit's own).

`attest` signs a predicate as an in-toto statement about `HOST/REPO@sha256:...` and attaches
it the way cosign always does (`sha256-<hex>.att`); `verified_statements` asks cosign to
verify what is attached against a public key (or a keyless identity) and returns the
statements whose signatures verified. What the statements must say is decided elsewhere
(publish/signed.py).

Secrets stay out of argv and logs: registry credentials go to cosign in a temporary Docker
config (mode 0600, removed afterwards), a key's passphrase only through the caller's own
COSIGN_PASSWORD, and a KMS key by its URI.
"""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import HostError, RegistryError, UsageError
from ..options import Signer, Trust
from . import cosign_said
from .client import CERTS_D, Endpoint

VERDICT_TYPE = "https://imgkit.dev/attestations/verdict/v1"
SBOM_TYPE = "cyclonedx"                     # cosign's name for https://cyclonedx.org/bom
PROVENANCE_TYPE = "slsaprovenance1"         # cosign's name for https://slsa.dev/provenance/v1
VULN_TYPE = "vuln"                          # cosign's name for https://cosign.sigstore.dev/attestation/vuln/v1
KMS_SCHEMES = ("env://", "awskms://", "gcpkms://", "azurekms://", "hashivault://", "k8s://",
               "pkcs11:")
TIMEOUT = 300


@dataclass(frozen=True)
class Statement:
    """An in-toto statement whose signature cosign verified: the digests it is about, and
    its predicate as JSON (its schema is the reader's: verify/attestation.py for verdicts)."""
    subject_digests: tuple[str, ...]
    predicate: object


def statement_of(document: object) -> Statement:
    """The parts of a decoded in-toto statement a reader relies on; a subject without a
    sha256 digest names none (it can then be about no image)."""
    if not isinstance(document, dict):
        return Statement((), None)
    subjects = document.get("subject")
    digests = tuple(f"sha256:{s['digest']['sha256']}" for s in (
        subjects if isinstance(subjects, list) else [])
        if isinstance(s, dict) and isinstance(s.get("digest"), dict) and "sha256" in s["digest"])
    return Statement(digests, document.get("predicate"))


class SignatureRefused(Exception):
    """cosign found nothing it could verify; `reason` says which way (for the refusal)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def check_key(option: str, key: str) -> str:
    """A key reference cosign can take: an existing file, env://VAR or a KMS URI (exit 2)."""
    if key.startswith(KMS_SCHEMES):
        return key
    if not Path(key).is_file():
        raise UsageError(f"{option} {key!r}: no such key file",
                         hint="a cosign key file (cosign generate-key-pair), env://VAR, or a KMS "
                              "URI such as awskms://... or gcpkms://...")
    return key


def attest(endpoint: Endpoint, reference: str, predicate: bytes, predicate_type: str,
           signer: Signer) -> None:
    """Sign `predicate` as an in-toto statement about `reference` (HOST/REPO@sha256:...)
    and attach it. Several attestations of one type may accumulate: readers take the newest
    that verifies."""
    with tempfile.TemporaryDirectory(prefix="imgkit-cosign-") as tmp:
        path = Path(tmp, "predicate.json")
        path.write_bytes(predicate)
        command = ["cosign", "attest", "--yes", "--type", predicate_type, "--predicate", str(path),
                   f"--tlog-upload={'true' if signer.uploads else 'false'}"]
        if signer.key:
            command += ["--key", signer.key]     # else keyless: cosign takes the CI's OIDC token
        _run(command + _registry_flags(endpoint) + [reference], endpoint, Path(tmp))


def verified_statements(endpoint: Endpoint, reference: str, predicate_type: str,
                        trust: Trust) -> list[Statement]:
    """The in-toto statements of `predicate_type` attached to `reference` whose signatures
    verify against `trust`, as cosign checked them; SignatureRefused when none does."""
    command = ["cosign", "verify-attestation", "--type", predicate_type, "--output", "json"]
    if trust.key:
        command += ["--key", trust.key]
    else:
        command += ["--certificate-identity", trust.identity or "",
                    "--certificate-oidc-issuer", trust.issuer or ""]
    if not trust.checks_tlog:
        command.append("--insecure-ignore-tlog=true")
    with tempfile.TemporaryDirectory(prefix="imgkit-cosign-") as tmp:
        stdout = _run(command + _registry_flags(endpoint) + [reference], endpoint, Path(tmp),
                      verifying=True)
    statements = []
    for line in stdout.splitlines():
        if not line.strip().startswith("{"):
            continue
        envelope = json.loads(line)
        statements.append(statement_of(json.loads(base64.b64decode(envelope.get("payload", "")))))
    return statements


def _registry_flags(endpoint: Endpoint) -> list[str]:
    flags = [] if endpoint.secure else ["--allow-http-registry"]
    ca = CERTS_D / endpoint.registry / "ca.crt"
    if endpoint.secure and ca.is_file():        # trusted the way the engine trusts it
        flags.append(f"--registry-cacert={ca}")
    return flags


def _docker_config(directory: Path, endpoint: Endpoint) -> Path:
    """A Docker config holding only this registry's credentials, for cosign to read."""
    auths = {}
    if endpoint.credentials is not None:
        user, password = endpoint.credentials
        auths[endpoint.registry] = {"auth": base64.b64encode(f"{user}:{password}".encode()).decode()}
    folder = directory / "docker"
    folder.mkdir(mode=0o700)
    fd = os.open(folder / "config.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"auths": auths}, out)
    return folder


NOT_VERIFIED = (
    (re.compile(r"no matching subject digest"),
     "the signed attestation attached to it is about another image (its subject is not this "
     "digest): an attestation moved from another digest"),
    (re.compile(r"no matching attestations: *$|no signatures found|no matching signatures: *$"),
     "unsigned: no signed attestation is attached to it"),
    (re.compile(r"none of the attestations matched the predicate type"),
     "unsigned: no signed imgkit verdict is attached to it (other attestations are)"),
    (re.compile(r"signatures do not match threshold|invalid signature|signature.*(?:invalid|mismatch)"
                r"|error verifying|failed to verify"),
     "its signature does not verify against the trusted key or identity (signed by another "
     "key, or changed after signing)"),
)


def _run(command: list[str], endpoint: Endpoint, tmp: Path, verifying: bool = False) -> str:
    if shutil.which("cosign") is None:
        raise HostError("cosign is not installed: it signs and verifies imgkit's attestations",
                        hint="run .ci/setup-host.sh (it installs Debian's cosign), or see "
                             "https://docs.sigstore.dev/cosign/system_config/installation/")
    env = dict(os.environ, DOCKER_CONFIG=str(_docker_config(tmp, endpoint)))
    try:
        done = subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise RegistryError(endpoint.registry, f"cosign {command[1]} did not finish in {TIMEOUT} s",
                            transient=True)
    if done.returncode == 0:
        return done.stdout
    error = cosign_said.blame(done.stderr, verb=command[1], registry=endpoint.registry,
                              keyless="--key" not in command)
    if error is not None:
        raise error
    said = cosign_said.essence(done.stderr)
    if verifying:
        for pattern, why in NOT_VERIFIED:
            if pattern.search(said):
                raise SignatureRefused(why)
    raise RegistryError(endpoint.registry, f"cosign {command[1]} failed: {said}")
