from __future__ import annotations

import pytest

from imgkit.errors import CompatError
from imgkit.matrix.compat import in_range, load, matches_prefix


def test_every_cuda_release_pins_every_runtime_component() -> None:
    compat = load()
    for version, rel in compat.cuda.items():
        comps = dict(rel.components)
        assert {"cudart", "nvrtc", "cublas", "cufft", "curand", "cusolver", "cusparse"} <= set(comps)
        assert comps["cudart"].startswith(version + "."), (version, comps["cudart"])
        assert rel.cudnn and rel.nccl


def test_series_resolve_to_the_newest_known_pin() -> None:
    compat = load()
    assert compat.resolve_cudnn("11.8", "8.6") == "8.6.0.163"
    assert compat.resolve_cudnn("11.8", "8") == "8.9.6.50"
    assert compat.resolve_cudnn("11.8", "default", ">=8.6,<9") == "8.9.6.50"
    assert compat.resolve_nccl("12.4", "2.21") == "2.21.5"


def test_impossible_combination_says_what_would_work() -> None:
    compat = load()
    with pytest.raises(CompatError) as info:
        compat.resolve_cudnn("11.8", "9", ">=8.6,<9")
    assert "cudnn 9 is not available with CUDA 11.8 for a framework needing cudnn >=8.6,<9" \
        in info.value.message
    assert "8.6.0.163" in info.value.hint
    with pytest.raises(CompatError, match="unknown CUDA version '99.9'") as info:
        compat.release("99.9")
    assert "11.8" in info.value.hint


def test_framework_builds_name_their_cuda() -> None:
    build = load().framework("paddle", "2.6.2")
    assert (build.cuda, build.pip, build.apt) == ("11.8", "paddlepaddle-gpu==2.6.2", ("libgomp1",))


def test_version_helpers() -> None:
    assert matches_prefix("8.6.0.163", "8.6") and not matches_prefix("8.60.1", "8.6")
    assert in_range("8.9.6.50", ">=8.6,<9") and not in_range("9.1.0.70", ">=8.6,<9")


def test_driver_tables() -> None:
    compat = load()
    assert compat.min_driver("11.8") == ("520.61.05", "450.80.02")
    assert compat.cuda_supported_by_driver("535.104.05") == "12.1"
    assert compat.cuda_supported_by_driver("400.1") is None
    # CUDA 13.4 and 13.5 carry only the CUDA 13 floor: a driver is never said to support
    # them by their own toolkit's driver, which the data does not know
    assert compat.min_driver("13.5") == ("", "580")
    assert compat.cuda_supported_by_driver("610.43.02") == "13.3"
    assert compat.cuda_supported_by_driver("999.1") == "13.3"


def test_every_cuda_13_release_pins_its_toolkits_wheels_for_both_platforms() -> None:
    """From the Requires-Dist of NVIDIA's cuda-toolkit meta wheel of each release (read
    from PyPI, 2026-11): unsuffixed names, both platforms, cuDNN and NCCL for CUDA 13."""
    compat = load()
    expected = {"13.1": ("13.1.80", "13.2.2.2"), "13.2": ("13.2.86", "13.4.1.3"),
                "13.3": ("13.3.29", "13.6.0.2"), "13.4": ("13.4.92", "13.8.0.4"),
                "13.5": ("13.5.37", "13.10.0.20")}
    for cuda, (cudart, cublas) in expected.items():
        release = compat.release(cuda)
        pins = dict(release.components)
        assert (pins["cudart"], pins["cublas"]) == (cudart, cublas)
        assert dict(release.packages)["cudart"] == "nvidia-cuda-runtime"
        assert release.platforms == ("linux/amd64", "linux/arm64")
        assert release.cudnn[-1] == "9.28.1.4" and release.nccl[-1] == "2.32.3"
    # torch 2.15.0 (today's) asks exactly 13.2's toolkit, cuDNN 9.26.0.51 and NCCL 2.30.7
    torch = compat.framework("torch", "2.15.0")
    assert torch.cuda == "13.2" and torch.platforms == ("linux/amd64", "linux/arm64")
    assert "9.26.0.51" in compat.release("13.2").cudnn and "2.30.7" in compat.release("13.2").nccl
