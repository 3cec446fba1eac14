"""The probe's GPU section as logic, without a GPU: how it warms up before timing, and
that one failing measurement never takes the others (or the probe) down with it.
The measurements themselves are proven on a real GPU in tests/test_gpu.py."""
from __future__ import annotations

import ctypes
from typing import Any, Callable

import pytest

from imgkit.probe import gpu


class Clock:
    """The runtime calls warm_up/time_ms make; every call of fn 'takes' `ms` of GPU time."""

    def __init__(self, ms: float) -> None:
        self.ms = ms

    def event(self) -> object:
        return object()

    def record(self, ev: object, stream: Any = None) -> None:
        pass

    def elapsed_ms(self, start: object, end: object) -> float:
        return self.ms


@pytest.mark.parametrize("call_ms,calls", [(1.0, 200), (50.0, 4), (500.0, 3), (0.0, 1000)])
def test_warm_up_runs_until_the_gpu_was_busy_long_enough(call_ms: float, calls: int) -> None:
    count = [0]
    gpu.warm_up(Clock(call_ms), lambda: count.__setitem__(0, count[0] + 1), object(), object())
    assert count[0] == calls  # at least 3 calls, at most 1000, else until 200 ms of GPU time


class NoLibraries:
    """A runtime that sees one Hopper GPU but whose every allocation fails."""

    def device_count(self) -> int:
        return 1

    def attribute(self, attr: int, device: int) -> int:
        return {16: 132, 75: 9, 76: 0}[attr]

    def set_device(self, device: int) -> None:
        pass

    def malloc(self, nbytes: int) -> None:
        raise gpu.CudaError("cudaMalloc", 2, "out of memory")


def raising(exc: Exception) -> Callable[..., Any]:
    def open_first(family: str, also: Any = ()) -> Any:
        raise exc
    return open_first


@pytest.mark.parametrize("exc", [OSError("libcublas.so.13: cannot open shared object file"),
                                 ctypes.ArgumentError("argument 6: int too long to convert"),
                                 RuntimeError("anything else")])
def test_each_measurement_records_its_own_error(monkeypatch: pytest.MonkeyPatch,
                                                exc: Exception) -> None:
    monkeypatch.setattr(gpu, "open_first", raising(exc))
    out = gpu.run_all(NoLibraries(), gemm_size=64)
    assert out["devices"] == [{"index": 0, "sm_count": 132, "compute_capability": "9.0"}]
    for name in ("tf32_check", "conv", "nccl"):
        assert str(exc) in out[name]["error"], (name, out[name])
    assert set(out["gemm"]) == {"fp32", "fp16", "tf32", "bf16"}
    assert all(str(exc) in result["error"] for result in out["gemm"].values())
    assert out["seconds"] >= 0 and isinstance(out["loaded"], dict)


class Memory:
    """A device as one bytearray: pointers are offsets into it (the two calls `fill` makes)."""

    def __init__(self, size: int) -> None:
        self.bytes = bytearray(size)
        self.copies = 0

    def to_device(self, dst: ctypes.c_void_p, host: bytes) -> None:
        at = dst.value or 0
        self.bytes[at:at + len(host)] = host
        self.copies += 1

    def copy_within(self, dst: ctypes.c_void_p, src: ctypes.c_void_p, nbytes: int) -> None:
        at, frm = dst.value or 0, src.value or 0
        assert frm + nbytes <= at, "a copy must not read what it writes"
        self.bytes[at:at + nbytes] = self.bytes[frm:frm + nbytes]
        self.copies += 1


@pytest.mark.parametrize("block_len,nbytes", [(8, 8), (8, 5), (8, 64), (7, 100), (6, 1 << 16),
                                              (1 << 16, 256 << 20 >> 8)])
def test_fill_makes_on_the_device_the_bytes_host_tiling_made(block_len: int, nbytes: int) -> None:
    """The measured matrices' content is unchanged: the block repeated, the last one cut."""
    block = bytes(i % 251 + 1 for i in range(block_len))
    reps, rest = divmod(nbytes, block_len)
    mem = Memory(nbytes + 16)
    gpu.fill(mem, ctypes.c_void_p(16), block, nbytes)
    assert bytes(mem.bytes[16:16 + nbytes]) == block * reps + block[:rest]
    assert mem.bytes[:16] == bytearray(16)             # nothing before it written
    assert mem.copies <= 2 + max(nbytes // block_len, 1).bit_length()
