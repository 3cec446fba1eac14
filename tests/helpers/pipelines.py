"""Running what `imgkit ci` wrote: its GitLab jobs as a runner would, and forgetting a
namespace's images as a fresh runner would not have them."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import yaml

from . import leftovers
from .registry import USER, runner_docker_config


def forget(engine, ns: str, registry: str) -> None:
    """What a fresh runner would not have: every image of the namespace (pulled from any
    registry too) or of `registry`, but for the namespace's Debian base (the runner's OS)."""
    base = f"{ns}/debian:bookworm"
    leftovers.clear(engine, lambda name: name != base and (
        name.startswith(f"{ns}/") or f"/{ns}/" in name or bool(registry) and name.startswith(registry)))


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
               "DOCKER_CONFIG": str(runner_docker_config(tmp_path / "docker" / name)),
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
