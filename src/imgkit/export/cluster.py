"""What a cluster fixes once, for `imgkit export k8s`: how its GPU nodes are chosen and
reached, how long a Job may run, and, for the fleet check, where verdicts go. It lives in
the project file's `[cluster]` table (or a TOML file of its own, `--cluster FILE`), so the
command line keeps only what changes per run (the selection, --out, --candidates, --fleet,
--verdicts):

    [cluster]
    gpus_per_job = 1                       # nvidia.com/gpu per Job; 0: no GPU work
    runtime_class = "nvidia"               # runtimeClassName (GPU Operator: nvidia,
                                           # nvidia-cdi, nvidia-legacy)
    node_selector = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
    tolerations = ["nvidia.com/gpu:NoSchedule"]       # KEY[=VALUE]:EFFECT
    shm_size = "8Gi"                       # /dev/shm of the probe, a Kubernetes quantity
    deadline = 1800                        # activeDeadlineSeconds of each Job
    ttl = 86400                            # ttlSecondsAfterFinished of each Job
    namespace = "gpu-checks"               # default: kubectl's current one
    [cluster.fleet]                        # what `--fleet` needs
    judge_image = "registry.example.com/ml/imgkit:0.1"
    pushgateway = "http://pushgateway.monitoring:9091"
    schedule = "0 */6 * * *"
    nodes = 4
    margin = 0.1                           # how far under its promoted verdict a node may fall
    pull_secret = "regcred"

Every problem of the table is said at once, naming the file and the key."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import SpecError, UsageError, every_problem
from ..project import find_project, read_toml
from .k8s import (
    FleetSettings,
    JobSettings,
    check_quantity,
    check_schedule,
    parse_selector,
    parse_toleration,
)

WHERE = "docs/scale.md#kubernetes"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FleetTable(Strict):
    judge_image: str = Field(min_length=1)
    pushgateway: str = Field(pattern=r"^https?://")
    schedule: str = "0 */6 * * *"
    nodes: int = Field(1, ge=1, le=1000)
    margin: float = Field(0.1, ge=0.0, le=0.9)
    pull_secret: str = ""


class ClusterTable(Strict):
    gpus_per_job: int = Field(1, ge=0, le=16)
    runtime_class: str = ""
    node_selector: dict[str, str] = {}
    tolerations: list[str] = []
    shm_size: str = "8Gi"
    deadline: int = Field(1800, ge=60)
    ttl: int = Field(86400, ge=0)
    namespace: str = ""
    fleet: FleetTable | None = None


def cluster_settings(given: Path | None) -> tuple[ClusterTable, str]:
    """The cluster's settings: from `given` (a TOML file: its [cluster] table, or its top
    level), else the project file's [cluster] table, else the defaults; and where they
    came from, for messages."""
    if given is not None:
        document = read_toml(given)
        table = document.get("cluster", document)
        where = str(given)
    else:
        project = find_project()
        table = project.cluster or {}
        where = str(project.file) if project.file is not None else "(defaults)"
    return _validated(table, where), where


def _validated(table: Any, where: str) -> ClusterTable:
    if not isinstance(table, dict):
        raise SpecError(where, "cluster", "not a table", hint=f"see {WHERE}")
    try:
        model = ClusterTable.model_validate(table)
    except ValidationError as error:
        problems = [SpecError(where, "cluster." + ".".join(map(str, e["loc"])), _reason(e),
                              hint=f"the keys: {WHERE}") for e in error.errors()]
        raise every_problem(problems + _kubernetes_problems(table, where)) from None
    problems = _kubernetes_problems(table, where)
    if problems:
        raise every_problem(problems)
    return model


def _kubernetes_problems(table: dict[str, Any], where: str) -> list[SpecError]:
    """What Kubernetes would refuse of the values that are of the right type."""
    checks: list[tuple[str, Any, str]] = []
    selector, tolerations = table.get("node_selector"), table.get("tolerations")
    if isinstance(selector, dict):
        checks += [("cluster.node_selector", parse_selector, f"{k}={v}")
                   for k, v in selector.items() if isinstance(v, str)]
    if isinstance(tolerations, list):
        checks += [("cluster.tolerations", parse_toleration, t) for t in tolerations
                   if isinstance(t, str)]
    if isinstance(table.get("shm_size"), str):
        checks.append(("cluster.shm_size", check_quantity, table["shm_size"]))
    fleet = table.get("fleet")
    if isinstance(fleet, dict) and isinstance(fleet.get("schedule"), str):
        checks.append(("cluster.fleet.schedule", check_schedule, fleet["schedule"]))
    found = []
    for key, check, value in checks:
        try:
            check(value)
        except UsageError as exc:
            found.append(SpecError(where, key, exc.message, hint=exc.hint))
    return found


def _reason(error: Any) -> str:
    if error["type"] == "extra_forbidden":
        return "not a cluster setting"
    return f"{error['msg']} (given {error.get('input')!r})"


def job_settings(table: ClusterTable) -> JobSettings:
    return JobSettings(
        gpus=table.gpus_per_job, runtime_class=table.runtime_class,
        node_selector=tuple(parse_selector(f"{k}={v}") for k, v in table.node_selector.items()),
        tolerations=tuple(parse_toleration(t) for t in table.tolerations),
        shm_size=table.shm_size, deadline=table.deadline, ttl=table.ttl,
        namespace=table.namespace)


def fleet_settings(table: ClusterTable, where: str) -> FleetSettings:
    """The fleet check's settings; a cluster table without [cluster.fleet] cannot run one
    (exit 2, saying what to add)."""
    fleet = table.fleet
    if fleet is None:
        raise UsageError(f"--fleet needs [cluster.fleet] in {where}: judge_image (imgkit's own "
                         "image, which judges each node's report) and pushgateway (where each "
                         "node's verdict goes)", hint=f"see {WHERE}")
    return FleetSettings(judge_image=fleet.judge_image, pushgateway=fleet.pushgateway,
                         schedule=check_schedule(fleet.schedule), nodes=fleet.nodes,
                         margin=fleet.margin, pull_secret=fleet.pull_secret)
