# ruff: noqa: E501 (cosign's own lines, kept verbatim)
"""cosign's failures as a person should read them: the party at fault named (Sigstore, the
registry, the key), what to do next, and the message whole, never cut mid-word. The texts
are what cosign 2.5 printed on this machine, where Sigstore cannot be reached."""
from __future__ import annotations

from imgkit.errors import EXIT_HOST, RegistryAuthError, RegistryUnreachable, SigstoreError, UsageError
from imgkit.registry.cosign_said import blame, essence

REF = "127.0.0.1:5999/tiny/app@sha256:ad4d1d33c694bf9d35299c43bf9d2d641d748c866b13f2286392a662aa47dd85"
KEYLESS_SIGN = f"""Retrieving signed certificate...
Non-interactive mode detected, using device flow.
Error: signing {REF}: getting signer: getting key from Fulcio: retrieving cert: Get "https://oauth2.sigstore.dev/auth/.well-known/openid-configuration": dial tcp: lookup oauth2.sigstore.dev on 10.255.255.53:53: no such host
error during command execution: signing {REF}: getting signer: getting key from Fulcio: retrieving cert: Get "https://oauth2.sigstore.dev/auth/.well-known/openid-configuration": dial tcp: lookup oauth2.sigstore.dev on 10.255.255.53:53: no such host
"""
TLOG_UPLOAD = f"""Error: signing {REF}: Post "https://rekor.sigstore.dev/api/v1/log/entries": POST https://rekor.sigstore.dev/api/v1/log/entries giving up after 4 attempt(s): Post "https://rekor.sigstore.dev/api/v1/log/entries": dial tcp: lookup rekor.sigstore.dev on 10.255.255.53:53: no such host
error during command execution: signing {REF}: Post "https://rekor.sigstore.dev/api/v1/log/entries": dial tcp: lookup rekor.sigstore.dev on 10.255.255.53:53: no such host
"""
KEYLESS_VERIFY = """Error: getting ctlog public keys: updating local metadata and targets: error updating to TUF remote mirror: tuf: failed to download 13.root.json: Get "https://tuf-repo-cdn.sigstore.dev/13.root.json": dial tcp: lookup tuf-repo-cdn.sigstore.dev on 10.255.255.53:53: no such host
error during command execution: getting ctlog public keys: updating local metadata and targets
"""


def test_keyless_signing_where_sigstore_cannot_be_reached_blames_sigstore_not_the_registry() -> None:
    error = blame(KEYLESS_SIGN, verb="attest", registry="127.0.0.1:5999", keyless=True)
    assert isinstance(error, SigstoreError) and error.exit_code == EXIT_HOST
    assert error.message.startswith("Sigstore: cosign attest could not reach Sigstore's OIDC sign-in")
    assert "the name does not resolve" in error.message and "127.0.0.1:5999" not in error.message
    assert "--signing-key" in error.hint and "--trusted-key" in error.hint


def test_a_key_signature_whose_tlog_upload_fails_says_no_tlog_is_needed() -> None:
    error = blame(TLOG_UPLOAD, verb="attest", registry="127.0.0.1:5999", keyless=False)
    assert isinstance(error, SigstoreError) and "Rekor" in error.message
    assert "--no-tlog" in error.hint


def test_keyless_verification_names_the_trust_root() -> None:
    error = blame(KEYLESS_VERIFY, verb="verify-attestation", registry="r.example", keyless=True)
    assert isinstance(error, SigstoreError) and "trust root (TUF)" in error.message
    assert "tuf-repo-cdn.sigstore.dev" in error.hint


def test_the_registry_and_the_key_are_still_blamed_for_their_own_faults() -> None:
    refused = blame("Error: GET http://r/v2/: unauthorized: authentication required",
                      verb="attest", registry="r.example", keyless=False)
    assert isinstance(refused, RegistryAuthError)
    gone = blame("Error: Get \"http://127.0.0.1:1/v2/\": dial tcp 127.0.0.1:1: connect: "
                   "connection refused", verb="attest", registry="127.0.0.1:1", keyless=False)
    assert isinstance(gone, RegistryUnreachable) and gone.message.startswith("127.0.0.1:1:")
    key = blame("Error: reading key: decrypt: encrypted: decryption failed", verb="attest",
                  registry="r.example", keyless=False)
    assert isinstance(key, UsageError) and "COSIGN_PASSWORD" in key.hint


def test_the_message_is_said_once_and_never_cut_mid_word() -> None:
    said = essence(KEYLESS_SIGN)
    assert said.count("no such host") == 1 and not said.startswith("Error")
    short = essence(KEYLESS_SIGN, limit=80)
    assert short.startswith("…") and short.endswith("no such host")
    assert short[1:].split()[0] in said.split()            # a whole word, not 'tore.dev'


def test_a_signature_that_does_not_verify_is_no_outside_partys_fault() -> None:
    said = "Error: no matching attestations: \nerror during command execution: no matching attestations:"
    assert blame(said, verb="verify-attestation", registry="r.example", keyless=False) is None
