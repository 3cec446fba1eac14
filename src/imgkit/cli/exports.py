"""The `imgkit export` commands: declarations only, as in commands.py (each one call into
export/)."""
from __future__ import annotations

from ..selection import Selection
from . import flags
from .commands import export_command
from .framework import selects
from .values import seconds_of


@export_command("bake")
@selects("templates")
def export_bake(selection: Selection, out: flags.ExportOut,
                registry: flags.BakeRegistry = None) -> None:
    """Write the build contexts and a docker-bake.json for `docker buildx bake`: a target
    per image, parents reached as target contexts, the CA bundle and index as secrets."""
    from ..export.command import export_bake as run
    run(selection, out=out, registry=registry)


@export_command("policy")
def export_policy(out: flags.ExportOut, registry: flags.PolicyRegistries = [],
                  trusted_key: flags.PublicKeyFile = None, certificate_identity: flags.Identity = None,
                  certificate_oidc_issuer: flags.Issuer = None, kyverno: flags.Kyverno = False,
                  sigstore: flags.Sigstore = False,
                  allow_gpu_unverified: flags.AllowGpuUnverified = False,
                  tlog: flags.DemandTlog = False) -> None:
    """Write admission policies that admit only images with a signed, passing verdict: a
    Kyverno ClusterPolicy, a sigstore ClusterImagePolicy, and the rule as CUE for `cosign
    verify-attestation --policy`."""
    from ..export.command import export_policy as run
    run(out=out, registries=registry, key=trusted_key, identity=certificate_identity,
        issuer=certificate_oidc_issuer, require_gpu=not allow_gpu_unverified, tlog=tlog,
        kinds=tuple(k for k, on in (("kyverno", kyverno), ("sigstore", sigstore)) if on))


@export_command("monitoring")
def export_monitoring(out: flags.ExportOut, margin: flags.Margin = 0.1,
                      period: flags.Period = "1d") -> None:
    """Write Prometheus alerting rules and a Grafana dashboard for the verdicts `imgkit
    verify --metrics` sends: an image no longer verifies, its throughput dropped, its TF32
    state changed, no verdict for two periods."""
    from ..export.command import export_monitoring as run
    run(out=out, margin=margin, period_seconds=int(seconds_of("--period", period) or 0))


@export_command("k8s")
@selects()
def export_k8s(selection: Selection, out: flags.ExportOut, registry: flags.ClusterRegistry,
               gpus: flags.JobGpus = 1, runtime_class: flags.RuntimeClass = "",
               node_selector: flags.NodeSelector = [], toleration: flags.Toleration = [],
               shm_size: flags.JobShmSize = "8Gi", deadline: flags.Deadline = 1800,
               ttl: flags.Ttl = 86400, k8s_namespace: flags.K8sNamespace = "",
               candidates: flags.Candidates = None, fleet: flags.Fleet = False,
               judge_image: flags.JudgeImage = None, pushgateway: flags.Pushgateway = None,
               schedule: flags.Schedule = "0 */6 * * *", nodes: flags.Nodes = 1,
               margin: flags.JudgeMargin = 0.1, verdicts: flags.FleetVerdicts = None,
               pull_secret: flags.PullSecret = "") -> None:
    """Write a verification Job per image and the ConfigMap holding the probe; a Job's log
    is the report: `kubectl logs job/NAME > r.json && imgkit judge IMAGE r.json`. With
    --fleet, a fleet check's CronJob per image instead."""
    from ..export.command import export_k8s as run
    from ..export.fleet import fleet_of
    run(selection, out=out, registry=registry, candidates=candidates, gpus=gpus,
        runtime_class=runtime_class, node_selector=node_selector, tolerations=toleration,
        shm_size=shm_size, deadline=deadline, ttl=ttl, namespace=k8s_namespace,
        fleet=fleet_of(fleet, judge_image=judge_image, pushgateway=pushgateway,
                       schedule=schedule, nodes=nodes, margin=margin, pull_secret=pull_secret,
                       verdicts=verdicts), verdicts=verdicts)
