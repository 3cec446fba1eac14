"""The pipeline `imgkit ci gitlab` writes, run job by job as its runners would: each job on a
"fresh runner" (no image of the matrix left but the base OS, its own Docker config from a
real `docker login`, its own imgkit cache, a clean checkout with only the candidates files
of the jobs it needs), against a real registry on loopback."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml

from . import leftovers
from .conftest import mini_project
from .registry import USER, skopeo_json, skopeo_tags

pytestmark = pytest.mark.docker


@pytest.fixture()
def pipeline_ns(engine, base_image) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A namespace of its own (its images are removed between jobs), on the shared base."""
    ns = leftovers.claim("imgkit-pipe")
    engine.tag(engine.image(base_image).id, f"{ns}/debian:bookworm")
    yield ns
    engine.remove_image(f"{ns}/debian:bookworm")    # the tag only: the base is shared
    forget(engine, ns, "")


def forget(engine, ns: str, registry: str) -> None:  # type: ignore[no-untyped-def]
    """What a fresh runner would not have: every image of the namespace (pulled from any
    registry too) or of `registry`, but for the namespace's Debian base (the runner's OS)."""
    base = f"{ns}/debian:bookworm"
    leftovers.clear(engine, lambda name: name != base and (
        name.startswith(f"{ns}/") or f"/{ns}/" in name or bool(registry) and name.startswith(registry)))


def resolved(pipeline: dict[str, Any], name: str) -> dict[str, Any]:
    """The job as GitLab reads it: what it `extends` (a template's script and variables)
    under its own keys."""
    job = pipeline[name]
    above = resolved(pipeline, job["extends"]) if "extends" in job else {}
    return {**above, **job, "variables": {**above.get("variables", {}), **job.get("variables", {})}}


def run_job(name: str, job: dict[str, Any], before: list[str], checkout: Path, work: Path,
            env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    shutil.copytree(checkout, work)
    script = "\n".join(["set -euo pipefail", *before, *job["script"]])
    return subprocess.run(["bash", "-c", script], cwd=work, env={**env, **job["variables"]},
                          capture_output=True, text=True, timeout=900)


def gitlab_pipeline(checkout: Path, ns: str, staging: str, production: str) -> dict[str, Any]:
    """`imgkit ci gitlab` of the checkout's matrix: jobs that sign with a cosign key of their
    own (passphrase "pw") and verify without GPUs."""
    subprocess.run(["cosign", "generate-key-pair", "--output-key-prefix", str(checkout / "cosign")],
                   env={**os.environ, "COSIGN_PASSWORD": "pw"}, check=True, capture_output=True)
    out = subprocess.run(
        [sys.executable, "-m", "imgkit", "ci", "gitlab", "--namespace", ns, "--registry",
         production, "--staging", staging, "--verify-gpus", "none", "--install", "true",
         "--signing-key", "cosign.key", "--trusted-key", "cosign.pub",
         "--out", ".gitlab-ci.yml"], cwd=checkout, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return dict(yaml.safe_load((checkout / ".gitlab-ci.yml").read_text()))


def run_jobs(pipeline: dict[str, Any], names: list[str], checkout: Path, tmp_path: Path,
             registry: Any, fresh: Callable[[], None] = lambda: None) -> dict[str, str]:
    """Each job in turn as its runner would run it: its own Docker config, imgkit cache and
    checkout with the artifacts of the jobs it needs; `fresh` empties the engine first.
    Returns each job's output; a job that fails fails the test."""
    before = pipeline[".imgkit"]["before_script"]
    logs: dict[str, str] = {}
    for name in names:
        job = resolved(pipeline, name)
        fresh()
        work = tmp_path / "jobs" / name
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
               "DOCKER_CONFIG": str(tmp_path / "docker" / name),
               "IMGKIT_CACHE_DIR": str(tmp_path / "cache" / name),
               "REGISTRY_USERNAME": USER, "REGISTRY_PASSWORD": registry.password,
               "COSIGN_PASSWORD": "pw"}      # a CI variable, as GitLab would set it
        shutil.copytree(checkout, tmp_path / "checkouts" / name)
        for need in job["needs"]:                     # the artifacts GitLab hands over
            if need["artifacts"]:
                for path in pipeline[need["job"]]["artifacts"]["paths"]:
                    target = tmp_path / "checkouts" / name / path
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(tmp_path / "jobs" / need["job"] / path, target)
        done = run_job(name, job, before, tmp_path / "checkouts" / name, work, env)
        logs[name] = done.stdout + done.stderr
        assert done.returncode == 0, f"{name}:\n{logs[name]}"
    return logs


def test_the_generated_pipeline_builds_verifies_and_promotes_by_digest(  # type: ignore[no-untyped-def]
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
