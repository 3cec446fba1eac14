"""The `imgkit export` commands: declarations only, as in commands.py (each one call into
export/)."""
from __future__ import annotations

from ..project import scan_required
from ..selection import Selection
from . import export_flags, flags
from .commands import export_command
from .framework import EXPORT, selects
from .values import seconds_of


@export_command(EXPORT, "A docker-bake.json and the build contexts, for BuildKit.", name="bake")
@selects("templates")
def export_bake(selection: Selection, out: export_flags.ExportOut,
                push_to: export_flags.PushTo = None) -> None:
    """Write the build contexts and a docker-bake.json for `docker buildx bake`: a target
    per image, parents reached as target contexts, the CA bundle and index as secrets."""
    from ..export.command import export_bake as run
    run(selection, out=out, push_to=push_to)


@export_command(EXPORT, "Admission policies: only images with a signed, passing verdict.",
                name="policy")
def export_policy(out: export_flags.ExportOut, registry: export_flags.PolicyRegistries = [],
                  trusted_key: export_flags.PublicKeyFile = None, certificate_identity: flags.Identity = None,
                  certificate_oidc_issuer: flags.Issuer = None, kyverno: export_flags.Kyverno = False,
                  sigstore: export_flags.Sigstore = False,
                  allow_gpu_unverified: flags.AllowGpuUnverified = False,
                  tlog: export_flags.DemandTlog = False) -> None:
    """Write admission policies that admit only images with a signed, passing verdict: a
    Kyverno ClusterPolicy, a sigstore ClusterImagePolicy, and the rule as CUE for `cosign
    verify-attestation --policy`. Where the project gates on known vulnerabilities
    (vulnerability_db), they demand a signed, passing scan too."""
    from ..export.command import export_policy as run
    run(out=out, registries=registry, key=trusted_key, identity=certificate_identity,
        issuer=certificate_oidc_issuer, require_gpu=not allow_gpu_unverified, tlog=tlog,
        kinds=tuple(k for k, on in (("kyverno", kyverno), ("sigstore", sigstore)) if on),
        require_scan=scan_required())


@export_command(EXPORT, "Prometheus alert rules and a Grafana dashboard.",
                name="monitoring")
def export_monitoring(out: export_flags.ExportOut, margin: export_flags.Margin = 0.1,
                      period: export_flags.Period = "1d") -> None:
    """Write Prometheus alerting rules and a Grafana dashboard for the verdicts `imgkit
    verify --metrics` sends: an image no longer verifies, its throughput dropped, its TF32
    state changed, no verdict for two periods."""
    from ..export.command import export_monitoring as run
    run(out=out, margin=margin, period_seconds=int(seconds_of("--period", period) or 0))


@export_command(EXPORT, "Kubernetes Jobs (or fleet CronJobs) that run the probe.", name="k8s")
@selects()
def export_k8s(selection: Selection, out: export_flags.ExportOut,
               registry: export_flags.ClusterRegistry = None,
               cluster: export_flags.Cluster = None, candidates: flags.Candidates = None,
               fleet: export_flags.Fleet = False, verdicts: export_flags.FleetVerdicts = None) -> None:
    """Write a verification Job per image and the ConfigMap holding the probe; a Job's log
    is the report: `kubectl logs job/NAME > r.json && imgkit judge IMAGE r.json`. With
    --fleet, a fleet check's CronJob per image instead. What the cluster fixes once comes
    from the project file's [cluster] table (or --cluster FILE): docs/scale.md."""
    from ..export.command import export_k8s as run
    run(selection, out=out, registry=registry, cluster=cluster, candidates=candidates,
        fleet=fleet, verdicts=verdicts)
