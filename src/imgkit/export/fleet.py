"""`imgkit export k8s --fleet`: the fleet check's manifests for the images a selection
names: the probe's ConfigMap, each image's reference verdict as a ConfigMap, and a CronJob
per image and platform (export/k8s.py writes them). Pure: files in, files out."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import UsageError
from ..matrix.plan import Plan
from ..render.bake import slug
from ..verify.fleet import read_reference
from .k8s import (
    FleetSettings,
    JobSettings,
    check_schedule,
    dump,
    fleet_cronjob,
    fleet_name,
    named_after,
    reference_configmap,
)


def fleet_of(fleet: bool, *, judge_image: str | None, pushgateway: str | None, schedule: str,
             nodes: int, margin: float, pull_secret: str, verdicts: Path | None,
             ) -> FleetSettings | None:
    """The fleet check's settings, or None without --fleet; what only a fleet check takes,
    given without it, or a fleet check missing what it needs, is bad usage (exit 2)."""
    if not fleet:
        given = [flag for flag, value in (("--judge-image", judge_image),
                                          ("--pushgateway", pushgateway),
                                          ("--pull-secret", pull_secret),
                                          ("--verdicts", verdicts)) if value]
        if given:
            raise UsageError(f"{given[0]} is for a fleet check", hint="add --fleet")
        return None
    if not judge_image:
        raise UsageError("--fleet needs --judge-image IMAGE: imgkit's own image, which judges "
                         "each node's report", hint="build it from the Dockerfile at imgkit's "
                         "root and push it where the cluster pulls (docs/monitoring.md)")
    if not pushgateway or not pushgateway.startswith(("http://", "https://")):
        raise UsageError(f"--fleet needs --pushgateway URL (http:// or https://), not "
                         f"{pushgateway!r}", hint="e.g. http://pushgateway.monitoring:9091")
    return FleetSettings(judge_image=judge_image, pushgateway=pushgateway,
                         schedule=check_schedule(schedule), nodes=nodes, margin=margin,
                         pull_secret=pull_secret)


CONFIGMAP_LIMIT = 900 << 10        # Kubernetes refuses a ConfigMap over 1 MiB


def references(plan: Plan, verdicts: Path) -> dict[str, Path]:
    """Each final image's reference: the `verify --json` file in `verdicts` about it (by its
    tag, or a registry reference ending in it), checked now; an image without one, or a
    file that cannot serve, is bad input (exit 2) naming it."""
    if not verdicts.is_dir():
        raise UsageError(f"--verdicts {verdicts}: not a folder")
    found: dict[str, Path] = {}
    for path in sorted(verdicts.glob("*.json")):
        try:
            image = json.loads(path.read_text()).get("image")
        except (OSError, ValueError, AttributeError):
            continue                   # not a verdict: read_reference names it if it is used
        for tag in plan.finals:
            if isinstance(image, str) and (image == tag or image.endswith("/" + tag)):
                found[tag] = path
    missing = [tag for tag in plan.finals if tag not in found]
    if missing:
        raise UsageError(f"--verdicts {verdicts} has no verdict of {', '.join(missing)}",
                         hint="verify each with `imgkit verify IMAGE --json DIR/NAME.json` on a "
                              "GPU, or narrow the selection with --only")
    for path in found.values():
        read_reference(path)           # a reference that cannot serve: exit 2, now
        if path.stat().st_size > CONFIGMAP_LIMIT:
            raise UsageError(f"--verdicts: {path} is over {CONFIGMAP_LIMIT >> 10} KiB, more than "
                             "a ConfigMap holds", hint="write it with `imgkit verify --json` "
                             "(not attest's, which lists every package)")
    return found


def write_fleet(plan: Plan, images: dict[str, str], probe: bytes, settings: JobSettings,
                fleet: FleetSettings, out: Path, held_to: dict[str, Path]) -> int:
    """The CronJobs of every final image (`images`: tag -> the reference its pods pull),
    and the ConfigMap of each one's reference verdict (`held_to`, from `references`); how
    many CronJobs were written."""
    written = 0
    for tag in plan.finals:
        reference = ""
        if tag in held_to:
            reference = f"{fleet_name(tag)[:44]}-ref"
            (out / f"reference-{slug(tag)}.yaml").write_text(dump(reference_configmap(
                reference, held_to[tag].read_text(), settings)))
        platforms = plan.get(tag).platforms
        for platform in platforms:
            several = len(platforms) > 1
            (out / f"fleet-{slug(named_after(tag, platform, several))}.yaml").write_text(dump(fleet_cronjob(
                tag, images[tag], probe, settings, fleet, platform, per_platform=several,
                reference=reference)))
            written += 1
    return written
