"""The versions an image's environment claims, where NVIDIA's and NGC's images write them,
held against what the probe measured: the image that says NCCL 2.21.5 and holds 2.20.5
fails, naming both. The real-engine form is in tests/test_docker_verify.py."""
from __future__ import annotations

import copy

import pytest

from imgkit.verify.claims import claim_checks
from imgkit.verify.facts import parse_report
from imgkit.verify.verdict import FAIL, PASS

from .helpers.reports import GOOD

NVIDIA_STYLE = {"CUDA_VERSION": "12.4.1", "NV_CUDA_LIB_VERSION": "12.4.1-1",
                "NV_LIBCUBLAS_VERSION": "12.4.5.8-1", "NV_CUDNN_VERSION": "9.1.0.70-1",
                "NCCL_VERSION": "2.21.5-1", "NV_LIBNCCL_PACKAGE_VERSION": "2.21.5-1+cuda12.4",
                "PYTORCH_VERSION": "2.5.1", "NVIDIA_PYTORCH_VERSION": "24.10", "PATH": "/usr/bin"}


def by_name(env: dict[str, str], report: dict = GOOD) -> dict[str, tuple[str, str]]:
    return {c.name: (c.verdict, c.diagnosis) for c in claim_checks(parse_report(report), env)}


def test_an_image_that_holds_what_its_environment_says_passes() -> None:
    checks = by_name(NVIDIA_STYLE)
    claims = [k for k in NVIDIA_STYLE if k not in ("PATH", "NVIDIA_PYTORCH_VERSION")]
    assert set(checks) == {f"env {k}" for k in claims}      # NGC's release number is no version
    assert all(status == PASS for status, _ in checks.values()), checks


@pytest.mark.parametrize("variable, value, said", [
    ("NCCL_VERSION", "2.20.5-1", "NCCL_VERSION=2.20.5-1, but its nccl is 2.21.5"),
    ("NV_CUDNN_VERSION", "9.3.0.75-1", "its cudnn is 9.1.0"),
    ("CUDA_VERSION", "12.6.0", "its cudart is 12.4"),
    ("PYTORCH_VERSION", "2.4.0", "its torch is 2.5.1+cu124"),
])
def test_an_image_that_says_one_version_and_holds_another_fails(variable: str, value: str,
                                                                 said: str) -> None:
    checks = by_name({variable: value})
    status, detail = checks[f"env {variable}"]
    assert status == FAIL and said in detail


def test_a_claimed_library_the_image_lacks_fails() -> None:
    report = copy.deepcopy(GOOD)
    del report["libraries"]["families"]["nccl"]
    status, detail = by_name({"NCCL_VERSION": "2.21.5-1"}, report)["env NCCL_VERSION"]
    assert status == FAIL and "holds no nccl" in detail


def test_no_claims_no_checks() -> None:
    assert by_name({"PATH": "/usr/bin", "CUDA_VERSION": "", "NCCL_VERSION": "not-a-version"}) == {}


def test_imgkits_own_layers_write_nvidias_variables_that_verify_holds_them_to() -> None:
    """What the CUDA, cuDNN and NCCL layers write (chain.nvidia_env) is NVIDIA's spelling,
    and an image holding those versions passes every claim it makes."""
    from imgkit.matrix.chain import nvidia_env
    from imgkit.matrix.compat import load
    from imgkit.verify.claims import claim_checks
    from imgkit.verify.facts import parse_report

    from .helpers.reports import GOOD
    data = load()
    for cuda, release in data.cuda.items():
        env = dict(nvidia_env("cuda", dict(release.components), cuda, release.driver_minor_compat))
        assert env["NVIDIA_REQUIRE_CUDA"] == f"cuda>={cuda} driver>={release.driver_minor_compat}"
    written = {**dict(nvidia_env("cuda", {"cudart": "12.4.127", "cublas": "12.4.5.8"}, "12.4",
                                 "525.60.13")),
               **dict(nvidia_env("cudnn", {"cudnn": "9.1.0.70"}, "12.4")),
               **dict(nvidia_env("nccl", {"nccl": "2.21.5"}, "12.4"))}
    checks = claim_checks(parse_report(GOOD), written)
    assert {c.name for c in checks} == {"env CUDA_VERSION", "env NV_LIBCUBLAS_VERSION",
                                        "env CUDNN_VERSION", "env NCCL_VERSION"}
    assert all(c.verdict == "pass" for c in checks), checks
