"""The pipeline `imgkit ci gitlab` writes, run by a real GitLab runner: gitlab-ci-local
4.60.1 with its shell executor, each job in its own copy of the repository, artifacts and
`needs:` carried by the runner, against a real registry on loopback. Build, stage, verify
(--verify-gpus none: no GPU here), sign with cosign, promote."""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import MINI_FAMILY, ROOT
from .registry import USER, skopeo_json, skopeo_tags
from .test_docker_pipeline import pipeline_ns  # noqa: F401  (the fixture: a namespace of its own)

pytestmark = pytest.mark.docker
RUNNER = shutil.which("gitlab-ci-local")
if RUNNER is None:
    if os.environ.get("CI"):
        raise RuntimeError("gitlab-ci-local is not installed: .ci/setup-host.sh installs it")
    pytest.skip("gitlab-ci-local is not installed (.ci/setup-host.sh installs it)",
                allow_module_level=True)


def test_a_real_gitlab_runner_runs_the_generated_pipeline_end_to_end(  # type: ignore[no-untyped-def]
        engine, pipeline_ns, registry, tmp_path):  # noqa: F811
    ns = pipeline_ns
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "templates", repo / "templates")
    (repo / "images").mkdir()
    (repo / "images" / "mini.yaml").write_text(MINI_FAMILY)
    env = {**os.environ, "COSIGN_PASSWORD": "pw",
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    subprocess.run(["cosign", "generate-key-pair"], cwd=repo, env=env, check=True, capture_output=True)
    staging, production = f"{registry.address}/staging", f"{registry.address}/prod"
    made = subprocess.run(
        [sys.executable, "-m", "imgkit", "ci", "gitlab", "--namespace", ns, "--registry", production,
         "--staging", staging, "--verify-gpus", "none", "--install", "true",
         "--signing-key", "cosign.key", "--trusted-key", "cosign.pub", "--out", ".gitlab-ci.yml"],
        cwd=repo, env=env, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    for command in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"],
                    ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-qm",
                     "matrix"],
                    ["git", "remote", "add", "origin", "https://gitlab.example.com/ml/images.git"]):
        subprocess.run(command, cwd=repo, check=True)
    run = subprocess.run(
        [RUNNER, "--force-shell-executor", "--shell-isolation",
         "--variable", f"REGISTRY_USERNAME={USER}", "--variable", f"REGISTRY_PASSWORD={registry.password}",
         "--variable", "COSIGN_PASSWORD=pw",
         "--variable", f"DOCKER_CONFIG={tmp_path / 'docker'}",      # not the host user's
         "--variable", f"IMGKIT_CACHE_DIR={tmp_path / 'cache'}"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=1200)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-6000:]
    jobs = ["build-python-bookworm", "build-cuda11-8-bookworm",
            f"verify-{ns}-cuda-11-8-cudart-py3-11-bookworm", "promote"]
    for job in jobs:
        assert f"PASS  {job}" in log, log[-6000:]
    # what was promoted is what was staged and verified, with its signed attestations
    repository, tag = f"{ns}/cuda", "11.8-cudart-py3.11-bookworm"
    digest = skopeo_json("inspect", f"docker://{production}/{repository}:{tag}",
                         registry=registry)["Digest"]
    image_id = skopeo_json("inspect", "--raw", f"docker://{staging}/{repository}@{digest}",
                           registry=registry)["config"]["digest"]
    assert digest.replace(":", "-") + ".att" in skopeo_tags(registry, f"prod/{repository}")
    assert digest.replace(":", "-") + ".att" in skopeo_tags(registry, f"staging/{repository}")
    checked = subprocess.run(
        ["cosign", "verify-attestation", "--key", str(repo / "cosign.pub"), "--type",
         "https://imgkit.dev/attestations/verdict/v1", "--insecure-ignore-tlog=true",
         "--allow-http-registry", f"{production}/{repository}@{digest}"],
        env={**os.environ, "DOCKER_CONFIG": str(tmp_path / "docker")}, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    statement = json.loads(base64.b64decode(json.loads(checked.stdout.splitlines()[0])["payload"]))
    assert statement["predicate"]["passed"] and statement["predicate"]["image_id"] == image_id
