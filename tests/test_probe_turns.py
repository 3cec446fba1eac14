"""The framework adapters import side by side and take turns on the GPU (turns.Adapter):
real child interpreters running a stand-in adapter that leaves a file where the real one
would import and where it would start its GPU steps."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from imgkit.probe import frameworks, turns

# A stand-in adapter, built on the real adapters' COMMON: "imports" (writes NAME.imported),
# then, with a GPU wanted, waits its turn and "uses the GPU" (writes NAME.gpu).
STAND_IN = frameworks.COMMON + r'''
import os
folder, name = os.environ["TURN_DIR"], os.environ["TURN_NAME"]
open(os.path.join(folder, name + ".imported"), "w").close()
out["imported"] = True
mark("import")
if WANT_GPU:
    time.sleep(float(os.environ.get("TURN_PREPARE", "0")))   # its CPU-side preparation
    wait_turn()
    open(os.path.join(folder, name + ".gpu"), "w").close()
    out["step_on_gpu"] = True
mark("end")
EMIT(json.dumps(out))
'''


def wait_for(path: Path, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setitem(frameworks.ADAPTERS, "first", ("json", STAND_IN))
    monkeypatch.setitem(frameworks.ADAPTERS, "second", ("json", STAND_IN))
    monkeypatch.setenv("TURN_DIR", str(tmp_path))
    return tmp_path


def start(name: str, want_gpu: bool, monkeypatch: pytest.MonkeyPatch,
          prepare: float = 0.0, timeout: int = 300) -> turns.Adapter:
    monkeypatch.setenv("TURN_NAME", name)
    monkeypatch.setenv("TURN_PREPARE", str(prepare))
    return turns.Adapter(name, want_gpu, timeout)


def test_adapters_import_together_and_use_the_gpu_one_at_a_time(
        stand_ins: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = start("first", True, monkeypatch), start("second", True, monkeypatch)
    wait_for(stand_ins / "first.imported")
    wait_for(stand_ins / "second.imported")   # both imported, neither let go yet
    time.sleep(0.3)
    assert not list(stand_ins.glob("*.gpu"))
    first.go()
    got = first.result()
    assert got["step_on_gpu"] and (stand_ins / "first.gpu").exists()
    assert not (stand_ins / "second.gpu").exists()   # its turn has not come
    assert second.result()["step_on_gpu"]
    assert set(got["seconds"]) == {"import", "waited", "end", "wall"}


def test_without_a_gpu_an_adapter_runs_through(stand_ins: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    got = start("first", False, monkeypatch).result()
    assert got["imported"] and "step_on_gpu" not in got
    assert not (stand_ins / "first.gpu").exists()


def test_an_adapter_that_exited_before_its_turn_is_still_read(
        stand_ins: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(frameworks.ADAPTERS, "first", ("json", frameworks.COMMON + (
        "out['error'] = 'ImportError: no module'\nEMIT(json.dumps(out))\n")))
    adapter = start("first", True, monkeypatch)
    adapter.proc.wait(timeout=30)
    adapter.go()                              # a closed pipe: no error
    assert adapter.result()["error"] == "ImportError: no module"


def test_an_adapter_whose_probe_is_gone_stops_at_its_turn(
        stand_ins: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = start("first", True, monkeypatch)
    wait_for(stand_ins / "first.imported")
    assert adapter.proc.stdin is not None
    adapter.proc.stdin.close()                # the probe died: no line will come
    assert adapter.proc.wait(timeout=30) == 0
    assert not (stand_ins / "first.gpu").exists()


def test_the_first_adapter_ready_gets_the_gpu_first(stand_ins: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """torch listed first but still preparing, JAX ready: JAX goes first, and torch's turn
    starts only once JAX has ended (one at a time still)."""
    slow = start("first", True, monkeypatch, prepare=1.5)
    fast = start("second", True, monkeypatch)
    order = []
    for adapter, timeout in turns.by_readiness([slow, fast]):
        assert timeout is None
        got = adapter.result(timeout)
        order.append((adapter.name, got["step_on_gpu"]))
        if adapter is fast:
            assert not (stand_ins / "first.gpu").exists()   # the other waits its turn
    assert order == [("second", True), ("first", True)]


def test_an_adapter_that_exits_without_asking_is_ready_at_once(
        stand_ins: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(frameworks.ADAPTERS, "first", ("json", frameworks.COMMON + (
        "out['gpu_count'] = 0\nEMIT(json.dumps(out))\n")))
    waits = start("second", True, monkeypatch, prepare=1.5)
    gone = start("first", True, monkeypatch)
    names = [adapter.name for adapter, _ in turns.by_readiness([waits, gone])]
    assert names == ["first", "second"]
    assert gone.result()["gpu_count"] == 0 and waits.result()["step_on_gpu"]


def test_an_adapter_never_ready_is_given_up_at_its_timeout(
        stand_ins: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hung = start("first", True, monkeypatch, prepare=60, timeout=1)
    started = time.monotonic()
    [(adapter, timeout)] = list(turns.by_readiness([hung]))
    assert adapter is hung and timeout == 0
    assert adapter.result(timeout)["error"] == "timed out after 1 s"
    assert time.monotonic() - started < 20
