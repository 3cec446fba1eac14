"""What the benches of a pipeline's jobs stand on (bench/needed_bench.py, bench/kept_bench.py):
the starter's one-image matrix (tests/helpers/images.py's mini project) in a namespace of its
own, built, verified without a GPU and published to a registry on loopback as production.
None of it is timed."""
from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.helpers.images import mini_project  # noqa: E402
from tests.helpers.registry import USER, Registry, docker_config, skopeo_json, start_registry  # noqa: E402

IMGKIT = str(Path(sys.executable).parent / "imgkit")


def run(checkout: Path, config: Path, *args: str) -> str:
    """`imgkit ARGS` in the checkout with the registry's credentials; its stderr. A failure
    ends the bench, saying why."""
    done = subprocess.run([IMGKIT, *args], cwd=checkout, capture_output=True, text=True,
                          env={**os.environ, "DOCKER_CONFIG": str(config)}, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"imgkit {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return done.stderr


@dataclass(frozen=True)
class Production:
    registry: Registry
    checkout: Path      # the starter's project
    config: Path        # a Docker config holding the registry's credentials
    address: str        # REGISTRY/prod, where the image was published
    image: str          # the image's local tag
    reference: str      # where production holds it: REGISTRY/prod/REPO@sha256:...


@contextmanager
def published_starter(work: Path, ns: str) -> Iterator[Production]:
    """The starter's image built in namespace `ns`, verified (--gpus none) and published to
    a registry on loopback, which is removed afterwards (the namespace's images are the
    bench's to remove)."""
    registry = start_registry(work / "registry")
    try:
        checkout = mini_project(work / "checkout")
        config = docker_config(work / "docker", {registry.address: (USER, registry.password)})
        production, image = f"{registry.address}/prod", f"{ns}/cuda:11.8-cudart-py3.11-bookworm"
        run(checkout, config, "build", "--namespace", ns)
        run(checkout, config, "verify", image, "--gpus", "none")
        run(checkout, config, "publish", "--namespace", ns, image, "--to", production,
            "--allow-gpu-unverified")
        digest = skopeo_json("inspect", f"docker://{production}/{image}", registry=registry)["Digest"]
        yield Production(registry, checkout, config, production, image,
                         f"{production}/{image.rsplit(':', 1)[0]}@{digest}")
    finally:
        registry.remove()
