"""What did not move is not rebuilt: on a runner with nothing built, `imgkit build
--reuse-from` pulls the image production holds when it was built from the inputs this
checkout renders (and builds nothing below it), `publish --candidate --reuse-from` stages
nothing for it and hands over the production digest; inputs that moved are built. A real
engine and a real registry on loopback."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers.images import mini_project
from .helpers.pipelines import forget
from .helpers.registry import USER, docker_config, skopeo_json, skopeo_tags

pytestmark = pytest.mark.docker


def imgkit(checkout: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "imgkit", *args], cwd=checkout,
                          env={**os.environ, "DOCKER_CONFIG": str(config)},
                          capture_output=True, text=True, timeout=900)


def test_an_image_production_holds_unchanged_is_pulled_not_built_nor_staged(
        engine, pipeline_ns, registry, tmp_path):  # noqa: F811
    ns = pipeline_ns
    checkout = tmp_path / "checkout"
    mini_project(checkout)
    config = docker_config(tmp_path / "docker", {registry.address: (USER, registry.password)})
    production, staging = f"{registry.address}/prod", f"{registry.address}/staging"
    python, mini = f"{ns}/python:3.11-bookworm", f"{ns}/cuda:11.8-cudart-py3.11-bookworm"
    matrix = ("--namespace", ns)

    # last week: built, verified, published
    for step in (("build", *matrix), ("verify", mini, "--gpus", "none"),
                 ("publish", mini, "--to", production, "--allow-gpu-unverified")):
        done = imgkit(checkout, config, *step)
        assert done.returncode == 0, f"{step}: {done.stdout}{done.stderr}"
    held = skopeo_json("inspect", "--raw", f"docker://{production}/{ns}/cuda:11.8-cudart-py3.11-bookworm",
                       registry=registry)
    digest = skopeo_json("inspect", f"docker://{production}/{ns}/cuda:11.8-cudart-py3.11-bookworm",
                         registry=registry)["Digest"]

    # this week, on a runner with nothing built: nothing moved, so nothing is built
    forget(engine, ns, registry.address)
    done = imgkit(checkout, config, "build", *matrix, "--reuse-from", production)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"reused {mini} from {production}/{ns}/cuda@{digest}" in done.stderr, done.stderr
    assert f"building {mini}" not in done.stderr and f"building {python}" not in done.stderr
    assert engine.image(python) is None            # nothing below a reused image is needed
    assert engine.image(mini).id == held["config"]["digest"]

    # the python layer's own job (a pipeline's job of shared layers, which production never
    # holds): the image built on it is unchanged there, so it is neither built nor staged
    for_mini = ("--reuse-from", production, "--needed-by", mini)
    done = imgkit(checkout, config, "build", *matrix, "--only", python, *for_mini)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"not needed: {python} (nothing that must be built stands on it)" in done.stderr, \
        done.stderr
    assert engine.image(python) is None and f"building {python}" not in done.stderr
    out = tmp_path / "python.json"
    done = imgkit(checkout, config, "publish", *matrix, python, "--candidate", "--to", staging,
                  *for_mini, "--json", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(out.read_text())["published"] == []
    assert not skopeo_tags(registry, f"staging/{ns}/python")
    done = imgkit(checkout, config, "build", *matrix, "--only", python, "--reuse-from", production,
                  "--needed-by", f"{ns}/nosuch:1")
    assert done.returncode == 2 and f"--needed-by {ns}/nosuch:1: no image of the matrix" \
        in done.stderr, done.stderr

    # staging it again would give it another digest: the production one is handed over
    out = tmp_path / "candidates.json"
    done = imgkit(checkout, config, "publish", mini, "--candidate", "--to", staging,
                  "--reuse-from", production, "--json", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    [entry] = json.loads(out.read_text())["published"]
    assert (entry["status"], entry["destination"], entry["digest"]) == (
        "reused", f"{production}/{ns}/cuda", digest)
    assert not skopeo_tags(registry, f"staging/{ns}/cuda")

    # a template edit moves the inputs: that image is built, not reused
    template = checkout / "templates" / "pip-layer.Dockerfile.j2"
    template.write_text(template.read_text() + "\n# moved\n")
    done = imgkit(checkout, config, "build", *matrix, "--reuse-from", production, "--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reused" not in done.stderr and "would take" not in done.stderr
    assert mini in done.stdout + done.stderr
    done = imgkit(checkout, config, "build", *matrix, "--only", python, *for_mini, "--dry-run")
    assert done.returncode == 0 and "not needed" not in done.stderr, done.stderr   # built for it
    assert python in done.stdout + done.stderr

    # a production registry that does not answer is reported, and the build goes on
    done = imgkit(checkout, config, "build", *matrix, "--reuse-from", "127.0.0.1:9/prod",
                  "--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "could not read what 127.0.0.1:9/prod holds" in done.stderr
