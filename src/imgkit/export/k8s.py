"""Verification as Kubernetes Jobs on a GPU fleet: one Job per image runs the probe on a GPU
node (its log is the probe's JSON report, judged back home by `imgkit judge`),
the probe shipped in an immutable ConfigMap. Locked down: non-root, read-only root
filesystem, no service-account token, every capability dropped, a deadline, cleaned up
after. Pure: settings in, manifests out.

The fleet check (`--fleet`): a CronJob per image whose pods, one per node on as many nodes
as asked, run the probe in the image (an init container writing the report to a shared
folder), then `imgkit judge` in imgkit's own image: the report held to the image's
registry config and to the verdict it was promoted with, pushed to a Pushgateway. A
CronJob, not a DaemonSet: a DaemonSet's pod would hold its GPU between checks.
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
REPORT_DIR = "/var/run/imgkit"
REFERENCE_DIR = "/etc/imgkit/reference"
DOCKER_CONFIG_DIR = "/etc/imgkit/docker"
# The fleet's probe: the report goes to a file the judge reads, and the init container ends
# with exit 0 whatever the probe did (a crash, a hang past IMGKIT_PROBE_TIMEOUT), so that
# the judge always runs and says what went wrong.
FLEET_BOOT = "\n".join((
    "import os, runpy, sys, threading",
    f"sys.path.insert(0, '{PROBE_DIR}/probe.zip')",
    "sys.argv = ['imgkit-check'] + sys.argv[1:]",
    # the probe writes its report to descriptor 1 (a copy it takes): make that the file
    f"os.dup2(os.open('{REPORT_DIR}/report.txt', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)",
    "stop = threading.Timer(float(os.environ['IMGKIT_PROBE_TIMEOUT']), lambda: os._exit(0))",
    "stop.daemon = True",
    "stop.start()",
    "try:",
    "    runpy.run_module('imgkit_probe', run_name='__main__', alter_sys=True)",
    "except BaseException:",
    "    pass",
    "sys.stdout.flush()",
    "os._exit(0)"))


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


@dataclass(frozen=True)
class FleetSettings:
    judge_image: str                              # imgkit's own image, which runs `imgkit judge`
    pushgateway: str                              # where each node's verdict is pushed
    schedule: str = "0 */6 * * *"                 # the CronJobs' schedule
    nodes: int = 1                                # pods per run, each on a node of its own
    margin: float = 0.1                           # how far under the reference a node may fall
    pull_secret: str = ""                         # a dockerconfigjson Secret for the registry


SCHEDULE = re.compile(r"^(@(hourly|daily|weekly|monthly|yearly|annually|midnight)|"
                      r"[0-9*/,-]+( [0-9*/,A-Za-z-]+){4})$")


def check_schedule(text: str) -> str:
    if not SCHEDULE.match(text.strip()):
        raise UsageError(f"{text!r} is not a cron schedule",
                         hint="five fields, e.g. \"0 */6 * * *\" (every 6 hours), or @daily")
    return text.strip()


KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def parse_selector(text: str) -> tuple[str, str]:
    """A node selector's KEY=VALUE."""
    key, sep, value = text.partition("=")
    if not sep or not KEY.match(key) or not LABEL_VALUE.match(value):
        raise UsageError(f"{text!r}: expected KEY=VALUE, a Kubernetes label",
                         hint="e.g. nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3")
    return key, value


def parse_toleration(text: str) -> tuple[str, str, str]:
    """A toleration, KEY[=VALUE]:EFFECT."""
    pair, sep, effect = text.rpartition(":")
    key, _, value = pair.partition("=")
    if not sep or effect not in EFFECTS or not KEY.match(key) or not LABEL_VALUE.match(value):
        raise UsageError(f"{text!r}: expected KEY[=VALUE]:EFFECT",
                         hint=f"effects: {', '.join(EFFECTS)}; e.g. nvidia.com/gpu:NoSchedule")
    return key, value, effect


def check_quantity(text: str) -> str:
    if not QUANTITY.match(text):
        raise UsageError(f"{text!r}: expected a Kubernetes quantity such as 8Gi")
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


def named_after(tag: str, platform: str, per_platform: bool) -> str:
    """What a Job or CronJob (and its file) is named after: the tag, and its platform when
    the image has several."""
    return f"{tag}-{platform.split('/', 1)[1]}" if per_platform else tag


def _annotations(tag: str, image: str, platform: str) -> dict[str, str]:
    return {"imgkit.dev/image": tag, "imgkit.dev/reference": image, "imgkit.dev/platform": platform}


def verify_job(tag: str, image: str, probe: bytes, settings: JobSettings,
               platform: str = "linux/amd64", per_platform: bool = False) -> Document:
    """The Job that runs the probe in `image` (tag's image, by digest where known) on a
    node of `platform`; `per_platform`: the image has several, one Job each (named apart)."""
    name = job_name(named_after(tag, platform, per_platform))
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": _metadata(name, settings, annotations=_annotations(tag, image, platform)),
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


def fleet_name(tag: str) -> str:
    """A CronJob name (at most 52 characters: its Jobs add a suffix), unique per image."""
    name = f"imgkit-fleet-{slug(tag)}"
    if len(name) <= 52:
        return name
    return f"{name[:43].rstrip('-')}-{hashlib.sha256(tag.encode()).hexdigest()[:8]}"


def reference_configmap(name: str, verdict: str, settings: JobSettings) -> Document:
    """The verdict an image was promoted with (its `verify --json`), for its fleet check."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _metadata(name, settings),
            "data": {"verdict.json": verdict}}


def fleet_cronjob(tag: str, image: str, probe: bytes, settings: JobSettings,
                  fleet: FleetSettings, platform: str = "linux/amd64",
                  per_platform: bool = False, reference: str = "") -> Document:
    """The fleet check of `image` (tag's image, by digest where known) on `fleet.nodes`
    nodes of `platform` each run; `reference`: the ConfigMap of its promoted verdict."""
    name = fleet_name(named_after(tag, platform, per_platform))
    pod = _pod_spec(image, probe, settings, platform)
    probe_container = {**pod.pop("containers")[0],
                       "command": ["python3", "-c", FLEET_BOOT, *_probe_args(settings)]}
    probe_container["env"] = [*probe_container["env"], {
        "name": "IMGKIT_PROBE_TIMEOUT", "value": str(max(60, settings.deadline - 120))}]
    probe_container["volumeMounts"] = [*probe_container["volumeMounts"],
                                       {"name": "report", "mountPath": REPORT_DIR}]
    pod["initContainers"] = [probe_container]
    pod["containers"] = [_judge_container(image, fleet, platform, reference)]
    pod["volumes"] += _fleet_volumes(fleet, reference)
    pod["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"imgkit.dev/fleet-check": name}},
        "topologyKey": "kubernetes.io/hostname"}]}}              # one pod per node
    if fleet.pull_secret:
        pod["imagePullSecrets"] = [{"name": fleet.pull_secret}]
    return {
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": _metadata(name, settings, annotations=_annotations(tag, image, platform)),
        "spec": {
            "schedule": fleet.schedule, "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 3,
            "jobTemplate": {"spec": {
                "backoffLimit": 0, "parallelism": fleet.nodes, "completions": fleet.nodes,
                "activeDeadlineSeconds": settings.deadline,
                "ttlSecondsAfterFinished": settings.ttl,
                "template": {"metadata": {"labels": {**LABELS, "imgkit.dev/fleet-check": name}},
                             "spec": pod}}},
        },
    }


def _probe_args(settings: JobSettings) -> list[str]:
    return ["--framed", *(["--no-gpu"] if settings.gpus == 0 else
                          ["--gemm-size", str(settings.gemm_size)])]


def _judge_container(image: str, fleet: FleetSettings, platform: str,
                     reference: str) -> dict[str, Any]:
    command = ["imgkit", "judge", image, f"{REPORT_DIR}/report.txt", "--platform", platform,
               "--metrics", fleet.pushgateway]
    if reference:
        command += ["--reference", f"{REFERENCE_DIR}/verdict.json", "--margin", str(fleet.margin)]
    env = [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
           {"name": "HOME", "value": "/tmp"}, {"name": "IMGKIT_CACHE_DIR", "value": "/tmp/imgkit"}]
    mounts = [{"name": "report", "mountPath": REPORT_DIR, "readOnly": True},
              {"name": "tmp", "mountPath": "/tmp"}]
    if reference:
        mounts.append({"name": "reference", "mountPath": REFERENCE_DIR, "readOnly": True})
    if fleet.pull_secret:        # the judge reads the image's config from the registry with it
        env.append({"name": "DOCKER_CONFIG", "value": DOCKER_CONFIG_DIR})
        mounts.append({"name": "docker-config", "mountPath": DOCKER_CONFIG_DIR, "readOnly": True})
    return {"name": "judge", "image": fleet.judge_image, "imagePullPolicy": "IfNotPresent",
            "command": command, "env": env,
            "resources": {"limits": {"memory": "1Gi"}, "requests": {"cpu": "250m", "memory": "256Mi"}},
            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                "privileged": False, "capabilities": {"drop": ["ALL"]}},
            "volumeMounts": mounts}


def _fleet_volumes(fleet: FleetSettings, reference: str) -> list[dict[str, Any]]:
    volumes: list[dict[str, Any]] = [{"name": "report", "emptyDir": {"sizeLimit": "64Mi"}}]
    if reference:
        volumes.append({"name": "reference", "configMap": {"name": reference}})
    if fleet.pull_secret:
        volumes.append({"name": "docker-config", "secret": {
            "secretName": fleet.pull_secret,
            "items": [{"key": ".dockerconfigjson", "path": "config.json"}]}})
    return volumes
