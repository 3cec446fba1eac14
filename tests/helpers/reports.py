"""A probe report of a good GPU host (GOOD), and the verdict imgkit gives it (run)."""
from __future__ import annotations

from typing import Any

from imgkit.probe import PROBE_VERSION
from imgkit.verify.evaluate import evaluate
from imgkit.verify.expect import expectations
from imgkit.verify.facts import parse_report


def lib(path: str, version: str | None, loadable: bool = True, real: str | None = None) -> dict[str, Any]:
    return {"path": path, "realpath": real or path, "names": [path], "size": 1,
            "loadable": loadable, "version": version, "error": None if loadable else "bad ELF"}


GOOD: dict[str, Any] = {
    "probe_version": PROBE_VERSION,
    "system": {"python": "3.11.2", "uid": 1000, "user": "imgkit", "shm_bytes": 8 << 30,
               "env": {"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
                       "NVIDIA_REQUIRE_CUDA": "cuda>=12.4"}},
    "libraries": {"families": {
        "cudart": {"copies": [lib("/l/libcudart.so.12", "12.4")]},
        "cublas": {"copies": [lib("/l/libcublas.so.12", "12.4.5")]},
        "cublasLt": {"copies": [lib("/l/libcublasLt.so.12", "12.4.5")]},
        "cudnn": {"copies": [lib("/l/libcudnn.so.9", "9.1.0")]},
        "nccl": {"copies": [lib("/l/libnccl.so.2", "2.21.5")]}},
        "driver_libs_in_image": []},
    "bare_names": {},
    "frameworks": {"torch": {"imported": True, "version": "2.5.1+cu124", "build_cuda": "12.4",
                             "build_cudnn": 90100, "compiled_with_cuda": True, "gpu_count": 1,
                             "step_on_gpu": True, "step_place": "cuda:0",
                             "fp32_matmul_error": 1e-7, "tf32_switches": {}}},
    "gpu": {"device_count": 1, "nvml": {"available": True, "driver": "580.1",
                                         "devices": [{"name": "NVIDIA H100 80GB HBM3",
                                                      "uuid": "GPU-5f0c2a8e-1b7d-4c3e-9a21-6d8e4f0b7c19"}]},
            "work": {"devices": [{"sm_count": 132, "compute_capability": "9.0"}],
                     "tf32_check": {"fp32_error": 1e-7, "tf32_error": 3e-4, "boundary": 2e-5},
                     "gemm": {"fp32": {"tflops": 50.0}, "tf32": {"tflops": 350.0},
                              "bf16": {"tflops": 700.0}, "fp16": {"tflops": 710.0}},
                     "conv": {"tflops": 400.0},
                     "nccl": {"gpus": 1, "correct": True, "busbw_gbs": None}}},
}


TAG = "pytorch:2.5.1-cuda12.4-cudnn9-runtime"


def run(report: dict[str, Any], *, gpu: bool = True, opts: list[str] | None = None):
    return evaluate(TAG, "sha256:" + "0" * 64, parse_report(report), expectations(TAG, {}, opts or []),
                    gpu=gpu)
