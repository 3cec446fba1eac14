"""The decisions made above the engine and the registry, checked fast against the fakes in
fakes.py: the scheduler's order and failure handling, the publish gate, the promote
refusals. The same paths run against the real engine and registry in the test_docker_*
modules; these pin down every branch without a build or a push."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from imgkit.builder.freshness import Freshness
from imgkit.builder.outcome import BUILT, FAILED, SKIPPED, UP_TO_DATE, WOULD_BUILD
from imgkit.builder.scheduler import Builder
from imgkit.options import BuildOptions, PublishOptions
from imgkit.publish.promote import Promoter, Repository
from imgkit.publish.push import Publisher, Wanted
from imgkit.registry import artifacts
from imgkit.registry.client import RegistryClient
from imgkit.registry.destination import parse_destination
from imgkit.render.command import render_contexts
from imgkit.render.contexts import Context
from imgkit.selection import Selection
from imgkit.verify import tickets
from imgkit.verify.verdict import FAIL, PASS, Check, Verdict

from .helpers.fakes import FakeEngine, FakeRegistry, image_id

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IMGKIT_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def contexts() -> list[Context]:
    """The bundled 11.8 slice: a python root, CUDA/cuDNN/NCCL layers, Paddle and an extension."""
    return render_contexts(Selection(ROOT / "images", cuda="11.8"))


def run(engine: FakeEngine, contexts: list[Context], **options: object) -> dict[str, str]:
    builder = Builder(engine, BuildOptions(jobs=2, **options), {}, lambda *_: None)  # type: ignore[arg-type]
    return {r.tag: r.status for r in builder.run(contexts)}


# -- the scheduler ------------------------------------------------------------------------
def test_every_image_is_built_after_its_parent_was_tagged(contexts: list[Context]) -> None:
    engine = FakeEngine()
    engine.add(contexts[0].target.base or "")            # the base OS image is there
    statuses = run(engine, contexts)
    assert set(statuses.values()) == {BUILT}
    order = engine.events
    for context in contexts:
        parent = context.target.parent
        if parent is not None:
            assert order.index(("tag", parent)) < order.index(("build", context.target.tag))
        assert order.index(("build", context.target.tag)) < order.index(("tag", context.target.tag))


def test_a_failed_build_tags_nothing_removes_what_its_steps_made_and_skips_its_children(
        contexts: list[Context]) -> None:
    cudnn = next(c.target.tag for c in contexts if c.target.layer == "cudnn")
    engine = FakeEngine(failing={cudnn})
    engine.add(contexts[0].target.base or "")
    statuses = run(engine, contexts)
    assert statuses[cudnn] == FAILED
    assert ("tag", cudnn) not in engine.events
    assert image_id(cudnn + "-step1") in engine.removed
    below = [c.target.tag for c in contexts if c.target.parent == cudnn]
    assert below and all(statuses[t] == SKIPPED for t in below)
    assert statuses[contexts[0].target.tag] == BUILT    # what does not depend on it is built


def test_a_dry_run_builds_nothing_and_says_what_would_be_built(contexts: list[Context]) -> None:
    engine = FakeEngine()
    statuses = run(engine, contexts, dry_run=True)
    assert set(statuses.values()) == {WOULD_BUILD}
    assert not engine.events


def test_up_to_date_images_are_not_built_unless_forced(contexts: list[Context]) -> None:
    engine = FakeEngine()
    engine.add(contexts[0].target.base or "")
    run(engine, contexts)
    fresh = {c.target.tag: Freshness("", engine.image(c.target.tag)) for c in contexts}
    engine.events.clear()
    results = Builder(engine, BuildOptions(), {}, lambda *_: None).run(contexts, fresh)  # type: ignore[arg-type]
    assert {r.status for r in results} == {UP_TO_DATE} and not engine.events
    results = Builder(engine, BuildOptions(force=True), {}, lambda *_: None).run(contexts, fresh)  # type: ignore[arg-type]
    assert {r.status for r in results} == {BUILT}
    assert sorted(t for what, t in engine.events if what == "build without cache") == sorted(
        c.target.tag for c in contexts)


def test_force_keeping_parents_rebuilds_anew_only_what_was_named_and_what_stands_on_it(
        contexts: list[Context]) -> None:
    engine = FakeEngine()
    engine.add(contexts[0].target.base or "")
    run(engine, contexts)
    fresh = {c.target.tag: Freshness("", engine.image(c.target.tag)) for c in contexts}
    cudnn = next(c.target.tag for c in contexts if c.target.layer == "cudnn")
    engine.events.clear()
    results = Builder(engine, BuildOptions(force=True, keep_parents=True), {}, lambda *_: None,  # type: ignore[arg-type]
                      forced={cudnn}).run(contexts, fresh)
    statuses = {r.tag: r.status for r in results}
    below = {c.target.tag for c in contexts if c.target.parent == cudnn}
    assert ("build without cache", cudnn) in engine.events
    assert all(("build", t) in engine.events for t in below)     # on the new parent, cache allowed
    assert statuses[contexts[0].target.tag] == UP_TO_DATE         # the parents are kept
    assert all(statuses[t] == BUILT for t in below)


# -- the publish gate -----------------------------------------------------------------------
def record(ref: str, identity: str, *checks: Check, gpu: bool = True) -> None:
    tickets.record(Verdict(image=ref, image_id=identity, checks=checks, gpu_checked=gpu))


def publisher(engine: FakeEngine, **options: object) -> Publisher:
    return Publisher(engine, [parse_destination("127.0.0.1:5999/ns")],  # type: ignore[arg-type]
                     PublishOptions(**options))  # type: ignore[arg-type]


def test_an_image_never_verified_is_refused_and_nothing_is_pushed() -> None:
    engine = FakeEngine()
    engine.add("paddle:2.6.2")
    results = publisher(engine).run([Wanted("paddle:2.6.2")])
    assert [r.status for r in results] == ["refused"]
    assert "never verified" in results[0].detail
    assert not engine.pushed


def test_one_refusal_holds_every_other_image() -> None:
    engine = FakeEngine()
    good = engine.add("good:1")
    engine.add("bad:1")
    record("good:1", good.id, Check("cudart.version", PASS))
    results = publisher(engine).run([Wanted("good:1"), Wanted("bad:1")])
    assert {r.image: r.status for r in results} == {"good:1": "held", "bad:1": "refused"}
    assert not engine.pushed


def test_a_tag_that_moved_since_it_was_verified_is_refused_saying_so() -> None:
    engine = FakeEngine()
    engine.add("paddle:2.6.2", image_id("before"))
    record("paddle:2.6.2", image_id("before"), Check("cudart.version", PASS))
    engine.add("paddle:2.6.2", image_id("after"))              # rebuilt since
    results = publisher(engine).run([Wanted("paddle:2.6.2")])
    assert results[0].status == "refused" and "rebuilt or retagged" in results[0].detail


def test_failed_and_gpu_unverified_verdicts_are_refused_unless_allowed() -> None:
    engine = FakeEngine()
    failed = engine.add("failed:1")
    record("failed:1", failed.id, Check("gpu.gemm", FAIL))
    cpu = engine.add("cpu:1")
    record("cpu:1", cpu.id, Check("cudart.version", PASS), gpu=False)
    results = {r.image: r for r in publisher(engine, dry_run=True).run([Wanted("failed:1")])}
    assert results["failed:1"].status == "refused" and "gpu.gemm" in results["failed:1"].detail
    results = {r.image: r for r in publisher(engine, dry_run=True).run([Wanted("cpu:1")])}
    assert results["cpu:1"].status == "refused" and "--allow-gpu-unverified" in results["cpu:1"].detail
    allowed = publisher(engine, dry_run=True, allow_gpu_unverified=True).run([Wanted("cpu:1")])
    assert [r.status for r in allowed] == ["would publish"]
    assert not engine.pushed


# -- promotion ------------------------------------------------------------------------------
class Promoting(Promoter):
    """The real Promoter with the fake registries in place of HTTP clients."""

    def __init__(self, registries: dict[str, FakeRegistry], **options: object) -> None:
        options.setdefault("allow_unsigned", True)   # signed verdicts: test_docker_signing.py
        super().__init__(FakeEngine(), PublishOptions(**options))  # type: ignore[arg-type]
        self.fakes = registries

    def client(self, registry: str) -> RegistryClient:
        return self.fakes[registry]  # type: ignore[return-value]


def staged(verdict: dict[str, object] | None, *, about: str | None = None) -> tuple[FakeRegistry, str]:
    """A staging registry holding one image; `verdict` attached to it (or to `about`)."""
    registry = FakeRegistry("127.0.0.1:5998")
    image = registry.put_image("ml/paddle", b'{"architecture": "amd64"}')
    if verdict is not None:
        subject = registry.put_image("ml/paddle", about.encode()) if about else image
        artifact = artifacts.make_verdict(verdict, subject)
        if about:                                  # moved by hand next to another digest
            tag = artifacts.artifact_tag(image.digest, "verdict")
            artifact = artifacts.Artifact(tag, artifact.manifest, artifact.blobs)
        artifacts.attach(registry, "ml/paddle", artifact)  # type: ignore[arg-type]
    return registry, image.digest


def verdict_for(identity: str, *, passed: bool = True, gpu: bool = True) -> dict[str, object]:
    return {"format": tickets.FORMAT, "image_id": identity, "image": "paddle", "passed": passed,
            "gpu_checked": gpu, "failed": [] if passed else ["gpu.gemm"], "host_failure": False,
            "recorded_at": 0.0}


def promote(registry: FakeRegistry, digest: str, **options: object) -> tuple[str, str, FakeRegistry]:
    production = FakeRegistry("127.0.0.1:5997")
    promoter = Promoting({registry.endpoint.registry: registry, "127.0.0.1:5997": production},
                         **options)
    results = promoter.run(Repository("127.0.0.1:5998", "ml/paddle"), digest,
                           [Repository("127.0.0.1:5997", "prod/paddle")], ["2.6.2"])
    return results[0].status, results[0].detail, production


def config_id(registry: FakeRegistry, digest: str) -> str:
    manifest = registry.manifest("ml/paddle", digest)
    assert manifest is not None and manifest.config_digest
    return manifest.config_digest


@pytest.mark.parametrize("case,why", [
    ("none", "no verdict attached"),
    ("other image", "judged"),
    ("failed", "failed"),
    ("gpu unverified", "without a GPU"),
])
def test_promotion_is_refused_with_its_reason_and_nothing_is_written(case: str, why: str) -> None:
    if case == "none":
        registry, digest = staged(None)
    else:
        registry, digest = staged({})        # to learn the image's id, then attach the real one
        identity = config_id(registry, digest)
        verdict = {"other image": verdict_for(image_id("another")),
                   "failed": verdict_for(identity, passed=False),
                   "gpu unverified": verdict_for(identity, gpu=False)}[case]
        registry, digest = staged(verdict)
    status, detail, production = promote(registry, digest)
    assert status == "refused" and why in detail, detail
    assert not production.writes                     # no copy, no tag, not even a check


def test_without_a_trusted_key_an_unsigned_verdict_is_refused_by_default() -> None:
    registry, digest = staged({})
    registry, digest = staged(verdict_for(config_id(registry, digest)))
    status, detail, production = promote(registry, digest, allow_unsigned=False)
    assert status == "refused" and "no trusted key" in detail and "--trusted-key" in detail, detail
    assert not production.writes


def test_a_verdict_moved_next_to_another_digest_is_refused() -> None:
    registry, digest = staged({})
    identity = config_id(registry, digest)
    moved, digest = staged(verdict_for(identity), about='{"another": "image"}')
    with pytest.raises(Exception, match="about that digest|another image"):
        promote(moved, digest)


def test_a_passing_gpu_verdict_lets_the_gate_through(monkeypatch: pytest.MonkeyPatch) -> None:
    registry, digest = staged({})
    registry, digest = staged(verdict_for(config_id(registry, digest)))
    production = FakeRegistry("127.0.0.1:5997")
    copied: list[str] = []

    def copy(source: object, ref: str, target: object, dest: str, retry_for: float,
             every_platform: bool = False) -> None:
        copied.append(dest)                       # what skopeo does: the same manifest there
        production.manifests[("prod/paddle", dest.rsplit(":", 1)[1])] = registry.manifests[
            ("ml/paddle", digest)]
    monkeypatch.setattr("imgkit.publish.promote.skopeo.copy", copy)
    promoter = Promoting({"127.0.0.1:5998": registry, "127.0.0.1:5997": production})
    results = promoter.run(Repository("127.0.0.1:5998", "ml/paddle"), digest,
                           [Repository("127.0.0.1:5997", "prod/paddle")], ["2.6.2"])
    assert [r.status for r in results] == ["published"], results
    assert copied and "prod/paddle:2.6.2" in production.writes


def test_the_fakes_speak_the_real_artifact_format() -> None:
    registry, digest = staged({})
    identity = config_id(registry, digest)
    registry, digest = staged(verdict_for(identity))
    found = artifacts.read_verdict(registry, "ml/paddle", digest)  # type: ignore[arg-type]
    assert found is not None and json.loads(found[0].blobs[1])["image_id"] == identity
