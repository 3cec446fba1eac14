"""Admission policies demanding imgkit's signed verdict, as text: one rule written three
ways. A CUE file that `cosign verify-attestation --policy` runs (how the tests run the rule
for real), a Kyverno ClusterPolicy (verifyImages with an attestation condition) and a
sigstore policy-controller ClusterImagePolicy (the same CUE as its attestation policy)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..registry.cosign import VERDICT_TYPE
from ..yamlload import Document, Json

NAME = "imgkit-verified-images"


@dataclass(frozen=True)
class PolicySettings:
    registries: tuple[str, ...]      # HOST[/NAMESPACE] prefixes whose images the rule covers
    public_key: str = ""             # PEM text of the cosign public key, or "" for keyless
    identity: str = ""               # keyless: the certificate's subject
    issuer: str = ""                 # keyless: the OIDC issuer
    require_gpu: bool = True         # the verdict must have run the GPU checks
    tlog: bool = False               # key-based: also demand a Rekor entry


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


def kyverno(settings: PolicySettings) -> Document:
    conditions: list[Json] = [{"key": "{{ passed }}", "operator": "Equals", "value": True},
                  {"key": "{{ host_failure }}", "operator": "Equals", "value": False}]
    if settings.require_gpu:
        conditions.append({"key": "{{ gpu_checked }}", "operator": "Equals", "value": True})
    if settings.public_key:
        keys: dict[str, Any] = {"publicKeys": settings.public_key}
        if not settings.tlog:
            keys["rekor"] = {"ignoreTlog": True}
            keys["ctlog"] = {"ignoreSCT": True}
        entry: dict[str, Any] = {"keys": keys}
    else:
        entry = {"keyless": {"subject": settings.identity, "issuer": settings.issuer}}
    return {
        "apiVersion": "kyverno.io/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": NAME, "annotations": {
            "policies.kyverno.io/description": "Pods may run only images with a signed, passing "
                                               "imgkit verdict attached to their digest."}},
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
                    "attestations": [{
                        "type": VERDICT_TYPE,
                        "attestors": [{"entries": [entry]}],
                        "conditions": [{"all": conditions}],
                    }],
                }],
            }],
        },
    }


def cluster_image_policy(settings: PolicySettings) -> Document:
    authority: dict[str, Any] = {"name": "imgkit-signer"}
    if settings.public_key:
        authority["key"] = {"data": settings.public_key, "hashAlgorithm": "sha256"}
    else:
        authority["keyless"] = {"url": "https://fulcio.sigstore.dev", "identities": [
            {"issuer": settings.issuer, "subject": settings.identity}]}
    authority["attestations"] = [{"name": "imgkit-verdict", "predicateType": VERDICT_TYPE,
                                  "policy": {"type": "cue", "data": cue(settings)}}]
    return {
        "apiVersion": "policy.sigstore.dev/v1beta1",
        "kind": "ClusterImagePolicy",
        "metadata": {"name": NAME},
        "spec": {"images": [{"glob": f"{r}/**"} for r in settings.registries],
                 "authorities": [authority]},
    }
