"""GPU paths of the probe, run directly on this host. Skipped without an NVIDIA GPU."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def runtime():  # type: ignore[no-untyped-def]
    from imgkit.probe import cuda
    try:
        rt = cuda.Runtime()
        if rt.device_count() > 0:
            return rt
    except (OSError, cuda.CudaError):
        pass
    pytest.skip("no NVIDIA GPU visible")


def test_gemm_conv_and_nccl_run_and_are_right(runtime) -> None:  # type: ignore[no-untyped-def]
    from imgkit.probe import gpu
    work = gpu.run_all(runtime, gemm_size=4096)
    assert work["tf32_check"]["fp32_error"] < gpu.TF32_ERROR_BOUNDARY
    for dtype, result in work["gemm"].items():
        assert "error" not in result and result["tflops"] > 0, (dtype, result)
    assert "error" not in work["conv"] and work["conv"]["tflops"] > 0
    assert work["nccl"]["correct"]


def test_nvml_sees_the_gpus(runtime) -> None:  # type: ignore[no-untyped-def]
    from imgkit.probe import cuda
    info = cuda.nvml_info()
    assert info["available"] and len(info["devices"]) == runtime.device_count()
