"""`imgkit ci github|gitlab`: the pipelines pass the platforms' own schemas (check-jsonschema's
vendored copies), describe build -> verify on GPU -> promote along the plan's DAG, and match
their golden files. The commands they run are proven on the real engine in
test_docker_pipeline.py."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from imgkit.errors import UsageError
from imgkit.export.ci import RENDERERS
from imgkit.export.jobs import CiSettings, Job, expand, groups, jobs
from imgkit.matrix.load import load_plan
from imgkit.matrix.plan import split_given
from imgkit.registry import candidates
from imgkit.registry.destination import parse_destination
from imgkit.selection import Selection

from .helpers.background import gitlab_ci_local
from .helpers.validators import Checked, check_jsonschema

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "ci"
SCHEMAS = {"github": "vendor.github-workflows", "gitlab": "vendor.gitlab-ci"}
PADDLE = "paddle:2.6.2-gpu-cuda11.8-cudnn8"
JUPYTER = "paddle-jupyter:2.6.2-gpu-cuda11.8-cudnn8"


def bundled_plan(**selection: Any):
    return load_plan(Selection(ROOT / "images", cuda=selection.get("cuda"),
                               only=tuple(selection.get("only", ()))))


def settings(**changes: Any) -> CiSettings:
    registry = parse_destination("registry.example.com/ml")
    return CiSettings(registry=registry, staging=parse_destination("registry.example.com/ml/staging"),
                      **changes)


def generated(platform: str, plan=None, **changes: Any) -> str:
    command = f"imgkit ci {platform} --registry registry.example.com/ml --out {platform}.yml"
    ci = settings(**changes)
    return RENDERERS[platform](jobs(plan or bundled_plan(), ci), ci, command)


def schema_check(platform: str, path: Path) -> Checked:
    return check_jsonschema(SCHEMAS[platform], path)


@pytest.mark.parametrize("platform", ["github", "gitlab"])
def test_the_pipeline_matches_its_golden_file_and_the_platform_schema(platform: str,
                                                                       tmp_path: Path) -> None:
    text = generated(platform)
    golden = GOLDEN / f"{platform}.yml"
    if os.environ.get("IMGKIT_UPDATE_GOLDEN") == "1":
        golden.write_text(text)
    assert text == golden.read_text()
    out = schema_check(platform, golden)
    assert out.returncode == 0, out.output


@pytest.mark.parametrize("platform", ["github", "gitlab"])
def test_the_schema_check_does_reject_a_broken_pipeline(platform: str, tmp_path: Path) -> None:
    document = yaml.safe_load(generated(platform))
    job = document["jobs"]["promote"] if platform == "github" else document["promote"]
    job["needs"] = {"not": "a list"}
    path = tmp_path / "broken.yml"
    path.write_text(yaml.safe_dump(document))
    assert schema_check(platform, path).returncode == 1


def _filled(value: Any, entry: dict[str, Any]) -> Any:
    """`value` with each ${{ matrix.KEY }} as GitHub fills it from the entry (absent: "")."""
    if isinstance(value, list):
        return [_filled(v, entry) for v in value]
    if isinstance(value, dict):
        return {k: _filled(v, entry) for k, v in value.items()}
    if not isinstance(value, str):
        return value
    import re
    return re.sub(r"\$\{\{ matrix\.(\w+) \}\}", lambda m: str(entry.get(m.group(1), "")), value)


def pipeline_jobs(platform: str, text: str) -> dict[str, dict[str, Any]]:
    """Every job as it runs: GitHub's matrix entries each a job of the entry's name (its
    env, runner and name filled in; `wave`: the matrix job), GitLab's jobs with what they
    extend; each with `commands`, the lines its shell runs, variables expanded."""
    document = yaml.safe_load(text)
    out: dict[str, dict[str, Any]] = {}
    if platform == "github":
        for wave, job in document["jobs"].items():
            for entry in job.get("strategy", {}).get("matrix", {}).get("include") or [{}]:
                filled = {**{k: _filled(v, entry) for k, v in job.items()}, "wave": wave}
                env = filled.get("env", {})
                filled["commands"] = [expand(line, env) for step in job["steps"]
                                      if "run" in step and step.get("name") != "install imgkit"
                                      for line in step["run"].splitlines()
                                      if not line.startswith("#")]
                out[entry.get("job", wave)] = filled
        return out
    for name, job in document.items():
        if name == "stages" or name.startswith("."):
            continue
        above = document.get(job.get("extends", ""), {})
        variables = {**above.get("variables", {}), **job.get("variables", {})}
        script = job.get("script") or above["script"]
        out[name] = {**above, **job, "commands": [expand(line, variables) for line in script
                                                  if not line.startswith("#")]}
    return out


def needs_of(platform: str, job: dict[str, Any]) -> list[str]:
    return [n if platform == "github" else n["job"] for n in job.get("needs", [])]


@pytest.mark.parametrize("platform", ["github", "gitlab"])
def test_build_then_verify_on_gpu_then_promote_along_the_dag(platform: str) -> None:
    plan = bundled_plan()
    found = pipeline_jobs(platform, generated(platform, plan))
    seen: list[str] = []
    for name, job in found.items():   # every job (GitHub: matrix job) after the jobs it needs
        assert set(needs_of(platform, job)) <= set(seen), name
        seen.append(job.get("wave", name))
    verify = [n for n in found if n.startswith("verify-")]
    assert len(verify) == sum(len(plan.get(t).platforms) for t in plan.finals)   # per platform
    wave = {name: job.get("wave", name) for name, job in found.items()}
    assert set(needs_of(platform, found["promote"])) >= {wave[v] for v in verify}
    for name in verify:
        runner = found[name]["runs-on"] if platform == "github" else found[name]["tags"]
        label = "gpu-arm64" if name.endswith("-arm64") else "gpu"
        assert runner == (["self-hosted", label] if platform == "github" else [label])
    for name in (n for n in found if n.startswith("build-")):   # arm64 on hosted arm64 runners
        arm = name.endswith("-arm64")
        if platform == "github":
            assert found[name]["runs-on"] == ("ubuntu-24.04-arm" if arm else "ubuntu-latest")
        else:
            assert found[name].get("tags") == (["saas-linux-small-arm64"] if arm else None)
    # the Paddle image is built on the CUDA 11.8 group, itself on the python roots (GitHub:
    # in the wave after theirs, each wave a matrix job)
    paddle, cuda, python = (found[n] for n in ("build-paddle-cuda11-8", "build-cuda11-8-bookworm",
                                                "build-python-bookworm"))
    if platform == "gitlab":
        assert needs_of(platform, paddle) == ["build-cuda11-8-bookworm"]
        assert needs_of(platform, cuda) == ["build-python-bookworm"]
    else:
        assert [python["wave"], cuda["wave"], paddle["wave"]] == [
            "build-python", "build-stacks", "build-frameworks"]
        assert needs_of(platform, paddle) == ["build-stacks"]
        assert needs_of(platform, cuda) == ["build-python"]
        assert found["build-paddle-jupyter-cuda11-8"]["wave"] == "build-extensions"
    assert needs_of(platform, python) == []


def test_both_platforms_run_the_same_commands() -> None:
    """Each job's lines as its shell runs them, GitHub's from a matrix entry, GitLab's from
    a template and its variables, are the lines of the platform-neutral job."""
    plan = bundled_plan()
    github = pipeline_jobs("github", generated("github", plan))
    gitlab = pipeline_jobs("gitlab", generated("gitlab", plan))
    neutral = {j.name: j for j in jobs(plan, settings())}
    assert sorted(github) == sorted(gitlab) == sorted(neutral)
    for name, job in neutral.items():
        assert github[name]["commands"] == gitlab[name]["commands"] == list(job.commands), name


def test_each_image_is_built_in_one_group_and_staged_where_others_need_it() -> None:
    plan = bundled_plan()
    found = groups(plan)
    tags = [t for g in found for t in g.tags]
    assert sorted(tags) == sorted(t.tag for t in plan.targets)
    by_name = {j.name: j for j in jobs(plan, settings())}
    paddle_build = by_name["build-paddle-cuda11-8"]
    assert (f"imgkit build --only {PADDLE} --candidates candidates --needed-by {JUPYTER} "
            "--reuse-from registry.example.com/ml") in paddle_build.commands
    staged_118 = next(c for c in by_name["build-cuda11-8-bookworm"].commands if "publish" in c)
    assert "imgkit/cuda:11.8-runtime-cudnn8.6-nccl2.21-py3.11-bookworm" in staged_118
    assert "imgkit/cuda:11.8-runtime-py3.11-bookworm " not in staged_118   # nobody else needs it
    # built and staged only as far as the jobs after it need them: the topmost final images
    # built on them (paddle-jupyter stands on paddle, so paddle goes unnamed)
    assert staged_118.count("--needed-by") == 1 and f"--needed-by {JUPYTER}" in staged_118
    python = by_name["build-python-bookworm"].commands
    assert all(c.count("--needed-by") > 1 for c in python if c.startswith("imgkit "))
    assert not any(f"--needed-by {PADDLE} " in c for c in python)
    assert not any("--needed-by" in c for c in by_name["build-pytorch-cuda12-4"].commands)
    promote = by_name["promote"]
    assert (f"imgkit promote {PADDLE} --candidates candidates --to registry.example.com/ml/paddle "
            "--tag 2.6.2-gpu-cuda11.8-cudnn8 --tag 2.6-gpu-cuda11.8-cudnn8 --tag latest-gpu"
            ) in promote.commands
    assert not any("--allow-gpu-unverified" in c for c in promote.commands)


def test_a_pipeline_without_gpus_says_so_in_every_verify_and_promote() -> None:
    by_name = {j.name: j for j in jobs(bundled_plan(cuda="11.8"), settings(verify_gpus="none"))}
    assert all("--gpus none" in c for j in by_name.values() if j.kind == "verify"
               for c in j.commands)
    assert all(c.endswith("--allow-gpu-unverified") for c in by_name["promote"].commands)


def passes_schema_and_zizmor(platform: str, text: str, tmp_path: Path) -> None:
    """The platform's schema takes the pipeline; a GitHub workflow with a cache, in a
    workflow that publishes, is what zizmor reviews."""
    written = tmp_path / f"{platform}.yml"
    written.write_text(text)
    assert schema_check(platform, written).returncode == 0
    if platform == "github":
        zizmor = shutil.which("zizmor") or shutil.which("zizmor", path=str(Path(sys.executable).parent))
        assert zizmor
        done = subprocess.run([zizmor, "--offline", "--min-severity", "medium", str(written)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("platform", ["github", "gitlab"])
def test_a_project_that_gates_on_scans_fetches_the_advisories_before_each_attest(
        platform: str, tmp_path: Path) -> None:
    """promote refuses an image with no signed scan in such a project: each verify job
    fetches the day's advisories, and attest scans with them and signs the scan. The
    database is cached from run to run (GitHub: under the day; GitLab: one key its jobs save
    again), so a day's jobs fetch it once."""
    plan = bundled_plan(cuda="11.8")
    text = generated(platform, plan, advisories="security/advisories")
    gating = pipeline_jobs(platform, text)
    verifies = [job for job in gating.values() if any("imgkit attest" in c for c in job["commands"])]
    assert verifies
    for job in verifies:
        commands = job["commands"]
        attest = next(i for i, c in enumerate(commands) if c.startswith("imgkit attest"))
        assert commands.index("imgkit scan --update-db") < attest
        if platform == "gitlab":
            assert job["cache"] == {"key": "imgkit-advisories", "paths": ["security/advisories/"]}
            continue
        cached = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/cache@")]
        assert [s["with"] for s in cached] == [{
            "path": "security/advisories", "key": "imgkit-advisories-${{ steps.day.outputs.day }}"}]
        day = next(s for s in job["steps"] if s.get("id") == "day")
        assert job["steps"].index(day) < job["steps"].index(cached[0])
    others = [job for name, job in gating.items() if job not in verifies and name != "rescan"]
    assert not any("cache" in job or any("actions/cache@" in str(s.get("uses", ""))
                                         for s in job.get("steps", [])) for job in others)
    passes_schema_and_zizmor(platform, text, tmp_path)
    plain = generated(platform, plan)
    assert "imgkit scan" not in plain and "actions/cache" not in plain and "cache:" not in plain


@pytest.mark.parametrize("platform", ["github", "gitlab"])
@pytest.mark.parametrize("locks", ["", "images/locks"])
def test_the_weekly_schedule_rescans_production_where_the_project_gates_on_scans(
        platform: str, locks: str, tmp_path: Path) -> None:
    """One scheduled job scans each final image's production tag against the day's
    advisories (cached like the verify jobs'), scanning all before it fails, keeping each
    result. Without locks it is all a scheduled run does; with them, the relock's rebuild
    runs beside it. A project that does not gate on scans gets no schedule for it."""
    plan = bundled_plan(cuda="11.8")
    text = generated(platform, plan, advisories="security/advisories", locks=locks)
    document, every = yaml.safe_load(text), pipeline_jobs(platform, text)
    rescan = every["rescan"]
    production = [f"registry.example.com/ml/{tag}" for tag in plan.finals]
    scans = [c for c in rescan["commands"] if c.startswith("imgkit scan registry.example.com")]
    assert [c.split()[2] for c in scans] == production
    assert all(c.endswith("|| failed=1") and " --json rescans/" in c for c in scans)
    assert rescan["commands"].index("imgkit scan --update-db") < rescan["commands"].index(scans[0])
    assert rescan["commands"][-1] == 'exit "$failed"'
    if platform == "github":
        assert (document.get(True) or document["on"])["schedule"] == [{"cron": "17 4 * * 1"}]
        assert rescan["if"] == "github.event_name == 'schedule'"
        assert any(str(s.get("uses", "")).startswith("actions/cache@") for s in rescan["steps"])
        assert any(s.get("with", {}).get("path") == "rescans" for s in rescan["steps"])
        pushed_only = [j for j in every.values() if j["if"] and "!= 'schedule'" in j["if"]]
        builds = [j for n, j in every.items() if n.startswith("build-")]
        assert all(j in pushed_only for j in builds) is (not locks), [j["if"] for j in builds]
    else:
        assert rescan["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "schedule"'}]
        assert rescan["stage"] == "check" and "check" in document["stages"]
        assert rescan["cache"]["paths"] == ["security/advisories/"]
        assert rescan["artifacts"]["paths"] == ["rescans/"]
        promote = every["promote"]["rules"][0]["if"]
        assert promote.startswith('$CI_PIPELINE_SOURCE != "schedule" && (') is (not locks), promote
    passes_schema_and_zizmor(platform, text, tmp_path)
    plain = generated(platform, plan)
    assert "rescan" not in plain and "schedule" not in plain


def test_a_slice_is_its_images_and_their_parents_only() -> None:
    found: list[Job] = jobs(bundled_plan(only=("paddle:*",)), settings())
    assert [j.name for j in found] == ["build-python-bookworm", "build-cuda11-8-bookworm",
                                       "build-paddle-cuda11-8",
                                       "verify-paddle-2-6-2-gpu-cuda11-8-cudnn8", "promote"]


def test_given_images_are_neither_rebuilt_nor_their_ancestors_needed() -> None:
    plan = bundled_plan(only=("paddle:*",))
    nccl = plan.get(PADDLE).parent
    assert nccl is not None
    assert split_given(plan, {nccl}) == ((PADDLE,), (nccl,))
    build, given = split_given(plan, set())
    assert build == tuple(t.tag for t in plan.targets) and given == ()
    assert split_given(plan, {PADDLE}) == ((), (PADDLE,))


def test_a_shared_layer_is_needed_only_while_an_image_above_it_must_be_built() -> None:
    """What --needed-by decides from: the later final images as the roots, production's
    unchanged ones given. paddle-jupyter stands on paddle, which stands on the CUDA stack."""
    plan = bundled_plan(only=("paddle*",))
    python, stack = plan.targets[0].tag, plan.get(PADDLE).parent
    assert python.startswith("imgkit/python:") and stack is not None
    # production holds paddle-jupyter unchanged: nothing below it is needed
    assert split_given(plan, {JUPYTER, PADDLE}, roots={JUPYTER}) == ((), (JUPYTER,))
    # paddle-jupyter moved, paddle did not: paddle is taken, the stack and python are not needed
    assert split_given(plan, {PADDLE}, roots={JUPYTER}) == ((JUPYTER,), (PADDLE,))
    # both moved: the whole chain is built
    build, taken = split_given(plan, set(), roots={JUPYTER})
    assert build == tuple(t.tag for t in plan.targets) and taken == ()
    assert python in build and stack in build


def candidate_file(path: Path, *entries: dict[str, str]) -> None:
    path.write_text(json.dumps({"seconds": 1.0, "published": list(entries)}))


def staged(image: str, image_id: str = "sha256:" + "a" * 64, status: str = "candidate") -> dict[str, str]:
    return {"image": image, "image_id": image_id, "destination": "127.0.0.1:5000/staging/x",
            "digest": "sha256:" + "b" * 64, "status": status}


def test_candidates_are_read_by_tag_and_bad_files_are_named(tmp_path: Path) -> None:
    candidate_file(tmp_path / "a.json", staged("x:1"), staged("x:2", status="refused"))
    found = candidates.load(tmp_path)
    assert list(found) == ["x:1"]
    assert found["x:1"].reference == "127.0.0.1:5000/staging/x@sha256:" + "b" * 64
    with pytest.raises(UsageError, match="x:2 is not among the candidates"):
        candidates.lookup(tmp_path, "x:2")
    candidate_file(tmp_path / "b.json", staged("x:1", image_id="sha256:" + "c" * 64))
    with pytest.raises(UsageError, match="staged as two images"):
        candidates.load(tmp_path)
    (tmp_path / "b.json").write_text("{not json")
    with pytest.raises(UsageError, match="b.json"):
        candidates.load(tmp_path)
    with pytest.raises(UsageError, match="not a directory"):
        candidates.load(tmp_path / "missing")


def test_each_platforms_image_staged_alone_is_found_by_tag_and_platform(tmp_path: Path) -> None:
    """A job of one platform stages its image alone (platform and index in its entry): a
    verify job finds it by tag and platform, a child build by its local name; the merged
    index, once there, is what the tag names."""
    from imgkit import platforms
    from imgkit.builder.reuse import staged as given
    arm = {**staged("x:1-arm64", image_id="sha256:" + "c" * 64), "platform": "linux/arm64",
           "index": "x:1", "digest": "sha256:" + "d" * 64}
    amd = {**staged("x:1"), "platform": "linux/amd64", "index": "x:1"}
    candidate_file(tmp_path / "amd.json", amd)
    candidate_file(tmp_path / "arm.json", arm)
    found = candidates.load_staged(tmp_path)
    assert found.images == {} and set(found.per_platform) == {("x:1", "linux/amd64"),
                                                               ("x:1", "linux/arm64")}
    assert candidates.lookup(tmp_path, "x:1", "linux/arm64").digest == "sha256:" + "d" * 64
    assert candidates.lookup(tmp_path, "x:1", "linux/amd64").digest == "sha256:" + "b" * 64
    with pytest.raises(UsageError, match="x:1 is not among the candidates .* for linux/s390x"):
        candidates.lookup(tmp_path, "x:1", "linux/s390x")
    took = given(found)
    assert took[platforms.local_ref("x:1", "linux/arm64")].candidate.image_id == "sha256:" + "c" * 64
    assert took[platforms.local_ref("x:1", "linux/arm64")].platform == "linux/arm64"
    # the index merged later wins for the tag itself
    candidate_file(tmp_path / "merged.json", {**staged("x:1", image_id=""), "image_id": "",
                                              "platforms": ["linux/amd64", "linux/arm64"],  # type: ignore[dict-item]
                                              "digest": "sha256:" + "e" * 64})
    assert candidates.lookup(tmp_path, "x:1").platforms == ("linux/amd64", "linux/arm64")
    # the same platform staged as two images is refused, naming tag and platform
    candidate_file(tmp_path / "again.json", {**arm, "image_id": "sha256:" + "f" * 64})
    with pytest.raises(UsageError, match=r"x:1 \(linux/arm64\) was staged as two images"):
        candidates.load_staged(tmp_path)


def test_merge_needs_every_platforms_image_in_one_repository(tmp_path: Path) -> None:
    from imgkit.publish.merge import to_merge
    plan = bundled_plan(cuda="12.8")
    cuda = next(t for t in plan.finals if t.startswith("imgkit/cuda:12.8"))
    selection = Selection(ROOT / "images", cuda="12.8")

    def entry(platform: str, destination: str = "127.0.0.1:5000/staging/imgkit/cuda") -> dict[str, str]:
        return {**staged(cuda), "platform": platform, "index": cuda, "destination": destination}
    candidate_file(tmp_path / "amd.json", entry("linux/amd64"))
    with pytest.raises(UsageError, match="no staged linux/arm64 image to merge .staged: linux/amd64"):
        to_merge(selection, [cuda], candidates.load_staged(tmp_path))
    candidate_file(tmp_path / "arm.json", entry("linux/arm64", "127.0.0.1:5000/other/imgkit/cuda"))
    with pytest.raises(UsageError, match="staged in different repositories"):
        to_merge(selection, [cuda], candidates.load_staged(tmp_path))
    candidate_file(tmp_path / "arm.json", entry("linux/arm64"))
    [merge] = to_merge(selection, [cuda], candidates.load_staged(tmp_path))
    assert (merge.registry, merge.repository) == ("127.0.0.1:5000", "staging/imgkit/cuda")
    assert [p for p, _ in merge.children] == ["linux/amd64", "linux/arm64"]
    with pytest.raises(UsageError, match="not an image of the matrix selection"):
        to_merge(selection, ["nope:1"], candidates.load_staged(tmp_path))
    pytorch = next(t for t in plan.finals if t.startswith("pytorch:"))      # amd64 only
    with pytest.raises(UsageError, match="made for linux/amd64 alone"):
        to_merge(selection, [pytorch], candidates.load_staged(tmp_path))
    assert [m.tag for m in to_merge(selection, [], candidates.load_staged(tmp_path))] == [cuda]


def imgkit_ci(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "imgkit", "ci", *args], capture_output=True,
                          text=True, cwd=cwd)


@pytest.mark.parametrize("args, message", [
    (["jenkins", "--registry", "r.example.com"], "no pipeline for 'jenkins'"),
    (["github", "--registry", "nohost"], "--registry 'nohost'"),
    (["github", "--registry", "r.example.com/ml", "--staging", "r.example.com/ml"],
     "--staging must differ"),
    (["github", "--registry", "r.example.com", "--verify-gpus", "0,,1"], "--gpus '0,,1'"),
    (["github", "--registry", "r.example.com", "--images", "/abs/images"], "relative to its root"),
    (["github", "--registry", "r.example.com", "--only", "nope*"], "'nope*'"),
    (["gitlab", "--registry", "r.example.com", "--compression", "xz"], "--compression 'xz'"),
    (["github", "--registry", "r.example.com", "--gpu-runner", ""], "--gpu-runner '' is not a runner"),
    (["gitlab", "--registry", "r.example.com", "--cpu-runner", "big box"], "'big box' is not a runner"),
    # GHCR's first path part is an account: ghcr.io/staging is someone else's
    (["github", "--registry", "ghcr.io"], "candidates would wait in ghcr.io/staging, the GitHub "
     "user or organisation called 'staging', not yours"),
    (["github", "--registry", "ghcr.io/imgkit"], "drop 'imgkit/' from the family's repository: "
     "--registry ghcr.io/imgkit names the GitHub user or organisation already"),
])
def test_bad_ci_options_are_exit_2_with_the_option_named(args: list[str], message: str,
                                                          tmp_path: Path) -> None:
    out = imgkit_ci(*args, "--out", str(tmp_path / "p.yml"))
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "p.yml").exists()


@pytest.mark.parametrize("platform, out", [("github", "../../.github/workflows/images.yml"),
                                           ("gitlab", "../../.gitlab-ci.yml")])
def test_a_project_in_a_folder_of_its_repository_runs_its_jobs_there(
        platform: str, out: str, tmp_path: Path) -> None:
    """A monorepo's project (platform/gpu/imgkit.toml): its commands run in its folder, and
    what the platform's own steps name (artifacts, caches, Pages) is named from the
    checkout's root, where the platform reads it."""
    repo, project = tmp_path / "repo", tmp_path / "repo" / "platform" / "gpu"
    shutil.copytree(ROOT / "images", project / "images")
    shutil.copytree(ROOT / "templates", project / "templates")
    (project / "imgkit.toml").write_text('registry = "r.example.com/ml"\nvulnerability_db = "db"\n')
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    made = imgkit_ci(platform, "--cuda", "11.8", "--pages", "--out", out, cwd=project)
    assert made.returncode == 0, made.stderr
    written = (project / out).resolve()
    assert schema_check(platform, written).returncode == 0
    pipeline = yaml.safe_load(written.read_text())
    assert written.read_text().splitlines()[0].endswith("in platform/gpu from the image matrix.")
    if platform == "github":
        assert pipeline["defaults"] == {"run": {"working-directory": "platform/gpu"}}
        # a push that changes neither the project nor the workflow runs nothing
        assert pipeline["on"]["push"]["paths"] == ["platform/gpu/**", ".github/workflows/images.yml"]
        paths = [step["with"]["path"] for job in pipeline["jobs"].values()
                 for step in job.get("steps", []) if "path" in step.get("with", {})]
        assert paths and all(line.startswith("platform/gpu") for p in paths
                             for line in p.splitlines() if line), paths
    else:
        assert pipeline[".imgkit"]["before_script"][-1] == "cd platform/gpu"
        assert pipeline["lock-check"]["before_script"][-1] == "cd platform/gpu" \
            if "lock-check" in pipeline else True
        kept = [p for name, job in pipeline.items() if isinstance(job, dict)
                for p in job.get("artifacts", {}).get("paths", []) + job.get("cache", {}).get("paths", [])]
        assert kept and all(p.startswith("platform/gpu/") for p in kept if p != "public"), kept
        assert pipeline["pages"]["artifacts"]["paths"] == ["public"]
        assert pipeline["pages"]["script"][-1] == 'mv public "$CI_PROJECT_DIR/public"'
        # a push that changes neither the project nor the pipeline file runs nothing; the
        # schedule's jobs (GitLab holds `changes` true there) are not held to it
        jobs = {name: job for name, job in pipeline.items()
                if isinstance(job, dict) and "extends" in job and not name.startswith(".")}
        assert {"rescan", "pages", "promote"} <= set(jobs) and len(jobs) > 5, list(jobs)
        for name, job in jobs.items():
            watched = [rule.get("changes") for rule in job["rules"]] if "rules" in job else [None]
            wanted = (None if name in ("relock", "rescan")
                      else {"paths": ["platform/gpu/**/*", ".gitlab-ci.yml"]})
            assert watched and all(w == wanted for w in watched), (name, job)
    # with no --out, the same file, where the platform reads it
    before = written.read_text()
    written.unlink()
    default = imgkit_ci(platform, "--cuda", "11.8", "--pages", cwd=project)
    assert default.returncode == 0 and written.read_text() == before, default.stderr
    # the same project at its repository's root: nothing moves
    shutil.move(str(project), str(tmp_path / "alone"))
    subprocess.run(["git", "init", "-q", str(tmp_path / "alone")], check=True)
    root = imgkit_ci(platform, "--cuda", "11.8", "--out", "p.yml", cwd=tmp_path / "alone")
    assert root.returncode == 0 and "platform/gpu" not in (tmp_path / "alone" / "p.yml").read_text()


def test_the_header_gives_the_command_that_regenerates_the_file(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "images", tmp_path / "matrix")
    shutil.copytree(ROOT / "templates", tmp_path / "templates")
    out = imgkit_ci("gitlab", "--images", "matrix", "--registry", "r.example.com/ml",
                    "--cuda", "11.8", "--gpu-runner", "a100", "--out", "ci.yml", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "ci.yml").read_text()
    assert text.startswith("# Generated by `imgkit ci gitlab --images matrix --cuda 11.8 "
                           "--registry r.example.com/ml --gpu-runner a100 --out ci.yml`")
    assert "imgkit build --images matrix $BUILD_ARGS" in text and "tags: [a100]" in text


@pytest.mark.parametrize("platform", ["github", "gitlab"])
def test_a_locked_matrix_gets_a_gate_on_push_and_a_weekly_relock_that_rebuilds(
        platform: str, tmp_path: Path) -> None:
    """A push's first builds wait for `imgkit lock --check --resolve`; the weekly schedule
    relocks instead, and its builds, verifies and promotion run on the relocked locks; both
    pass the platform's schema."""
    text = generated(platform, bundled_plan(cuda="11.8"), locks="images/locks",
                     selection_args=("--cuda", "11.8"))
    (tmp_path / "p.yml").write_text(text)
    out = schema_check(platform, tmp_path / "p.yml")
    assert out.returncode == 0, out.output
    document = yaml.safe_load(text)
    body = document["jobs"] if platform == "github" else document
    gate, relock = body["lock-check"], pipeline_jobs(platform, text)["relock"]
    script = gate["steps"][-1]["run"] if platform == "github" else gate["script"][0]
    assert script == "imgkit lock --check --resolve --cuda 11.8"
    relock_lines = (relock["commands"] if platform == "github"
                    else relock["script"])
    assert relock_lines == ["imgkit lock --cuda 11.8", "git diff --stat -- images/locks",
                            "git diff -- images/locks > relock.diff"]
    builds = {name: job for name, job in body.items() if name.startswith("build-")}
    roots = [job for job in builds.values()
             if not [n for n in job.get("needs", []) if (n if isinstance(n, str) else n["job"])
                     .startswith("build-")]]
    needs = [[n if isinstance(n, str) else n["job"] for n in job["needs"]] for job in roots]
    assert roots and all(n == ["lock-check", "relock"] for n in needs), needs
    later = [job for name, job in body.items()
             if name.startswith(("build-", "verify-")) or name == "promote"]
    if platform == "github":
        assert document[True]["schedule"] if True in document else document["on"]["schedule"]
        assert relock["if"] == "github.event_name == 'schedule'"
        assert gate["if"] == "github.event_name != 'schedule'"
        # a skipped gate (schedule) or relock (push) must not skip the jobs after it
        assert all(job["if"].startswith("${{ !cancelled() && !failure()") for job in later)
        assert "schedule" not in body["promote"]["if"]       # the weekly run promotes too
        assert {"name": "locks", "path": "images/locks", "if-no-files-found": "error"} in [
            s.get("with") for s in relock["steps"]]
        for job in later:
            taken = [s for s in job["steps"] if s.get("name") == "the relocked locks"]
            assert taken and taken[0]["if"] == "github.event_name == 'schedule'"
            assert taken[0]["with"] == {"name": "locks", "path": "images/locks"}
    else:
        assert relock["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "schedule"'}]
        assert gate["rules"] == [{"if": '$CI_PIPELINE_SOURCE != "schedule"'}]
        assert relock["stage"] == "check" and document["stages"][0] == "check"
        assert "docker login" not in str(gate)
        assert relock["artifacts"]["paths"] == ["images/locks", "relock.diff"]
        for job in later:
            assert {"job": "relock", "artifacts": True, "optional": True} in job["needs"]
            assert "rules" not in job or job is body["promote"]
        assert body["promote"]["rules"] == [{"if": "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH"}]


def test_build_jobs_reuse_what_production_holds_unchanged() -> None:
    """Every build job asks production for images built from the same inputs, and stages
    none that production holds as that very image."""
    built = [j for j in jobs(bundled_plan(cuda="11.8"), settings()) if j.kind == "build"]
    assert built
    for job in built:
        assert job.commands[0].startswith("imgkit build ")
        assert job.commands[0].endswith("--reuse-from registry.example.com/ml")
        assert "--candidate" in job.commands[2]
        assert "--reuse-from registry.example.com/ml --json" in job.commands[2]


def test_a_matrix_without_locks_gets_no_gate() -> None:
    names = {j.name for j in jobs(bundled_plan(cuda="11.8"), settings())}
    assert not names & {"lock-check", "relock"}


@pytest.mark.parametrize("platform", ["github", "gitlab"])
def test_a_two_platform_family_is_verified_on_a_runner_of_each_platform(platform: str,
                                                                        tmp_path: Path) -> None:
    """One staged index per image; a verify job per platform picks that platform's image
    from it on a runner of that platform; promote moves the index whole."""
    images = tmp_path / "images"
    images.mkdir()
    (images / "mini.yaml").write_text("family: mini\ncuda_libs: [cudart]\n"
                                      "platforms: [linux/amd64, linux/arm64]\n"
                                      "axes:\n  cuda: [\"12.8\"]\n")
    plan = load_plan(Selection(images))
    [final] = plan.finals
    text = generated(platform, plan, gpu_arm64_runner="grace")
    (tmp_path / "p.yml").write_text(text)
    out = schema_check(platform, tmp_path / "p.yml")
    assert out.returncode == 0, out.output
    by_name = {j.name: j for j in jobs(plan, settings(gpu_arm64_runner="grace"))}
    slugged = final.replace("/", "-").replace(":", "-").replace(".", "-")
    amd, arm = by_name[f"verify-{slugged}"], by_name[f"verify-{slugged}-arm64"]
    assert "--platform" not in amd.commands[0]
    assert f"imgkit attest {final} --candidates candidates --platform linux/arm64" in arm.commands[0]
    assert by_name["promote"].needs == (amd.name, arm.name)
    found = pipeline_jobs(platform, text)
    if platform == "github":
        assert found[arm.name]["runs-on"] == ["self-hosted", "grace"]
        assert found[amd.name]["runs-on"] == ["self-hosted", "gpu"]
    else:
        assert found[arm.name]["tags"] == ["grace"] and found[amd.name]["tags"] == ["gpu"]
    assert found[arm.name]["commands"] == list(arm.commands)


def test_each_platform_builds_on_its_own_runners_and_promote_merges_the_index_first() -> None:
    """A group with arm64 images: a build job per platform (`--platform`), the arm64 one
    after its parents' arm64 job, each staging its platform's images alone; each verify
    job after its platform's build; promote merges each two-platform image's index before
    promoting it, reading every platform's candidates."""
    plan = bundled_plan(cuda="12.8")
    by_name = {j.name: j for j in jobs(plan, settings(arm64_runner="graviton"))}
    cuda = next(t for t in plan.finals if t.startswith("imgkit/cuda:12.8"))
    amd, arm = by_name["build-cuda12-8-bookworm"], by_name["build-cuda12-8-bookworm-arm64"]
    assert (amd.platform, arm.platform) == ("linux/amd64", "linux/arm64")
    assert arm.needs == ("build-python-bookworm-arm64",) and amd.needs == ("build-python-bookworm",)
    assert arm.hands_over == "candidates/build-cuda12-8-bookworm-arm64.json"
    assert arm.commands[0].startswith(f"imgkit build --only {cuda} --platform linux/arm64 "
                                      "--candidates candidates")
    assert f"imgkit publish {cuda} --platform linux/arm64 --candidate" in arm.commands[2]
    assert by_name["build-pytorch-cuda12-8"].platform == ""      # amd64 only: one job, as ever
    slug = cuda.replace("/", "-").replace(":", "-").replace(".", "-")
    assert by_name[f"verify-{slug}-arm64"].needs == ("build-cuda12-8-bookworm-arm64",)
    assert by_name[f"verify-{slug}"].needs == ("build-cuda12-8-bookworm",)
    promote = by_name["promote"]
    assert promote.commands[0] == (f"imgkit merge {cuda} --candidates candidates "
                                   "--json candidates/merged.json")
    assert {"build-cuda12-8-bookworm", "build-cuda12-8-bookworm-arm64"} <= set(promote.reads)
    github = pipeline_jobs("github", RENDERERS["github"](list(by_name.values()),
                                                         settings(arm64_runner="graviton"), "x"))
    assert github["build-cuda12-8-bookworm-arm64"]["runs-on"] == "graviton"
    assert not any("setup-qemu" in str(step) for job in github.values() for step in job["steps"])


def test_told_to_emulate_one_job_builds_both_platforms_under_qemu() -> None:
    plan = bundled_plan(cuda="12.8")
    ci = settings(emulate_arm64=True)
    by_name = {j.name: j for j in jobs(plan, ci)}
    assert not any(n.endswith("-arm64") for n in by_name if n.startswith("build-"))
    cuda = by_name["build-cuda12-8-bookworm"]
    assert cuda.qemu and "--platform" not in cuda.commands[0]
    assert not any("imgkit merge" in c for c in by_name["promote"].commands)   # staged whole
    github = pipeline_jobs("github", RENDERERS["github"](list(by_name.values()), ci, "x"))
    steps = [s.get("uses", "") for s in github["build-cuda12-8-bookworm"]["steps"]]
    from imgkit.export.actions import uses
    assert uses("docker/setup-qemu-action") in steps
    assert github["build-cuda12-8-bookworm"]["runs-on"] == "ubuntu-latest"


def test_a_shared_layer_job_names_the_later_images_of_its_own_platforms() -> None:
    """Split by platform, each python job names the topmost final images of its platform
    that stand on it; emulated, the one job names them all; the last jobs name none."""
    plan = bundled_plan(cuda="12.8")
    split = {j.name: j for j in jobs(plan, settings())}
    named = {name: [w for c in j.commands if c.startswith("imgkit build")
                    for w in c.split(" --needed-by ")[1:]] for name, j in split.items()}
    arm64 = {t.tag for t in plan.targets if "linux/arm64" in t.platforms}
    assert named["build-python-bookworm-arm64"]
    assert {w.split()[0] for w in named["build-python-bookworm-arm64"]} <= arm64
    assert len(named["build-python-bookworm"]) >= len(named["build-python-bookworm-arm64"])
    emulated = {j.name: j for j in jobs(plan, settings(emulate_arm64=True))}
    one = next(c for c in emulated["build-python-bookworm"].commands if c.startswith("imgkit build"))
    assert "--platform" not in one and one.count("--needed-by") == len(named["build-python-bookworm"])
    last = [n for n in split if n.startswith("build-pytorch")]     # nothing stands on theirs
    assert last and not any(named[n] for n in last)


@pytest.mark.parametrize("row, said", [
    ({**staged("x:1"), "platforms": "linux/amd64"}, "entry for 'x:1' has bad platforms"),
    ({**staged("x:1"), "platforms": [3]}, "entry for 'x:1' has bad platforms"),
    ({**staged("x:1"), "digest": "sha256:short"}, "entry for 'x:1' has no usable destination"),
    ({**staged("x:1"), "image_id": 7}, "entry for 'x:1' has no usable destination"),
    ({**staged("x:1"), "destination": ""}, "entry for 'x:1' has no usable destination"),
])
def test_a_candidates_row_a_job_cannot_use_is_refused_naming_it(tmp_path: Path,
                                                                 row: dict[str, object],
                                                                 said: str) -> None:
    candidate_file(tmp_path / "a.json", row)           # type: ignore[arg-type]
    with pytest.raises(UsageError, match=said):
        candidates.load(tmp_path)


def test_a_candidates_row_is_read_loosely_where_it_can_be(tmp_path: Path) -> None:
    """A field a later imgkit adds is ignored; a row of another status is skipped whatever
    else it holds."""
    candidate_file(tmp_path / "a.json", {**staged("x:1"), "signed_by": "someone"},
                   {**staged("x:2", status="refused"), "platforms": "junk"})
    assert list(candidates.load(tmp_path)) == ["x:1"]


def test_the_release_branch_is_a_setting(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from imgkit.cli import app
    for platform, said in (("github", "github.ref == 'refs/heads/release/2.x'"),
                           ("gitlab", "$CI_COMMIT_BRANCH == \"release/2.x\"")):
        out = tmp_path / f"{platform}.yml"
        result = CliRunner().invoke(app, ["ci", platform, "--registry", "r.example.com/ml",
                                          "--only", "paddle:*", "--release-branch", "release/2.x",
                                          "--out", str(out)])
        assert result.exit_code == 0, result.output
        text = out.read_text()
        assert said in text and "--release-branch release/2.x" in text.splitlines()[0], platform
    result = CliRunner().invoke(app, ["ci", "github", "--registry", "r.example.com/ml",
                                      "--release-branch", "main..x", "--out", str(out)])
    assert result.exit_code == 2 and "not a branch name" in result.output


@pytest.mark.parametrize("platform", ["github", "gitlab"])
def test_a_familys_declared_checks_reach_its_verify_jobs_only(platform: str) -> None:
    """paddle-jupyter declares a CST file (checks:): its verify job judges it in the same
    signed verdict; the other images' jobs pass none; the path is from the repository's root."""
    found = pipeline_jobs(platform, generated(platform))
    jupyter = "verify-paddle-jupyter-2-6-2-gpu-cuda11-8-cudnn8"
    [attest] = found[jupyter]["commands"]
    assert "--checks images/checks/paddle-jupyter.yaml" in attest
    assert not any("--checks" in c for name, job in found.items() if name != jupyter
                   for c in job["commands"])


def test_a_declared_checks_file_that_is_not_there_is_said_at_its_key(tmp_path: Path) -> None:
    images = tmp_path / "images"
    shutil.copytree(ROOT / "images", images)
    text = (images / "paddle-jupyter.yaml").read_text().replace("checks/paddle-jupyter.yaml",
                                                                "checks/missing.yaml")
    (images / "paddle-jupyter.yaml").write_text(text)
    from imgkit.errors import SpecError
    with pytest.raises(SpecError) as caught:
        load_plan(Selection(images))
    assert caught.value.key == "checks" and "missing.yaml is not a file" in str(caught.value)


@pytest.mark.parametrize("platform", ["github", "gitlab"])
def test_pages_publish_every_verdict_of_the_release_branch_as_the_site(platform: str,
                                                                        tmp_path: Path) -> None:
    plan = bundled_plan(cuda="11.8")
    path = tmp_path / f"{platform}.yml"
    chosen = {"pages": True, "selection_args": ("--cuda", "11.8")}
    path.write_text(generated(platform, plan, **chosen))
    out = schema_check(platform, path)
    assert out.returncode == 0, out.output
    document = yaml.safe_load(path.read_text())
    listed = jobs(plan, settings(**chosen))
    verify = [j for j in listed if j.kind == "verify"]
    # every verify job keeps its verdict beside its report; the site is made of them all
    assert verify and all(j.verdict == f"verdicts/{j.name}.json" for j in verify)
    assert all(any("--json $VERDICT" in line for line in j.script) for j in verify)
    site = listed[-1]
    # after promote: production read for each final image's signed verdict, checked against
    # the signer promote trusts (keyless here: this very pipeline's identity)
    assert (site.name, site.needs) == ("pages", (*(j.name for j in verify), "promote"))
    assert site.script == ("mkdir -p verdicts",
                           "imgkit site --cuda 11.8 --verdicts verdicts --registry "
                           "registry.example.com/ml --out public")
    keyed = jobs(plan, settings(**chosen, trusted_key="cosign.pub", signing_key="env://KEY"))[-1]
    assert "--registry registry.example.com/ml --trusted-key cosign.pub --out" in keyed.script[-1]
    if platform == "gitlab":
        pages = document["pages"]
        assert pages["artifacts"] == {"paths": ["public"]}
        assert [n["job"] for n in pages["needs"] if n["artifacts"]] == [j.name for j in verify]
        # failed verdicts too (a red cell is the point), and only the default branch's
        assert pages["rules"] == [{"if": "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH", "when": "always"}]
        assert "before_script" not in pages                # the registry login of every job
        assert pages["variables"] == document["promote"]["variables"]
        assert "IMGKIT_CERTIFICATE_IDENTITY" in pages["variables"]
        kept = document[verify[0].name]["artifacts"]["paths"]
        assert kept == [f"{verify[0].name}.xml", verify[0].verdict]
        return
    pages, deploy = document["jobs"]["pages"], document["jobs"]["deploy-pages"]
    assert pages["if"] == "${{ !cancelled() && github.ref_name == github.event.repository.default_branch }}"
    assert "permissions" not in pages                 # the workflow's contents: read
    assert pages["env"] == document["jobs"]["promote"]["env"]
    assert any("login-action" in s.get("uses", "") for s in pages["steps"])
    assert any("cosign-installer" in s.get("uses", "") for s in pages["steps"])
    assert pages["steps"][-1]["with"] == {"path": "public"}
    assert any(s.get("with", {}).get("pattern") == "report-verify-*" for s in pages["steps"])
    # only the deploy job may write Pages, in the environment a repository can guard
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages" and deploy["needs"] == ["pages"]
    writers = [n for n, j in document["jobs"].items() if "pages" in j.get("permissions", {})]
    assert writers == ["deploy-pages"]


def test_without_pages_nothing_of_it_is_written() -> None:
    plain = jobs(bundled_plan(cuda="11.8"), settings())
    assert not any(j.kind == "site" or j.verdict for j in plain)
    assert "pages" not in generated("github") and "VERDICT" not in generated("gitlab")


def test_zstd_staging_is_asked_of_every_build_job_and_recorded_in_the_header(tmp_path: Path) -> None:
    """`ci --compression zstd`: each build job stages with zstd layers (promote then copies
    those very digests); gzip, the default, is not spelled out."""
    plain = [j for j in jobs(bundled_plan(cuda="11.8"), settings()) if j.kind == "build"]
    zstd = [j for j in jobs(bundled_plan(cuda="11.8"), settings(compression="zstd")) if j.kind == "build"]
    assert plain and not any("--compression" in line for j in plain for line in j.script)
    assert all("--candidate" in j.script[3] and "--compression zstd" in j.script[3] for j in zstd)
    out = imgkit_ci("gitlab", "--registry", "r.example.com/ml", "--cuda", "11.8", "--compression",
                    "zstd", "--out", str(tmp_path / "ci.yml"))
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "ci.yml").read_text()
    assert "--compression zstd --out" in text.splitlines()[0] + text.splitlines()[1]
    assert "--compression zstd --json" in text


def written_pipeline(platform: str, tmp_path: Path, *extra: str) -> Path:
    from typer.testing import CliRunner

    from imgkit.cli import app
    out = tmp_path / f"{platform}.yml"
    result = CliRunner().invoke(app, ["ci", platform, "--registry", "r.example.com/ml",
                                      "--only", "paddle:*", "--pages", *extra, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("release, default", [("", "main"), ("release/2.x", "main"),
                                              ("main", "develop")])
def test_the_github_workflow_promotes_on_its_release_branch_and_nowhere_else(
        tmp_path: Path, release: str, default: str) -> None:
    """The workflow's own job conditions, evaluated for a push (GitHub's expression
    language: tests/helpers/gha.py): its release branch builds, verifies, promotes and
    publishes the site; a push to another branch, or a run from one (workflow_dispatch),
    builds, verifies and stops, as a GitLab pipeline of another branch does."""
    from .helpers.gha import jobs_run, push_to
    workflow = yaml.safe_load(written_pipeline(
        "github", tmp_path, *(["--release-branch", release] if release else [])).read_text())
    branch = release or default
    # every branch (no tag) but Dependabot's, whose runs get no secrets for the registry
    assert workflow["on"]["push"]["branches"] == ["**", "!dependabot/**"]
    publish = {"promote", "pages", "deploy-pages"}
    ran = jobs_run(workflow, push_to(branch, default=default))
    assert publish <= ran and any(n.startswith("verify") for n in ran), ran
    for event in ("push", "workflow_dispatch"):
        other = jobs_run(workflow, {**push_to("feature", default=default),
                                    "github.event_name": event})
        assert any(n.startswith("verify") for n in other) and not publish & other, other


def test_the_gitlab_pipeline_promotes_on_its_release_branch_and_nowhere_else(tmp_path: Path) -> None:
    """gitlab-ci-local reads the pipeline's rules as GitLab does, for the checkout's branch."""
    runner = gitlab_ci_local()
    checkout = tmp_path / "repo"
    checkout.mkdir()
    written = written_pipeline("gitlab", tmp_path, "--release-branch", "release/2.x")
    shutil.copy(written, checkout / ".gitlab-ci.yml")
    shutil.copytree(ROOT / "images", checkout / "images", ignore=shutil.ignore_patterns("locks"))

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=checkout, check=True, capture_output=True,
                       env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})
    git("init", "-q", "-b", "release/2.x")
    git("remote", "add", "origin", "https://gitlab.example.com/ml/images.git")
    git("add", "-A")
    git("commit", "-qm", "the matrix")

    def listed() -> str:
        done = subprocess.run([runner, "--list"], cwd=checkout, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout
    on_release = listed()
    assert re.search(r"^promote\s", on_release, re.M) and re.search(r"^pages\s", on_release, re.M)
    git("checkout", "-q", "-b", "feature")
    on_feature = listed()
    assert re.search(r"^verify-", on_feature, re.M), on_feature
    assert not re.search(r"^(promote|pages)\s", on_feature, re.M), on_feature


def test_ci_check_says_when_the_committed_pipeline_no_longer_matches_the_matrix(tmp_path: Path) -> None:
    from .helpers.cli import imgkit
    images = tmp_path / "images"
    shutil.copytree(ROOT / "images", images, ignore=shutil.ignore_patterns("locks"))
    out = tmp_path / ".github" / "workflows" / "images.yml"
    args = ["ci", "github", "--images", "images", "--registry", "r.example.com/ml",
            "--cuda", "11.8", "--out", ".github/workflows/images.yml"]
    assert imgkit(*args, cwd=tmp_path).returncode == 0
    same = imgkit(*args, "--check", cwd=tmp_path)
    assert same.returncode == 0 and "is what the matrix writes" in same.stderr, same.stderr
    jupyter = images / "paddle-jupyter.yaml"            # a family renamed its repository
    jupyter.write_text(jupyter.read_text().replace("repository: paddle-jupyter",
                                                   "repository: paddle-notebook"))
    before = out.read_text()
    stale = imgkit(*args, "--check", cwd=tmp_path)
    said = stale.stderr
    assert stale.returncode == 1 and "is stale" in said and "write it again: imgkit ci github" in said
    assert "+" in said and "paddle-notebook" in said and out.read_text() == before  # nothing written
    missing = imgkit(*args[:-1], "none.yml", "--check", cwd=tmp_path)
    assert missing.returncode == 2 and "none.yml" in missing.stderr


@pytest.mark.parametrize("platform", ["github", "gitlab"])
@pytest.mark.parametrize("keyed", [False, True])
def test_with_max_age_each_verify_job_may_keep_the_signed_verdict_its_image_carries(
        platform: str, keyed: bool, tmp_path: Path) -> None:
    """`imgkit ci --max-age 7d`: each verify job may keep the signed verdict its image
    carries, checked against the signer promote trusts (a key, or keyless this pipeline's
    identity in the job's environment)."""
    keys = {"signing_key": "env://COSIGN_PRIVATE_KEY", "trusted_key": "cosign.pub"} if keyed else {}
    text = generated(platform, bundled_plan(cuda="11.8"), max_age="7d", **keys)
    passes_schema_and_zizmor(platform, text, tmp_path)
    by_name = pipeline_jobs(platform, text)
    trust = " --trusted-key cosign.pub" if keyed else ""
    verify = [j for name, j in by_name.items() if name.startswith("verify-")]
    # its own values stay beside the identity: the image it judges, its report
    attests = [c.split() for j in verify for c in j["commands"] if c.startswith("imgkit attest")]
    assert len(attests) == len(verify) and all(
        not words[2].startswith("-") and " ".join(words).endswith(
            f"--max-age 7d{trust} --gpus all --junit {name}.xml")
        for words, name in zip(attests, (n for n in by_name if n.startswith("verify-"))))
    promote = [c for c in by_name["promote"]["commands"] if c.startswith("imgkit promote")]
    # promote checks each verdict as before: no age of its own, so one kept near the age
    # is not refused minutes later
    assert promote and all("--max-age" not in c and c.endswith(trust) for c in promote)
    for job in (*verify, by_name["promote"]):
        said = job.get("env" if platform == "github" else "variables", {})
        assert ("IMGKIT_CERTIFICATE_IDENTITY" in said) is not keyed, said
    plain = pipeline_jobs(platform, generated(platform, bundled_plan(cuda="11.8"), **keys))
    assert not any("--max-age" in c for j in plain.values() for c in j["commands"])


@pytest.mark.parametrize("platform, host", [("github", "ghcr.io"), ("gitlab", "registry.gitlab.com")])
def test_the_platforms_own_registry_is_logged_in_with_the_jobs_token(
        platform: str, host: str, tmp_path: Path) -> None:
    """GHCR on GitHub and GitLab's own registry need no secret: each job logs in with the
    token the platform gives it (GitHub: with the `packages` permission it needs, write where
    it pushes, read where it pulls; GitLab: where the host is $CI_REGISTRY, known only when
    the job runs, and the team set no variables of its own). A staging registry elsewhere
    keeps its own."""
    own = CiSettings(registry=parse_destination(f"{host}/team/images"),
                     staging=parse_destination(f"{host}/team/images/staging"),
                     advisories="security/advisories")
    text = RENDERERS[platform](jobs(bundled_plan(cuda="11.8"), own), own, "imgkit ci")
    secret = re.compile(r"(?<![A-Z_])(REGISTRY|STAGING)_(USERNAME|PASSWORD)")
    passes_schema_and_zizmor(platform, text, tmp_path)
    if platform == "gitlab":
        before = yaml.safe_load(text)[".imgkit"]["before_script"]
        logins = [line for line in before if "docker login" in line]
        assert len(logins) == 1
        # the line as a runner's shell runs it, with a docker that says how it was called
        fake = tmp_path / "bin"
        fake.mkdir()
        (fake / "docker").write_text('#!/bin/sh\nread -r password\necho "$* as $password"\n')
        (fake / "docker").chmod(0o755)

        def logged_in(**env: str) -> str:
            done = subprocess.run(["sh", "-euc", logins[0]], capture_output=True, text=True,
                                  env={"PATH": f"{fake}:/usr/bin:/bin", **env})
            assert done.returncode == 0, done.stderr
            return done.stdout.strip()
        job = {"CI_REGISTRY_USER": "gitlab-ci-token", "CI_REGISTRY_PASSWORD": "job-token"}
        assert logged_in(CI_REGISTRY=host, **job) == \
            f"login --username gitlab-ci-token --password-stdin {host} as job-token"
        team = {"REGISTRY_USERNAME": "deploy", "REGISTRY_PASSWORD": "tok"}
        assert logged_in(CI_REGISTRY=host, **job, **team) == \
            f"login --username deploy --password-stdin {host} as tok"       # theirs win
        assert logged_in(CI_REGISTRY="registry.other.example", **job, **team) == \
            f"login --username deploy --password-stdin {host} as tok"
    else:
        assert not secret.search(text), text
        document = yaml.safe_load(text)
        assert document["permissions"] == {"contents": "read"}     # no write for the workflow
        for name, job in document["jobs"].items():
            logins = [s["with"] for s in job["steps"] if "login-action" in str(s.get("uses", ""))]
            wanted = ({"packages": "write"} if name.startswith(("build", "verify", "promote"))
                      else {"packages": "read"} if logins else {})
            assert {k: v for k, v in job.get("permissions", {}).items() if k == "packages"} \
                == wanted, (name, job.get("permissions"))
            assert all(login == {"registry": host, "username": "${{ github.actor }}",
                                 "password": "${{ secrets.GITHUB_TOKEN }}"} for login in logins)
    # production there, staging on another host: that one's own secrets
    split = replace(own, staging=parse_destination("registry.example.com/staging"))
    text = RENDERERS[platform](jobs(bundled_plan(cuda="11.8"), split), split, "imgkit ci")
    assert {m.group(0) for m in secret.finditer(text)} >= {"STAGING_USERNAME", "STAGING_PASSWORD"}
    passes_schema_and_zizmor(platform, text, tmp_path)


def test_imgkit_ci_says_which_secrets_its_logins_need(tmp_path: Path) -> None:
    said = imgkit_ci("github", "--cuda", "11.8", "--registry", "registry.example.com/ml",
                     "--out", str(tmp_path / "a.yml"))
    assert said.returncode == 0, said.stderr
    assert "its jobs log in with REGISTRY_USERNAME, REGISTRY_PASSWORD: add them as the " \
           "repository's secrets" in said.stderr
    own = imgkit_ci("github", "--cuda", "11.8", "--registry", "ghcr.io/team",
                    "--out", str(tmp_path / "b.yml"))
    assert own.returncode == 0 and "log in with" not in own.stderr, own.stderr
