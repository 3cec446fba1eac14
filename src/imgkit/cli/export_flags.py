"""The options of the `imgkit export` commands (cli/exports.py), declared as flags.py
declares the rest: a name means one thing wherever it appears."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .paths import path_option

ExportOut = Annotated[Path, path_option("--out", metavar="DIR",
                                        help="The folder to write the files into.")]
Margin = Annotated[float, typer.Option(
    "--margin", metavar="SHARE", min=0.01, max=0.9, help="Alert when a throughput falls more "
    "than this share under the best the same image reached on the same GPU model (0.1: 10%).")]
Period = Annotated[str, typer.Option(
    "--period", metavar="DURATION", help="How often each node sends a verdict (the fleet "
    "check's schedule), e.g. 6h or 1d: no verdict for two periods alerts.")]
PushTo = Annotated[Optional[str], typer.Option(
    "--push-to", metavar="REGISTRY[/NAMESPACE]", help="Tag the images for this registry, where "
    "`docker buildx bake --push` pushes them (default: local names).")]
PolicyRegistries = Annotated[list[str], typer.Option(
    "--registry", metavar="REGISTRY[/NAMESPACE]", help="Where verified images are promoted "
    "(repeatable): the policy covers the images pulled from there (default: the project "
    "file's `registry`, or IMGKIT_REGISTRY).", show_default=False)]
PublicKeyFile = Annotated[Optional[Path], typer.Option(
    "--trusted-key", metavar="FILE", help="The cosign public key (PEM) verdicts must be signed "
                                          "with.")]
Kyverno = Annotated[bool, typer.Option("--kyverno", help="Only the Kyverno ClusterPolicy "
                                                         "(default: Kyverno and sigstore both).")]
Sigstore = Annotated[bool, typer.Option("--sigstore", help="Only the sigstore policy-controller "
                                                           "ClusterImagePolicy.")]
DemandTlog = Annotated[bool, typer.Option("--tlog", help="With --trusted-key: also demand a "
                                                         "Rekor entry.")]
ClusterRegistry = Annotated[Optional[str], typer.Option(
    "--registry", metavar="REGISTRY[/NAMESPACE]", help="Where verified images are promoted: "
    "the cluster pulls them from there (default: the project file's `registry`, or "
    "IMGKIT_REGISTRY; a staged image by its digest with --candidates).", show_default=False)]
Cluster = Annotated[Optional[Path], typer.Option(
    "--cluster", metavar="FILE", help="What the cluster fixes once (GPUs per Job, runtime "
    "class, node selector, tolerations, deadlines, the fleet's judge and Pushgateway): a TOML "
    "file (default: the project file's [cluster] table).")]
Fleet = Annotated[bool, typer.Option(
    "--fleet", help="A fleet check instead of one Job: a CronJob per image whose pods, each on "
                    "a node of its own, run the probe and then `imgkit judge`, pushing each "
                    "node's verdict to the Pushgateway ([cluster.fleet]).")]
FleetVerdicts = Annotated[Optional[Path], typer.Option(
    "--verdicts", metavar="DIR", help="With --fleet: `imgkit verify --json` files of the "
    "verdicts the images were promoted with, each node held to its image's (see judge "
    "--reference).")]
