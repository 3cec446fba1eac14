"""Verification as Kubernetes Jobs on a GPU fleet: one Job per image runs the probe on a GPU
node (its log is the probe's JSON report, judged back home by `imgkit judge`),
the probe shipped in an immutable ConfigMap. Locked down: non-root, read-only root
filesystem, no service-account token, every capability dropped, a deadline, cleaned up
after. Pure: settings in, manifests out.
"""
from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from .. import yamlload
from ..errors import UsageError
from ..render.bake import slug
from ..yamlload import Document

PROBE_DIR = "/opt/imgkit-probe"
# Runs the probe from the ConfigMap (not whatever copy the image holds); the Job's log holds
# the report between its marker lines (probe/channel.py), whatever else the image prints.
BOOT = (f"import runpy, sys; sys.path.insert(0, '{PROBE_DIR}/probe.zip'); "
        "sys.argv = ['imgkit-check'] + sys.argv[1:]; "
        "runpy.run_module('imgkit_probe', run_name='__main__', alter_sys=True)")
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$")
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
LABELS = {"app.kubernetes.io/name": "imgkit", "app.kubernetes.io/component": "verify"}


@dataclass(frozen=True)
class JobSettings:
    gpus: int = 1                                 # nvidia.com/gpu per Job; 0: a probe without GPU work
    runtime_class: str = ""                       # e.g. nvidia, where the cluster needs it
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[tuple[str, str, str], ...] = ()   # (key, value, effect)
    shm_size: str = "8Gi"                         # /dev/shm, a memory-backed emptyDir
    memory: str = "16Gi"
    deadline: int = 1800                          # activeDeadlineSeconds
    ttl: int = 86400                              # ttlSecondsAfterFinished
    gemm_size: int = 8192
    namespace: str = ""                           # Kubernetes namespace ("" = the current one)


KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def parse_selector(text: str) -> tuple[str, str]:
    """--node-selector KEY=VALUE."""
    key, sep, value = text.partition("=")
    if not sep or not KEY.match(key) or not LABEL_VALUE.match(value):
        raise UsageError(f"--node-selector {text!r}: expected KEY=VALUE, a Kubernetes label",
                         hint="e.g. nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3")
    return key, value


def parse_toleration(text: str) -> tuple[str, str, str]:
    """--toleration KEY[=VALUE]:EFFECT."""
    pair, sep, effect = text.rpartition(":")
    key, _, value = pair.partition("=")
    if not sep or effect not in EFFECTS or not KEY.match(key) or not LABEL_VALUE.match(value):
        raise UsageError(f"--toleration {text!r}: expected KEY[=VALUE]:EFFECT",
                         hint=f"effects: {', '.join(EFFECTS)}; e.g. nvidia.com/gpu:NoSchedule")
    return key, value, effect


def check_quantity(flag: str, text: str) -> str:
    if not QUANTITY.match(text):
        raise UsageError(f"{flag} {text!r}: expected a Kubernetes quantity such as 8Gi")
    return text


def job_name(tag: str) -> str:
    """A DNS-1123 name of at most 63 characters, unique per image (a hash when cut)."""
    name = f"imgkit-verify-{slug(tag)}"
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(tag.encode()).hexdigest()[:8]
    return f"{name[:54].rstrip('-')}-{digest}"


def configmap_name(probe: bytes) -> str:
    return f"imgkit-probe-{hashlib.sha256(probe).hexdigest()[:10]}"


def _metadata(name: str, settings: JobSettings, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(LABELS)}
    if settings.namespace:
        meta["namespace"] = settings.namespace
    return {**meta, **extra}


def probe_configmap(probe: bytes, settings: JobSettings) -> Document:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": _metadata(configmap_name(probe), settings),
            "immutable": True,
            "binaryData": {"probe.zip": base64.b64encode(probe).decode()}}


def _pod_spec(image: str, probe: bytes, settings: JobSettings, platform: str) -> dict[str, Any]:
    args = ["--no-gpu"] if settings.gpus == 0 else ["--gemm-size", str(settings.gemm_size)]
    limits: dict[str, str] = {"memory": settings.memory}
    if settings.gpus:
        limits["nvidia.com/gpu"] = str(settings.gpus)
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{
            "name": "probe",
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "command": ["python3", "-c", BOOT, "--framed", *args],
            "env": [{"name": "HOME", "value": "/tmp"}],
            "resources": {"limits": limits, "requests": {"cpu": "1", "memory": "2Gi"}},
            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                "privileged": False, "capabilities": {"drop": ["ALL"]}},
            "volumeMounts": [{"name": "probe", "mountPath": PROBE_DIR, "readOnly": True},
                             {"name": "dshm", "mountPath": "/dev/shm"},
                             {"name": "tmp", "mountPath": "/tmp"}],
        }],
        "volumes": [{"name": "probe", "configMap": {"name": configmap_name(probe)}},
                    {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": settings.shm_size}},
                    {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}}],
    }
    if settings.runtime_class:
        spec["runtimeClassName"] = settings.runtime_class
    # the platform whose image the probe must run (a multi-arch index would otherwise give
    # a Grace node its arm64 image, and an amd64-only image cannot run there at all)
    spec["nodeSelector"] = {"kubernetes.io/arch": platform.split("/", 1)[1],
                            **dict(settings.node_selector)}
    if settings.tolerations:
        spec["tolerations"] = [
            {"key": k, "operator": "Equal", "value": v, "effect": e} if v else
            {"key": k, "operator": "Exists", "effect": e} for k, v, e in settings.tolerations]
    return spec


def verify_job(tag: str, image: str, probe: bytes, settings: JobSettings,
               platform: str = "linux/amd64", per_platform: bool = False) -> Document:
    """The Job that runs the probe in `image` (tag's image, by digest where known) on a
    node of `platform`; `per_platform`: the image has several, one Job each (named apart)."""
    name = job_name(f"{tag}-{platform.split('/', 1)[1]}" if per_platform else tag)
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": _metadata(name, settings, annotations={"imgkit.dev/image": tag,
                                                           "imgkit.dev/reference": image,
                                                           "imgkit.dev/platform": platform}),
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": settings.deadline,
            "ttlSecondsAfterFinished": settings.ttl,
            "template": {"metadata": {"labels": dict(LABELS)},
                         "spec": _pod_spec(image, probe, settings, platform)},
        },
    }


def dump(document: Document) -> str:
    return yamlload.dump(document)
