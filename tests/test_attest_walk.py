"""`imgkit attest` walks downhill: the image is looked up once, the probe runs once (its
report carries the inventory the SBOM is made of), the verdict is judged and kept, then
attached with the SBOM. A counting stand-in engine runs the real probe on this host as its
"container"; the registry is the in-memory one of tests/helpers/fakes.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import pytest

from imgkit.engine import ContainerRun, ImageInfo, PathStat, RunSpec, StatFiles
from imgkit.options import Signer, VerifyOptions
from imgkit.registry.artifacts import artifact_tag

from .helpers.fakes import FakeEngine, FakeRegistry
from .helpers.gpu_host import boot_in

REGISTRY = "registry.example.com"
REPOSITORY = "ml/tiny"


class CountingEngine(FakeEngine):
    """Says how often each image was looked up and each container run; a container is the
    probe run by this host's python3, as verify's boot line starts it in an image."""

    def __init__(self, pulled: ImageInfo) -> None:
        super().__init__()
        self.pulled = pulled
        self.looked_up: list[str] = []
        self.runs: list[RunSpec] = []

    def image(self, ref: str) -> ImageInfo | None:
        self.looked_up.append(ref)
        return super().image(ref)

    def pull_checked(self, ref: str, credentials: tuple[str, str] | None = None) -> None:
        self.images[ref] = self.pulled

    def run_container(self, spec: RunSpec) -> ContainerRun:
        self.runs.append(spec)
        env = {**os.environ, **spec.environment, "PYTHONPATH": ""}
        _, flag, boot = spec.entrypoint
        with tempfile.TemporaryDirectory(prefix="imgkit-probe-") as where:
            done = subprocess.run([sys.executable, flag, boot_in(boot, where), *spec.command], env=env,
                                  capture_output=True, text=True, timeout=300)
        return ContainerRun(done.returncode, done.stdout, done.stderr, False, 1.0)

    @contextmanager
    def ran_container(self, spec: RunSpec, on_start: Callable[[], None] | None = None
                      ) -> Iterator[tuple[ContainerRun, StatFiles]]:
        if on_start is not None:
            on_start()
        yield self.run_container(spec), lambda paths: self.stat_files(spec.image, paths)

    def stat_files(self, image: str, paths: list[str]) -> dict[str, PathStat | None]:
        found: dict[str, PathStat | None] = {}
        for path in paths:
            try:
                st = os.stat(path)
                found[path] = PathStat(size=st.st_size)
            except OSError:
                found[path] = None
        return found


class OpenRegistry(FakeRegistry):
    def __enter__(self) -> OpenRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


@pytest.fixture
def staged(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[CountingEngine, OpenRegistry, str]:
    monkeypatch.setenv("IMGKIT_CACHE_DIR", str(tmp_path / "cache"))
    registry = OpenRegistry(REGISTRY)
    config = json.dumps({"architecture": "amd64", "os": "linux"}).encode()
    manifest = registry.put_image(REPOSITORY, config)
    info = ImageInfo(id=manifest.config_digest or "", tags=(), labels={}, layers=(), size=1,
                     platform="linux/amd64")
    engine = CountingEngine(info)
    import imgkit.registry.remote as remote
    import imgkit.verify.attach as attach
    import imgkit.verify.subject as subject
    monkeypatch.setattr(subject, "connect", lambda: engine)
    monkeypatch.setattr(attach, "connect", lambda: engine)
    monkeypatch.setattr(remote, "_client", lambda *_: registry)
    return engine, registry, f"{REGISTRY}/{REPOSITORY}@{manifest.digest}"


def test_attest_looks_the_image_up_once_and_runs_the_probe_once(
        staged: tuple[CountingEngine, OpenRegistry, str]) -> None:
    from imgkit.verify.attach import attest
    engine, registry, reference = staged
    code = attest(image=reference, options=VerifyOptions(gpus="none"), signer=Signer())
    digest = reference.split("@")[1]
    assert engine.looked_up == [reference]                     # one look-up, the pulled image
    assert len(engine.runs) == 1 and "--inventory" in engine.runs[0].command
    assert "--no-frameworks" not in engine.runs[0].command    # the frameworks were judged too
    written = {w.split(":", 1)[1] for w in registry.writes if not w.startswith("check")}
    assert artifact_tag(digest, "verdict") in written
    assert (artifact_tag(digest, "sbom") in written) == (code == 0)   # passed: its SBOM too


def test_the_sbom_comes_from_the_verdicts_own_probe_run(
        staged: tuple[CountingEngine, OpenRegistry, str]) -> None:
    from imgkit.verify.attach import sbom_of
    from imgkit.verify.command import verdict_of
    from imgkit.verify.subject import resolve
    engine, _, reference = staged
    options = VerifyOptions(gpus="none")
    _, subject = resolve(reference, options, None, retry_for=0)
    verdict = verdict_of(engine, subject, options, None, with_inventory=True)  # type: ignore[arg-type]
    document = json.loads(sbom_of(engine, subject, verdict))  # type: ignore[arg-type]
    assert len(engine.runs) == 1                               # no second container for it
    assert document["bomFormat"] == "CycloneDX"
    names = {c["name"] for c in document["components"]}
    assert "pip" in names or "setuptools" in names or "pytest" in names, sorted(names)[:20]


def test_verify_looks_the_image_up_once_and_reads_no_inventory(
        staged: tuple[CountingEngine, OpenRegistry, str]) -> None:
    from imgkit.verify.command import verify
    engine, registry, reference = staged
    verify(image=reference, options=VerifyOptions(gpus="none"))
    assert engine.looked_up == [reference]
    assert len(engine.runs) == 1 and "--inventory" not in engine.runs[0].command
    assert not [w for w in registry.writes if not w.startswith("check")]   # nothing attached

