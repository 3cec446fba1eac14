"""The pipeline `imgkit ci gitlab` writes, run by a real GitLab runner: gitlab-ci-local
4.60.1 with its shell executor, each job in its own copy of the repository, artifacts and
`needs:` carried by the runner, against a real registry on loopback. Build, stage, verify
(--verify-gpus none: no GPU here), sign with cosign, promote, and the verdict site of the
run made by the `pages` job (`--pages`); the project gates on scans, so the verify job scans
too (osv-scanner, the day's records from a stand-in for osv.dev), and the weekly schedule
runs the rescan of production alone. The project sits in a folder of its repository, as in
a monorepo; the weekly relock's test keeps it at the root."""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from .helpers.background import gitlab_ci_local
from .helpers.images import mini_project
from .helpers.pipelines import forget
from .helpers.registry import USER, runner_docker_config, skopeo_json, skopeo_tags
from .helpers.scanner import osv_scanner, served_bucket

pytestmark = pytest.mark.docker


@pytest.fixture()
def osv_source(tmp_path: Path) -> Iterator[str]:
    """A stand-in for osv.dev's bucket, serving the tests' advisory records."""
    with served_bucket(tmp_path / "osv") as url:
        yield url


def test_a_real_gitlab_runner_runs_the_generated_pipeline_end_to_end(
        engine, pipeline_ns, registry, osv_source, tmp_path):  # noqa: F811
    ns = pipeline_ns
    repo = tmp_path / "repo"
    project = repo / "platform" / "gpu"     # a monorepo's folder: the jobs run there
    mini_project(project)
    (project / "imgkit.toml").write_text('vulnerability_db = "advisories"\n')    # gates on scans
    env = {**os.environ, "COSIGN_PASSWORD": "pw",
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    subprocess.run(["cosign", "generate-key-pair"], cwd=project, env=env, check=True,
                   capture_output=True)
    scanner = osv_scanner()
    staging, production = f"{registry.address}/staging", f"{registry.address}/prod"
    made = subprocess.run(
        [sys.executable, "-m", "imgkit", "ci", "gitlab", "--namespace", ns, "--registry", production,
         "--staging", staging, "--verify-gpus", "none", "--install", "true",
         "--signing-key", "cosign.key", "--trusted-key", "cosign.pub", "--pages",
         "--out", "../../.gitlab-ci.yml"],
        cwd=project, env=env, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    assert "  - cd platform/gpu\n" in (repo / ".gitlab-ci.yml").read_text()
    # the monorepo as pushed before (origin/main: a README alone), then this push, which adds
    # the project: gitlab-ci-local holds `rules: changes` to `git diff origin/main`
    commit = ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-qm"]
    (repo / "README.md").write_text("the team's monorepo\n")
    for command in (["git", "init", "-q", "-b", "main"], ["git", "add", "README.md"],
                    [*commit, "readme"], ["git", "update-ref", "refs/remotes/origin/main", "HEAD"],
                    ["git", "add", "-A"], [*commit, "matrix"],
                    ["git", "remote", "add", "origin", "https://gitlab.example.com/ml/images.git"]):
        subprocess.run(command, cwd=repo, check=True)

    def pipeline(*variables: str) -> tuple[int, str]:
        run = subprocess.run(
            [gitlab_ci_local(), "--force-shell-executor", "--shell-isolation",
             "--variable", f"REGISTRY_USERNAME={USER}",
             "--variable", f"REGISTRY_PASSWORD={registry.password}",
             "--variable", "COSIGN_PASSWORD=pw",
             # not the host user's logins; its CLI plugins (buildx) as a runner's
             "--variable", f"DOCKER_CONFIG={runner_docker_config(tmp_path / 'docker')}",
             "--variable", f"IMGKIT_CACHE_DIR={tmp_path / 'cache'}",
             "--variable", f"IMGKIT_OSV_SOURCE={osv_source}",
             "--variable", f"IMGKIT_OSV_SCANNER={scanner}",
             *(w for v in variables for w in ("--variable", v))],
            cwd=repo, env=env, capture_output=True, text=True, timeout=1200)
        return run.returncode, run.stdout + run.stderr
    code, log = pipeline()
    assert code == 0, log[-6000:]
    jobs = ["build-python-bookworm", "build-cuda11-8-bookworm",
            f"verify-{ns}-cuda-11-8-cudart-py3-11-bookworm", "promote", "pages"]
    for job in jobs:
        assert f"PASS  {job}" in log, log[-6000:]
    assert "PASS  rescan" not in log and "and the scan" in log, log[-6000:]
    # the pages job's artifact: the site of the run's verdicts, the verified image passed
    # (judged without a GPU here) and its parents, which no job verifies, without a verdict
    sites = [s for s in (repo / ".gitlab-ci-local").rglob("public/index.html")
             if "platform" not in s.relative_to(repo).parts]     # where Pages serves it
    assert sites, "the pages job kept no public/index.html at the checkout's root"
    grid = sites[0].read_text()
    assert f"{ns}/cuda:11.8-cudart-py3.11-bookworm</a>" in grid
    assert "passed, GPU not verified" in grid and "no verdict" in grid
    # after promote, read from production against the trusted key: the image is signed
    assert "1 of the 1 promoted image(s) carry a signed, passing verdict" in grid, grid[-3000:]
    assert grid.count("registry: signed verdict") == 1
    page = next(p for p in sites[0].parent.glob("images/*cuda*.html")).read_text()
    assert "(the signed scan the registry holds of it)" in page     # made where no scan ran
    # what was promoted is what was staged and verified, with its signed attestations
    repository, tag = f"{ns}/cuda", "11.8-cudart-py3.11-bookworm"
    digest = skopeo_json("inspect", f"docker://{production}/{repository}:{tag}",
                         registry=registry)["Digest"]
    image_id = skopeo_json("inspect", "--raw", f"docker://{staging}/{repository}@{digest}",
                           registry=registry)["config"]["digest"]
    assert digest.replace(":", "-") + ".att" in skopeo_tags(registry, f"prod/{repository}")
    assert digest.replace(":", "-") + ".att" in skopeo_tags(registry, f"staging/{repository}")
    checked = subprocess.run(
        ["cosign", "verify-attestation", "--key", str(project / "cosign.pub"), "--type",
         "https://imgkit.dev/attestations/verdict/v1", "--insecure-ignore-tlog=true",
         "--allow-http-registry", f"{production}/{repository}@{digest}"],
        env={**os.environ, "DOCKER_CONFIG": str(tmp_path / "docker")}, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    statement = json.loads(base64.b64decode(json.loads(checked.stdout.splitlines()[0])["payload"]))
    assert statement["predicate"]["passed"] and statement["predicate"]["image_id"] == image_id

    # the weekly schedule: the rescan of what production serves, alone
    code, weekly = pipeline("CI_PIPELINE_SOURCE=schedule")
    assert code == 0 and "PASS  rescan" in weekly, weekly[-6000:]
    assert not any(f"PASS  {job}" in weekly for job in jobs), weekly[-6000:]
    assert f"PASSED: {production}/{ns}/cuda:11.8-cudart-py3.11-bookworm" in weekly, weekly[-6000:]
    assert list((repo / ".gitlab-ci-local").rglob("rescans/*.json")), "the rescan kept nothing"

    # a later push that changes the monorepo's README alone runs none of the project's jobs
    (repo / "README.md").write_text("the team's monorepo, edited\n")
    for command in (["git", "update-ref", "refs/remotes/origin/main", "HEAD"],
                    [*commit, "docs", "README.md"]):
        subprocess.run(command, cwd=repo, check=True)
    listed = subprocess.run([gitlab_ci_local(), "--list-json"], cwd=repo, env=env,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    when = {job["name"]: job["when"] for job in json.loads(listed.stdout)}
    assert set(jobs) <= set(when) and set(when.values()) == {"never"}, when

LOCKED_APP = """\
family: app
extends: {family: mini}
repository: NS/app
tag: "{parent_tag}"
pip: ["APP==1.0"]     # what it depends on is pinned by the lock only
"""


def run_pipeline(repo: Path, registry, tmp_path: Path, env: dict[str, str],
                 *variables: str) -> str:
    run = subprocess.run(
        [gitlab_ci_local(), "--force-shell-executor", "--shell-isolation",
         "--variable", f"REGISTRY_USERNAME={USER}", "--variable", f"REGISTRY_PASSWORD={registry.password}",
         "--variable", "COSIGN_PASSWORD=pw",
         "--variable", f"DOCKER_CONFIG={runner_docker_config(tmp_path / 'docker')}",
         "--variable", f"IMGKIT_CACHE_DIR={tmp_path / 'cache'}",
         *(w for v in variables for w in ("--variable", v))],
        cwd=repo, env=env, capture_output=True, text=True, timeout=1500)
    return f"exit {run.returncode}\n{run.stdout}{run.stderr}"


def test_the_weekly_schedule_relocks_rebuilds_what_moved_and_promotes_and_the_gate_goes_red(
        engine, pipeline_ns, registry, tmp_path):  # noqa: F811
    """A locked matrix, its pipeline run by a real GitLab runner against a package index we
    move: a push builds, verifies and promotes behind the lock gate; a new release of a
    dependency turns a push's gate red before anything is built; the scheduled run relocks,
    takes the image that did not move from production (same digest), builds the one that
    did on it, verifies both and promotes: production now holds the new release, the
    repository's locks are untouched and the new ones are kept for review."""
    from .helpers.pyindex import LocalIndex
    ns = pipeline_ns
    run = uuid.uuid4().hex[:8]
    app, lib = f"imgkit-app-{run}", f"imgkit-lib-{run}"
    index = LocalIndex(tmp_path / "index")
    index.add_wheel(app, "1.0", requires=(f"{lib}>=1,<2",))
    index.add_wheel(lib, "1.0.0")
    from imgkit.matrix.compat import load
    # the CUDA runtime the mini layer pins, and the pip and setuptools every venv gets
    tools = [f"{name}=={version}" for name, version, _ in load().venv_tools("3.11")]
    fetched = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         "--platform", "manylinux1_x86_64", "--python-version", "3.11", "-d", str(tmp_path / "dl"),
         "nvidia-cuda-runtime-cu11==11.8.89", *tools], capture_output=True, text=True)
    assert fetched.returncode == 0, fetched.stderr
    for wheel in (tmp_path / "dl").glob("*.whl"):
        index.add_file(wheel.name.split("-")[0].replace("_", "-"), wheel)

    repo = tmp_path / "repo"
    mini_project(repo)
    (repo / "images" / "app.yaml").write_text(LOCKED_APP.replace("NS", ns).replace("APP", app))
    staging, production = f"{registry.address}/staging", f"{registry.address}/prod"
    mini, built_app = f"{ns}/cuda:11.8-cudart-py3.11-bookworm", f"{ns}/app:11.8-cudart-py3.11-bookworm"
    with index.served(engine.bridge_gateway()) as url:
        env = {**os.environ, "COSIGN_PASSWORD": "pw", "IMGKIT_INDEX_URL": url,
               "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        subprocess.run(["cosign", "generate-key-pair"], cwd=repo, env=env, check=True,
                       capture_output=True)
        for command in ([sys.executable, "-m", "imgkit", "lock", "--namespace", ns],
                        [sys.executable, "-m", "imgkit", "ci", "gitlab", "--namespace", ns,
                         "--registry", production, "--staging", staging, "--verify-gpus", "none",
                         "--install", "true", "--signing-key", "cosign.key",
                         "--trusted-key", "cosign.pub", "--max-age", "1d", "--out", ".gitlab-ci.yml"],
                        ["git", "init", "-q", "-b", "main"], ["git", "add", "-A"],
                        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit",
                         "-qm", "matrix and locks"],
                        ["git", "remote", "add", "origin", "https://gitlab.example.com/ml/images.git"]):
            done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
            assert done.returncode == 0, done.stdout + done.stderr
        locks = {p.name: p.read_bytes() for p in (repo / "images" / "locks").iterdir()}
        lock_file = next(name for name in locks if "_app_" in name)
        index_var = f"IMGKIT_INDEX_URL={url}"

        log = run_pipeline(repo, registry, tmp_path, env, index_var)          # a push
        assert log.startswith("exit 0"), log[-6000:]
        for job in ("lock-check", "build-python-bookworm", "build-cuda11-8-bookworm", "promote"):
            assert f"PASS  {job}" in log, log[-6000:]
        assert "PASS  relock" not in log
        mini_digest = skopeo_json("inspect", f"docker://{production}/{mini}", registry=registry)["Digest"]
        app_digest = skopeo_json("inspect", f"docker://{production}/{built_app}", registry=registry)["Digest"]

        index.add_wheel(lib, "1.0.1")                      # next week, the index moved
        log = run_pipeline(repo, registry, tmp_path, env, index_var)          # a push: red
        assert not log.startswith("exit 0"), log[-6000:]
        assert f"moved: {lib} 1.0.0 -> 1.0.1" in log, log[-6000:]
        assert "PASS  build-" not in log and "PASS  promote" not in log

        forget(engine, ns, registry.address)     # the weekly run lands on fresh runners
        log = run_pipeline(repo, registry, tmp_path, env, index_var,
                           "CI_PIPELINE_SOURCE=schedule")
        assert log.startswith("exit 0"), log[-6000:]
        for job in ("relock", "build-cuda11-8-bookworm", "promote"):
            assert f"PASS  {job}" in log, log[-6000:]
        assert "PASS  lock-check" not in log
        assert f"reused {mini} from {production}/{ns}/cuda@{mini_digest}" in log, log[-6000:]
        assert f"building {built_app}" in log
        # the python layer is needed by nothing that moved: its job neither built nor staged it
        python = f"{ns}/python:3.11-bookworm"
        said = [line for line in log.splitlines() if line.startswith("build-python-bookworm ")
                and f"> not needed: {python} (nothing that must be built stands on it)" in line]
        assert len(said) == 2, log[-6000:]                   # by its build, then by its publish
        assert f"building {python}" not in log
        # the image production holds unchanged keeps the signed verdict the push's run
        # attached (and promote copied): its verify job pulls and runs nothing; the image
        # that moved is judged
        kept = f"kept the signed verdict {production}/{ns}/cuda@{mini_digest} carries"
        assert kept in log, log[-6000:]
        judged = [line for line in log.splitlines() if "judging it now" in line]
        assert judged and all(line.startswith(f"verify-{ns}-app-") for line in judged), judged
    # production: the image that did not move kept its digest, the one that did moved on
    assert skopeo_json("inspect", f"docker://{production}/{mini}", registry=registry)["Digest"] == mini_digest
    new_app = skopeo_json("inspect", f"docker://{production}/{built_app}", registry=registry)["Digest"]
    assert new_app != app_digest
    pulled = subprocess.run(["docker", "run", "--rm", "--entrypoint", "/opt/venv/bin/python",
                             f"{production}/{ns}/app@{new_app}", "-c",
                             f"import imgkit_lib_{run} as m; print(m.__version__)"],
                            env={**os.environ, "DOCKER_CONFIG": str(tmp_path / "docker")},
                            capture_output=True, text=True)
    assert pulled.stdout.strip() == "1.0.1", pulled.stderr
    # the pipeline commits nothing (gitlab-ci-local copies artifacts into the working tree;
    # GitLab keeps them with the job): the new locks and their diff are kept for review
    commits = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=repo,
                             capture_output=True, text=True).stdout.strip()
    assert commits == "1"
    committed = subprocess.run(["git", "show", f"HEAD:images/locks/{lock_file}"], cwd=repo,
                               capture_output=True).stdout
    assert committed == locks[lock_file] and f"{lib}==1.0.0".encode() in committed
    kept = list((repo / ".gitlab-ci-local").rglob("relock.diff"))
    assert kept and f"+{lib}==1.0.1" in kept[0].read_text(), kept
