"""Admission policies demanding imgkit's signed verdict, as text: one rule written three
ways. A CUE file that `cosign verify-attestation --policy` runs (how the tests run the rule
for real), a Kyverno ClusterPolicy (verifyImages with an attestation condition) and a
sigstore policy-controller ClusterImagePolicy (the same CUE as its attestation policy).
Where the project gates on known vulnerabilities, each also demands the signed scan that
publish attaches (cosign's vuln attestation) and that it passed."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..registry.cosign import VERDICT_TYPE, VULN_TYPE
from ..yamlload import Document, Json

NAME = "imgkit-verified-images"
VULN_PREDICATE = "https://cosign.sigstore.dev/attestation/vuln/v1"   # cosign's VULN_TYPE, in full


@dataclass(frozen=True)
class PolicySettings:
    registries: tuple[str, ...]      # HOST[/NAMESPACE] prefixes whose images the rule covers
    public_key: str = ""             # PEM text of the cosign public key, or "" for keyless
    identity: str = ""               # keyless: the certificate's subject
    issuer: str = ""                 # keyless: the OIDC issuer
    require_gpu: bool = True         # the verdict must have run the GPU checks
    tlog: bool = False               # key-based: also demand a Rekor entry
    require_scan: bool = False       # a signed, passing scan too (the project names a database)


def cue(settings: PolicySettings) -> str:
    """The rule as CUE, unified with the in-toto statement cosign verified."""
    lines = ["// imgkit's verdict must say the image passed" +
             (" with its GPU checks run." if settings.require_gpu else "."),
             f'predicateType: "{VERDICT_TYPE}"',
             "predicate: {",
             "\tpredicate_version: 1",
             "\tpassed:            true",
             "\thost_failure:      false"]
    if settings.require_gpu:
        lines.append("\tgpu_checked:       true")
    lines.append("}")
    return "\n".join(lines) + "\n"


def scan_cue() -> str:
    """The scan's rule as CUE: the scan imgkit signed says it passed (its threshold, waivers
    and database age were judged when it was made; publish attaches only a passing one)."""
    return "\n".join(["// imgkit's signed scan must say the image passed its vulnerability gate.",
                      f'predicateType: "{VULN_PREDICATE}"',
                      "predicate: scanner: result: failed: false"]) + "\n"


def kyverno(settings: PolicySettings) -> Document:
    conditions: list[Json] = [{"key": "{{ passed }}", "operator": "Equals", "value": True},
                  {"key": "{{ host_failure }}", "operator": "Equals", "value": False}]
    if settings.require_gpu:
        conditions.append({"key": "{{ gpu_checked }}", "operator": "Equals", "value": True})
    attestors = [{"entries": [_kyverno_entry(settings)]}]
    attestations: list[Json] = [{"type": VERDICT_TYPE, "attestors": attestors,
                                 "conditions": [{"all": conditions}]}]
    if settings.require_scan:
        attestations.append({"type": VULN_PREDICATE, "attestors": attestors, "conditions": [
            {"all": [{"key": "{{ scanner.result.failed }}", "operator": "Equals",
                      "value": False}]}]})
    return {
        "apiVersion": "kyverno.io/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": NAME, "annotations": {
            "policies.kyverno.io/description": "Pods may run only images with a signed, passing "
                                               "imgkit verdict attached to their digest" +
                                               (" and a signed, passing scan." if
                                                settings.require_scan else ".")}},
        "spec": {
            "validationFailureAction": "Enforce",
            "webhookTimeoutSeconds": 30,
            "rules": [{
                "name": "imgkit-verdict",
                "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "verifyImages": [{
                    "imageReferences": [f"{r}/*" for r in settings.registries],
                    "mutateDigest": True,
                    "verifyDigest": True,
                    "attestations": attestations,
                }],
            }],
        },
    }


def _kyverno_entry(settings: PolicySettings) -> dict[str, Any]:
    """The signer Kyverno trusts: the key (Rekor and the CT log ignored unless --tlog), or
    the keyless identity."""
    if settings.public_key:
        keys: dict[str, Any] = {"publicKeys": settings.public_key}
        if not settings.tlog:
            keys["rekor"] = {"ignoreTlog": True}
            keys["ctlog"] = {"ignoreSCT": True}
        return {"keys": keys}
    return {"keyless": {"subject": settings.identity, "issuer": settings.issuer}}


def cluster_image_policy(settings: PolicySettings) -> Document:
    authority: dict[str, Any] = {"name": "imgkit-signer"}
    if settings.public_key:
        authority["key"] = {"data": settings.public_key, "hashAlgorithm": "sha256"}
    else:
        authority["keyless"] = {"url": "https://fulcio.sigstore.dev", "identities": [
            {"issuer": settings.issuer, "subject": settings.identity}]}
    authority["attestations"] = [{"name": "imgkit-verdict", "predicateType": VERDICT_TYPE,
                                  "policy": {"type": "cue", "data": cue(settings)}}]
    if settings.require_scan:
        authority["attestations"].append({"name": "imgkit-scan", "predicateType": VULN_TYPE,
                                          "policy": {"type": "cue", "data": scan_cue()}})
    return {
        "apiVersion": "policy.sigstore.dev/v1beta1",
        "kind": "ClusterImagePolicy",
        "metadata": {"name": NAME},
        "spec": {"images": [{"glob": f"{r}/**"} for r in settings.registries],
                 "authorities": [authority]},
    }
