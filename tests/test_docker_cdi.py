"""GPUs asked for by CDI name, on the real Docker engine: a test-only CDI spec (a kind of its
own, /dev/null as the device node, an environment variable and a mounted file) proves the
whole path with no GPU. verify --gpus VENDOR/CLASS=NAME gets exactly those edits inside the
probe's own container (a team's commandTest looks), the verdict records the way the GPUs
came, and a device or a spec the host lacks is the host's fault (exit 3) before anything
starts. The spec is removed afterwards; no container is left."""
from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from .helpers.cdi import LOOKS, SPEC
from .helpers.images import no_verify_containers

pytestmark = pytest.mark.docker


@pytest.fixture
def cdi_kind(engine, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A CDI spec of a kind of its own in the engine's spec folder, until the test ends:
    (kind, token)."""
    dirs, found = engine.cdi()
    if not dirs or found is None:
        pytest.skip("this engine has CDI off, or is older than API 1.50")
    folder = Path(dirs[-1])
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".imgkit-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        pytest.skip(f"cannot write the engine's CDI folder {folder}: {exc}")
    token = secrets.token_hex(4)
    kind = f"imgkit-{token}.test/gpu"
    stub = tmp_path / "stub.txt"
    stub.write_text(f"stub {token}\n")
    spec = folder / f"imgkit-test-{token}.yaml"
    spec.write_text(SPEC.format(kind=kind, token=token, stub=stub, path="/dev/imgkit-cdi0",
                                host_path="/dev/null"))
    try:
        deadline = time.monotonic() + 15          # the engine reads new specs in a while
        while f"{kind}=dev0" not in (engine.cdi()[1] or []):
            assert time.monotonic() < deadline, f"the engine never found {kind}=dev0"
            time.sleep(0.2)
        yield kind, token
    finally:
        spec.unlink(missing_ok=True)


def verify(image: str, gpus: str, tmp_path: Path, *extra: str) -> tuple[int, dict, str]:
    out = tmp_path / "verdict.json"
    out.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-m", "imgkit", "verify", image, "--gpus", gpus,
                           "--json", str(out), *extra], capture_output=True, text=True,
                          timeout=600)
    verdict = json.loads(out.read_text()) if out.is_file() else {}
    return done.returncode, verdict, done.stdout + done.stderr


def test_a_cdi_device_reaches_the_probes_container_and_the_verdict_says_how(
        engine, mini, cdi_kind, tmp_path):
    kind, token = cdi_kind
    looks = tmp_path / "looks.yaml"
    looks.write_text(LOOKS.format(token=token, path="/dev/imgkit-cdi0"))
    code, verdict, said = verify(mini, f"{kind}=dev0", tmp_path, "--checks", str(looks))
    checks = {c["name"]: c for c in verdict["checks"]}
    assert checks["check: the spec's edits arrived"]["verdict"] == "pass", said
    assert checks["gpu.request"]["measured"] == f"CDI: {kind}=dev0"
    # a device node that is no GPU: the GPU checks fail, as the host's, never the image's
    failed = [c for c in verdict["checks"] if c["verdict"] == "fail"]
    assert failed and all(c["scope"] == "host" for c in failed), failed
    assert code == 3, said
    assert no_verify_containers(engine) == []


def test_a_device_the_hosts_spec_lacks_is_the_hosts_fault(engine, mini, cdi_kind, tmp_path):
    kind, _ = cdi_kind
    code, verdict, said = verify(mini, f"{kind}=dev9", tmp_path)
    assert code == 3 and verdict == {}, said
    assert f"the host's CDI spec for {kind} has no device 'dev9': it has dev0" in said
    code, _, said = verify(mini, "imgkit-absent.test/gpu=all", tmp_path)
    assert code == 3 and "no CDI spec on this host names imgkit-absent.test/gpu" in said, said
    assert no_verify_containers(engine) == []
