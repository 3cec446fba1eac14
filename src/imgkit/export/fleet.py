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
    dump,
    fleet_cronjob,
    fleet_name,
    named_after,
    reference_configmap,
)

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
