"""The pipeline `imgkit ci gitlab` writes, run job by job as its runners would: each job on a
"fresh runner" (no image of the matrix left but the base OS, its own Docker config from a
real `docker login`, its own imgkit cache, a clean checkout with only the candidates files
of the jobs it needs), against a real registry on loopback."""
from __future__ import annotations

import json

import pytest

from .helpers.images import mini_project
from .helpers.pipelines import forget, gitlab_pipeline, run_jobs
from .helpers.registry import skopeo_json, skopeo_tags

pytestmark = pytest.mark.docker














def test_the_generated_pipeline_builds_verifies_and_promotes_by_digest(
        engine, pipeline_ns, registry, tmp_path):
    ns = pipeline_ns
    checkout = tmp_path / "checkout"
    mini_project(checkout)
    staging, production = f"{registry.address}/staging", f"{registry.address}/prod"
    pipeline = gitlab_pipeline(checkout, ns, staging, production)
    names = [k for k in pipeline if k != "stages" and not k.startswith(".")]
    assert names == ["build-python-bookworm", "build-cuda11-8-bookworm",
                     f"verify-{ns}-cuda-11-8-cudart-py3-11-bookworm", "promote"]

    logs = run_jobs(pipeline, names, checkout, tmp_path, registry,
                    fresh=lambda: forget(engine, ns, registry.address))  # but for the base OS

    python, mini = f"{ns}/python:3.11-bookworm", f"{ns}/cuda:11.8-cudart-py3.11-bookworm"
    # the child job pulled its parent by digest and built only its own image on it
    assert f"took {python} from {staging}/{ns}/python@sha256:" in logs["build-cuda11-8-bookworm"]
    assert f"building {python}" not in logs["build-cuda11-8-bookworm"]
    assert f"building {mini}" in logs["build-cuda11-8-bookworm"]
    staged = json.loads((tmp_path / "jobs" / "build-cuda11-8-bookworm" / "candidates" /
                         "build-cuda11-8-bookworm.json").read_text())["published"][0]
    digest, image_id = staged["digest"], staged["image_id"]
    # what was promoted is the digest that was staged and verified, config = the built image
    promoted = skopeo_json("inspect", f"docker://{production}/{ns}/cuda:11.8-cudart-py3.11-bookworm",
                           registry=registry)
    assert promoted["Digest"] == digest
    raw = skopeo_json("inspect", "--raw", f"docker://{production}/{ns}/cuda@{digest}",
                      registry=registry)
    assert raw["config"]["digest"] == image_id
    verdict = digest.replace(":", "-") + ".verdict"
    assert verdict in skopeo_tags(registry, f"staging/{ns}/cuda")
    assert verdict in skopeo_tags(registry, f"prod/{ns}/cuda")
    assert "11.8-cudart-py3.11-bookworm" not in skopeo_tags(registry, f"staging/{ns}/cuda")
    assert (tmp_path / "jobs" / names[2] / f"{names[2]}.xml").is_file()
