"""`imgkit build --engine buildx`, the pure parts: what one bake builds and from where, and
what BuildKit's plain progress says about each image."""
from __future__ import annotations

from pathlib import Path

from imgkit.builder.bakeplan import plan_bake
from imgkit.builder.buildenv import BuildEnv
from imgkit.builder.buildx import (
    BakeProgress,
    secrets_for,
    slow_secret_steps_note,
    why_not_this_engine,
    write_ca_copy,
)
from imgkit.builder.freshness import Freshness
from imgkit.matrix.compat import load
from imgkit.matrix.plan import make_plan
from imgkit.matrix.spec import Spec, parse_family
from imgkit.render.bake import target_name
from imgkit.render.contexts import render_plan

ROOT = Path(__file__).resolve().parent.parent
FAMILY = {"family": "mini", "cuda_libs": ["cudart"], "axes": {"cuda": ["11.8", "12.4"]}}
PYTHON = "imgkit/python:3.11-bookworm"
CUDA118 = "imgkit/cuda:11.8-cudart-py3.11-bookworm"
CUDA124 = "imgkit/cuda:12.4-cudart-py3.11-bookworm"


def contexts():
    plan = make_plan(Spec((parse_family("images/mini.yaml", FAMILY),)), load())
    return render_plan(plan, ROOT / "templates", buildkit=True)


def fresh(*stale: str) -> dict[str, Freshness]:
    return {t: Freshness("inputs changed" if t in stale else "", None)
            for t in (PYTHON, CUDA118, CUDA124)}


def targets(plan) -> dict[str, dict]:
    return plan.document["target"]


def test_only_what_is_stale_is_baked_and_fresh_parents_come_from_the_store(tmp_path: Path) -> None:
    plan = plan_bake(contexts(), fresh(CUDA124), local_store=True, context_dir=tmp_path,
                     secrets=[], force=lambda tag: False)
    assert plan.build == (CUDA124,)
    target = targets(plan)[target_name(CUDA124)]
    assert target["contexts"] == {PYTHON: f"docker-image://{PYTHON}"}
    assert target["context"] == str(tmp_path / "imgkit_cuda_12.4-cudart-py3.11-bookworm")
    assert "output" not in target and "no-cache" not in target


def test_a_stale_parent_is_built_once_in_the_bake_and_its_children_with_it(tmp_path: Path) -> None:
    plan = plan_bake(contexts(), fresh(PYTHON), local_store=True, context_dir=tmp_path,
                     secrets=[], force=lambda tag: False)
    assert plan.build == (PYTHON, CUDA118, CUDA124)
    assert plan.why[CUDA118] == f"parent {PYTHON} is rebuilt"
    assert targets(plan)[target_name(CUDA118)]["contexts"] == {PYTHON: f"target:{target_name(PYTHON)}"}
    assert targets(plan)[target_name(PYTHON)]["contexts"] == {
        "imgkit/debian:bookworm": "docker-image://imgkit/debian:bookworm"}
    assert plan.document["group"]["default"]["targets"] == [  # type: ignore[index]
        target_name(t) for t in plan.build]


def test_a_builder_without_the_engines_store_builds_the_parents_and_loads_the_results(
        tmp_path: Path) -> None:
    plan = plan_bake(contexts(), fresh(CUDA124), local_store=False, context_dir=tmp_path,
                     secrets=[], force=lambda tag: False)
    assert plan.build == (PYTHON, CUDA124)
    assert "cannot see the engine's images" in plan.why[PYTHON]
    assert targets(plan)[target_name(PYTHON)]["contexts"] == {
        "imgkit/debian:bookworm": "docker-image://debian:bookworm-slim"}   # from its registry
    assert all(t["output"] == ["type=docker"] for t in targets(plan).values())


def test_force_is_no_cache_for_what_it_names_and_secrets_never_hold_a_value(tmp_path: Path) -> None:
    env = BuildEnv(ca_bundle=Path("/etc/ssl/certs/ca-certificates.crt"),
                   index_url="https://user:token@pypi.example/simple")
    secrets, environ = secrets_for(env)
    plan = plan_bake(contexts(), fresh(), local_store=True, context_dir=tmp_path,
                     secrets=secrets, force=lambda tag: tag == CUDA118)
    assert plan.build == (CUDA118,)
    assert targets(plan)[target_name(CUDA118)]["no-cache"] is True
    assert "token" not in str(plan.document)
    assert environ == {"IMGKIT_INDEX_URL": "https://user:token@pypi.example/simple"}
    assert secrets == ["id=imgkit-ca-bundle,src=/etc/ssl/certs/ca-certificates.crt",
                       "id=imgkit-index-url,env=IMGKIT_INDEX_URL"]


def test_the_ca_bundle_is_read_from_a_copy_in_the_bakes_own_folder(tmp_path: Path) -> None:
    """buildx 0.19 and later refuse a secret file outside the folder bake runs in (without
    `--allow fs.read=`, which 0.13 lacks): the bundle is copied there, byte for byte."""
    bundle = tmp_path / "corporate-ca.pem"
    bundle.write_bytes(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    folder = tmp_path / "bake"
    folder.mkdir()
    copy = write_ca_copy(BuildEnv(ca_bundle=bundle), folder)
    assert copy is not None and copy.parent == folder and copy.read_bytes() == bundle.read_bytes()
    secrets, _ = secrets_for(BuildEnv(ca_bundle=bundle), copy)
    assert secrets == [f"id=imgkit-ca-bundle,src={copy}"]
    assert write_ca_copy(BuildEnv(ca_bundle=None), folder) is None


def test_progress_gives_a_shared_step_to_the_parent_whose_dockerfile_has_it() -> None:
    """BuildKit runs the parent's step once and may label it with a child's target name:
    its failure is the parent's, not the child's."""
    by_tag = {c.target.tag: c for c in contexts()}
    progress = BakeProgress({target_name(t): t for t in by_tag},
                            {t: c.dockerfile for t, c in by_tag.items()})
    python_run = next(line for line in by_tag[PYTHON].dockerfile.split("\nRUN ")[1:]
                      if "apt-get update" in line.split("\n", 1)[0])
    first_line = "RUN " + " ".join(python_run.replace("\\\n", " ").split())[:300]
    assert progress.feed(f"#9 [{target_name(CUDA118)} 1/5] {first_line}") == (
        PYTHON, f"[{target_name(CUDA118)} 1/5] {first_line}")
    progress.feed("#9 12.5 E: Unable to locate package python3-venv")
    progress.feed('#9 ERROR: process "/bin/sh -c apt-get update" did not complete successfully: '
                  'exit code: 100')
    assert list(progress.failed) == [PYTHON]
    step, reason = progress.failed[PYTHON]
    assert step.startswith("RUN apt-get update") and reason == "Unable to locate package python3-venv"
    assert "E: Unable to locate package python3-venv" in progress.logs[PYTHON]


def test_progress_of_a_bake_of_one_image_is_that_images() -> None:
    """A bake of one target (one per image, builder/chains.py): buildx names no target in
    its steps, and every step, its log and its failure are that image's."""
    progress = BakeProgress({target_name(CUDA118): CUDA118}, {})
    assert progress.feed("#1 [internal] load build definition from Dockerfile") == (
        CUDA118, "[internal] load build definition from Dockerfile")
    assert progress.feed("#7 [stage-0 3/5] RUN sleep 600") == (CUDA118, "[stage-0 3/5] RUN sleep 600")
    progress.feed("#7 0.4 pip: no matching distribution")
    progress.feed('#7 ERROR: process "/bin/sh -c sleep 600" did not complete successfully: exit code: 1')
    step, reason = progress.failed[CUDA118]
    assert step.startswith("RUN sleep 600") and "exit code: 1" in reason
    assert "pip: no matching distribution" in progress.logs[CUDA118]
    # buildx 0.29 names no stage either: "[3/5] RUN ..."
    progress = BakeProgress({target_name(CUDA118): CUDA118}, {})
    assert progress.feed("#6 [2/2] RUN apt-get install -y ffmpg") == (
        CUDA118, "[2/2] RUN apt-get install -y ffmpg")
    progress.feed("#6 2.092 E: Unable to locate package ffmpg")
    progress.feed('#6 ERROR: process "/bin/sh -c apt-get install -y ffmpg" did not complete '
                  'successfully: exit code: 100')
    step, reason = progress.failed[CUDA118]          # apt's own words, not its exit code
    assert step.startswith("RUN apt-get install") and reason == "Unable to locate package ffmpg"


def test_a_failed_pip_step_is_said_in_pips_last_words_not_its_notice() -> None:
    """pip prints 'ERROR: Ignored the following yanked versions' before why it failed; that
    notice was the build summary's reason for a pin the index does not have."""
    progress = BakeProgress({target_name(CUDA118): CUDA118}, {})
    progress.feed("#7 [2/3] RUN imgkit-build-env pip install einops==99.0.0")
    progress.feed("#7 3.1 ERROR: Ignored the following yanked versions: 0.6.2rc0")
    progress.feed("#7 3.1 ERROR: Could not find a version that satisfies the requirement "
                  "einops==99.0.0 (from versions: 0.8.0, 0.8.1)")
    progress.feed("#7 3.1 ERROR: No matching distribution found for einops==99.0.0")
    progress.feed('#7 ERROR: process "/bin/sh -c imgkit-build-env pip install einops==99.0.0" '
                  'did not complete successfully: exit code: 1')
    progress.feed("#9 ERROR: failed to solve: process did not complete")   # after the step
    assert progress.failed[CUDA118][1] == "No matching distribution found for einops==99.0.0"
    # an error line of a step that passed is no reason for the next step's failure
    progress = BakeProgress({target_name(CUDA118): CUDA118}, {})
    progress.feed("#7 [2/3] RUN imgkit-build-env pip install rich==13.9.4")
    progress.feed("#7 3.1 ERROR: Ignored the following versions that require a different python")
    progress.feed("#7 3.2 ERROR: some tool said this, and went on")
    progress.feed("#7 DONE 4.0s")
    progress.feed("#8 [3/3] RUN imgkit-link-libs")
    progress.feed('#8 ERROR: process "/bin/sh -c imgkit-link-libs" did not complete '
                  'successfully: exit code: 7')
    assert progress.failed[CUDA118][1] == "exit code: 7"


def test_progress_knows_when_each_image_was_named_with_or_without_a_duration() -> None:
    progress = BakeProgress({target_name(CUDA118): CUDA118, target_name(CUDA124): CUDA124}, {})
    progress.feed(f"#20 [{target_name(CUDA118)}] exporting to image")
    progress.feed(f"#20 naming to docker.io/{CUDA118} done")
    progress.feed(f"#21 naming to docker.io/{CUDA124} 0.3s done")
    progress.feed("#22 naming to docker.io/library/other:1 done")
    assert set(progress.named) == {CUDA118, CUDA124}


def test_another_platforms_images_are_targets_of_their_own_on_its_parents(tmp_path: Path) -> None:
    """An arm64 image is built for arm64 alone, tagged TAG-arm64 (as the docker-py builder
    keeps it), on its parent's arm64 image from the store (or its arm64 target), with the
    same input hash as the amd64 image."""
    from imgkit import labels, platforms
    family = {**FAMILY, "platforms": ["linux/amd64", "linux/arm64"], "axes": {"cuda": ["12.4"]}}
    plan = make_plan(Spec((parse_family("images/mini.yaml", family),)), load())
    arm = [c for p in ("linux/amd64", "linux/arm64")
           for c in render_plan(plan, ROOT / "templates", buildkit=True, platform=p)]
    tags = [c.target.tag for c in arm]
    local = platforms.local_ref(CUDA124, "linux/arm64")
    python = platforms.local_ref(PYTHON, "linux/arm64")
    assert local in tags and python in tags
    stale = {c.target.tag: Freshness("inputs changed" if c.target.tag == local else "", None)
             for c in arm}
    baked = plan_bake(arm, stale, local_store=True, context_dir=tmp_path, secrets=[],
                      force=lambda tag: False)
    assert baked.build == (local,)
    target = targets(baked)[target_name(local)]
    assert target["platforms"] == ["linux/arm64"] and target["tags"] == [local]
    assert target["contexts"] == {python: f"docker-image://{python}"}
    by_tag = {c.target.tag: c for c in arm}
    amd = platforms.local_ref(CUDA124, "linux/amd64")
    assert target["labels"][labels.INPUT_HASH] == by_tag[amd].input_hash
    both = plan_bake(arm, {t: Freshness("inputs changed", None) for t in tags}, local_store=True,
                     context_dir=tmp_path, secrets=[], force=lambda tag: False)
    assert targets(both)[target_name(local)]["contexts"] == {python: f"target:{target_name(python)}"}


def test_auto_bakes_on_engines_whose_own_buildkit_builds_named_contexts() -> None:
    # Debian 12's 20.10 falls back to the legacy builder (its BuildKit would pull a frontend)
    assert why_not_this_engine("20.10.24+dfsg1") == \
        "engine 20.10.24's own BuildKit cannot build named contexts (engine 23 or later can)"
    assert why_not_this_engine("") == \
        "engine (unknown)'s own BuildKit cannot build named contexts (engine 23 or later can)"
    for version in ("23.0.0", "26.1.5+dfsg1", "28.3.2"):
        assert why_not_this_engine(version) is None


def test_a_child_baked_with_its_parent_on_other_layers_than_the_parents_tag_is_named() -> None:
    """BuildKit may give a child, built in the bake with its parent, another of the results
    its cache holds for a parent step than the parent's own target got (and, beside another
    build, even on a parent from the store): such a child is found, to be built again on
    the parent as tagged; an image not built now, or on its parent's layers, is not."""
    from imgkit.builder.buildx import off_parent
    from imgkit.builder.outcome import BUILT, UP_TO_DATE, Result
    from imgkit.engine import ImageInfo

    from .helpers.fakes import FakeEngine
    made = contexts()
    python, *children = [c.target.tag for c in made]
    engine = FakeEngine()

    def put(tag: str, *layers: str) -> None:
        engine.images[tag] = ImageInfo(id=f"sha256:{tag}", tags=(tag,), labels={}, layers=layers, size=1)
    put(python, "base", "py-a")
    put(children[0], "base", "py-b", "cuda")          # on another build of the parent's step
    put(children[1], "base", "py-a", "cuda")          # on the parent as tagged
    results = [Result(tag, BUILT) for tag in [python, *children]]
    assert off_parent(engine, made, results) == [children[0]]  # type: ignore[arg-type]
    results[0] = Result(python, UP_TO_DATE)           # the parent came from the store
    assert off_parent(engine, made, results) == [children[0]]  # type: ignore[arg-type]
    results[1] = Result(children[0], UP_TO_DATE)      # not built now: the next build's to judge
    assert off_parent(engine, made, results) == []  # type: ignore[arg-type]


def test_engines_whose_buildkit_checksums_each_pip_steps_parent_are_named() -> None:
    """moby/buildkit#5251: engines 26.0 to 27.1 only (measured: docs/benchmarks.md)."""
    for version in ("26.0.0", "26.1.5+dfsg1", "27.1.2"):
        note = slow_secret_steps_note(version)
        assert note is not None and version.split("+")[0] in note and "27.2" in note
    for version in ("25.0.5", "27.2.0", "28.5.2+dfsg4", "20.10.24+dfsg1", ""):
        assert slow_secret_steps_note(version) is None
