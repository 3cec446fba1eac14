"""The versions an image's environment claims, where NVIDIA's and NGC's images write them,
held against what the probe measured: the image that says NCCL 2.21.5 and holds 2.20.5
fails, naming both. The real-engine form is in tests/test_docker_verify.py."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from imgkit.verify.claims import claim_checks, table
from imgkit.verify.facts import parse_report
from imgkit.verify.verdict import FAIL, INFO, PASS

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
    assert {k for k, (s, _) in checks.items() if s == PASS} == {f"env {k}" for k in claims}
    # NGC's release number is no version of anything in the image: said, not judged
    assert checks["env NVIDIA_PYTORCH_VERSION"][0] == INFO
    assert "NGC's release of the container" in checks["env NVIDIA_PYTORCH_VERSION"][1]


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


def test_no_claims_no_checks_and_an_unreadable_one_is_said() -> None:
    assert by_name({"PATH": "/usr/bin", "CUDA_VERSION": ""}) == {}
    status, said = by_name({"NCCL_VERSION": "not-a-version"})["env NCCL_VERSION"]
    assert status == INFO and "not a version" in said


@pytest.mark.parametrize("text, parts, read", [
    ("12.4.1", 2, "12.4"), ("v2.21.5", 3, "2.21.5"), ("2.21.5-1+cuda12.4", 3, "2.21.5"),
    ("libnccl2=2.21.5-1+cuda12.4", 3, "2.21.5"), ("cu124", 2, "12.4"), ("cu118", 2, "11.8"),
    ("cu92", 2, "9.2"), ("cuda-12.4", 2, "12.4"), ("CUDA12.4", 2, "12.4"), ("cudnn9", 3, "9"),
    ("py3.11", 2, "3.11"), ("not-a-version", 3, None), ("cuda", 2, None), ("cu", 2, None)])
def test_a_version_is_read_as_people_write_it(text: str, parts: int, read: str | None) -> None:
    from imgkit.verify.stated import version_of
    assert version_of(text, parts) == read


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


SOURCES = Path(__file__).resolve().parent / "data" / "claims"


def source_variables() -> dict[str, str]:
    """Every variable the kept excerpts of NVIDIA's and NGC's images set, and its value."""
    found = {}
    for path in sorted(SOURCES.glob("*.env")):
        for line in path.read_text().splitlines():
            name, sep, value = line.partition("=")
            if sep and not line.startswith("#"):
                found[name] = value
    return found


def test_every_variable_the_sources_set_is_in_the_table() -> None:
    known = {c.name for c in table()}
    missing = sorted(set(source_variables()) - known)
    assert not missing, f"not in src/imgkit/verify/data/claims.yaml: {missing}"
    assert len(source_variables()) >= 20


def test_the_table_is_the_page() -> None:
    from imgkit.verify.claims_page import claims_page
    assert (Path(__file__).resolve().parent.parent / "docs" / "claims.md").read_text() == \
        claims_page(), "run `make docs`"


NGC_STYLE = {"CUDA_VERSION": "12.4.1.003", "CUBLAS_VERSION": "12.4.5.8", "CUDNN_VERSION": "9.1.0.70",
             "NCCL_VERSION": "2.21.5", "PYTORCH_VERSION": "2.5.1a0+0123abc",
             "NVIDIA_REQUIRE_CUDA": "cuda>=9.0", "CUDA_DRIVER_VERSION": "550.54.15",
             "CUFFT_VERSION": "11.2.1.3", "TRT_VERSION": "10.0.1.6", "DALI_VERSION": "1.37.1",
             "NVIDIA_PYTORCH_VERSION": "24.05"}


def with_stack(report: dict, **versions: str) -> dict:
    """`report` with the rest of the stack (cuFFT, TensorRT...) as the probe reads it: each
    library's own version, from a copy on the loader's path."""
    report = copy.deepcopy(report)
    report["libraries"]["stack"] = {
        family: {"copies": [{"path": f"/usr/local/cuda/lib64/lib{family}.so", "size": 1,
                             "realpath": f"/usr/local/cuda/lib64/lib{family}.so",
                             "loadable": True, "version": version,
                             "version_source": "the library"}]}
        for family, version in versions.items()}
    return report


NGC_STACK = {**with_stack(GOOD, cufft="11.2.1", tensorrt="10.0.1"),
             "distributions": {"nvidia-dali-cuda120": "1.37.1"}}


def test_an_honest_ngc_image_passes_whatever_spelling_it_uses() -> None:
    checks = by_name(NGC_STYLE, NGC_STACK)
    for name in ("CUDA_VERSION", "CUBLAS_VERSION", "CUDNN_VERSION", "NCCL_VERSION", "PYTORCH_VERSION",
                 "CUFFT_VERSION", "TRT_VERSION", "DALI_VERSION"):
        assert checks[f"env {name}"][0] == PASS, (name, checks[f"env {name}"])
    status, said = checks["env NVIDIA_PYTORCH_VERSION"]   # said, and said as not verified
    assert status == INFO and "not verified" in said, said
    assert "env NVIDIA_REQUIRE_CUDA" not in checks and "env CUDA_DRIVER_VERSION" not in checks
    assert not [n for n, (s, _) in checks.items() if s == FAIL]


@pytest.mark.parametrize("name, value, said", [
    ("CUBLAS_VERSION", "12.6.3.3", "CUBLAS_VERSION=12.6.3.3, but its cublas is 12.4.5"),
    ("NV_LIBCUBLAS_PACKAGE", "libcublas-12-4=12.3.4.1-1", "its cublas is 12.4.5"),
    ("NV_LIBNCCL_PACKAGE", "libnccl2=2.20.5-1+cuda12.4", "its nccl is 2.21.5"),
    ("NV_CUDNN_PACKAGE", "libcudnn9-cuda-12=9.3.0.75-1", "its cudnn is 9.1.0"),
    ("NV_CUDA_CUDART_VERSION", "12.6.77-1", "its cudart is 12.4"),
    ("NVARCH", "sbsa", "its python3 runs as x86_64"),
    ("NV_CUDA_COMPAT_PACKAGE", "cuda-compat-12-4", "carries no forward-compatibility libcuda"),
])
def test_each_lying_spelling_fails_naming_the_variable_the_claim_and_what_was_measured(
        name: str, value: str, said: str) -> None:
    report = copy.deepcopy(GOOD)
    report["system"]["machine"] = "x86_64"
    status, detail = by_name({name: value}, report)[f"env {name}"]
    assert status == FAIL and said in detail and name in detail, detail


def test_the_package_forms_and_the_architecture_of_an_honest_nvidia_image_pass() -> None:
    report = copy.deepcopy(GOOD)
    report["system"]["machine"] = "x86_64"
    report["system"]["cuda_compat"] = ["/usr/local/cuda-12.4/compat/libcuda.so.550.54.15"]
    checks = by_name({"NV_LIBCUBLAS_PACKAGE": "libcublas-12-4=12.4.5.8-1", "NVARCH": "x86_64",
                      "NV_LIBNCCL_PACKAGE": "libnccl2=2.21.5-1+cuda12.4",
                      "NV_CUDA_COMPAT_PACKAGE": "cuda-compat-12-4",
                      "NV_LIBCUBLAS_PACKAGE_NAME": "libcublas-12-4"}, report)
    assert all(checks[f"env {n}"][0] == PASS for n in ("NV_LIBCUBLAS_PACKAGE", "NVARCH",
                                                        "NV_LIBNCCL_PACKAGE", "NV_CUDA_COMPAT_PACKAGE"))
    assert checks["env NV_LIBCUBLAS_PACKAGE_NAME"][0] == INFO


def test_a_stale_label_under_a_fixed_variable_fails_naming_both() -> None:
    """NVIDIA's cuDNN images label the version too (com.nvidia.cudnn.version): an image
    that fixed its environment but inherited its parent's label is caught by the label."""
    checks = {c.name: c for c in claim_checks(parse_report(GOOD), {"NV_CUDNN_VERSION": "9.1.0.70-1"},
                                              {"com.nvidia.cudnn.version": "8.9.7.29"})}
    assert checks["env NV_CUDNN_VERSION"].verdict == PASS
    label = checks["label com.nvidia.cudnn.version"]
    assert label.verdict == FAIL and "its cudnn is 9.1.0" in label.diagnosis
    [both] = [c for n, c in checks.items() if "/" in n]
    assert both.verdict == FAIL and "NV_CUDNN_VERSION says 9.1.0" in both.diagnosis
    assert "com.nvidia.cudnn.version says 8.9.7" in both.diagnosis


@pytest.mark.parametrize("name, value, said", [
    ("CUFFT_VERSION", "11.3.0.4", "CUFFT_VERSION=11.3.0.4, but its cufft is 11.2.1"),
    ("TRT_VERSION", "10.6.0.26", "its tensorrt is 10.0.1"),
    ("NV_LIBNPP_VERSION", "12.2.5.30-1", "its npp is 12.3.1"),
    ("NPP_VERSION", "12.2.5.30", "its npp is 12.3.1"),
    ("NV_LIBCUSPARSE_VERSION", "12.3.1.170-1", "its cusparse is 12.5.4"),
    ("CURAND_VERSION", "10.3.6.82", "its curand is 10.3.7"),
    ("CUSOLVER_VERSION", "11.6.4.69", "its cusolver is 11.7.1"),
    ("NVJPEG_VERSION", "12.3.2.81", "its nvjpeg is 12.3.3"),
    ("CUTENSOR_VERSION", "2.1.0.9", "its cutensor is 2.0.2"),
])
def test_the_rest_of_the_stack_is_held_to_each_librarys_own_version(name: str, value: str,
                                                                     said: str) -> None:
    report = with_stack(GOOD, cufft="11.2.1", tensorrt="10.0.1", npp="12.3.1", cusparse="12.5.4",
                        curand="10.3.7", cusolver="11.7.1", nvjpeg="12.3.3", cutensor="2.0.2")
    status, detail = by_name({name: value}, report)[f"env {name}"]
    assert status == FAIL and said in detail and name in detail, detail


def test_cutensor_is_held_to_major_minor_and_what_cannot_be_read_says_why() -> None:
    # the library of cutensor-cu12 2.8.1 says 2.8.0: NGC's four-part version is held to 2.8
    report = with_stack(GOOD, cutensor="2.8.0")
    assert by_name({"CUTENSOR_VERSION": "2.8.1.3"}, report)["env CUTENSOR_VERSION"][0] == PASS
    status, said = by_name({"CUSPARSELT_VERSION": "0.6.3.2"})["env CUSPARSELT_VERSION"]
    assert status == INFO and "not measurable without a GPU" in said
    status, said = by_name({"NV_NVTX_VERSION": "12.4.127-1"})["env NV_NVTX_VERSION"]
    assert status == INFO and "no call that tells its version" in said


def test_a_claimed_stack_library_the_image_lacks_fails() -> None:
    status, detail = by_name({"CUFFT_VERSION": "11.2.1.3"})["env CUFFT_VERSION"]
    assert status == FAIL and "holds no cufft" in detail


def test_dali_is_held_to_its_installed_distribution() -> None:
    report = {**GOOD, "distributions": {"nvidia_dali_cuda120": "1.43.0"}}
    assert by_name({"DALI_VERSION": "1.43.0"}, report)["env DALI_VERSION"][0] == PASS
    status, said = by_name({"DALI_VERSION": "1.44.0"}, report)["env DALI_VERSION"]
    assert status == FAIL and "DALI_VERSION=1.44.0, but its nvidia-dali is 1.43.0" in said, said
    status, said = by_name({"DALI_VERSION": "1.43.0"})["env DALI_VERSION"]
    assert status == FAIL and "holds no nvidia-dali" in said


def test_a_version_variable_the_table_does_not_know_is_read_by_its_name() -> None:
    # a team's or another vendor's spelling: the framework, python3, a library, a package
    report = {**GOOD, "distributions": {"nvidia_dali_cuda120": "1.43.0"}}
    honest = {"TORCH_VERSION": "2.5.1", "PYTHON_VERSION": "3.11.2", "CUBLASLT_VERSION": "12.4.5.8",
              "NVIDIA_DALI_CUDA120_VERSION": "1.43.0"}
    checks = by_name(honest, report)
    assert {name: status for name, (status, _) in checks.items()} == {
        f"env {name}": PASS for name in honest}
    lying = by_name({"TORCH_VERSION": "2.4.0", "PYTHON_VERSION": "3.12.1"}, report)
    assert lying["env TORCH_VERSION"] == (
        FAIL, "the image says TORCH_VERSION=2.4.0, but its torch is 2.5.1+cu124 "
              "(read by the variable's name)")
    assert lying["env PYTHON_VERSION"][0] == FAIL and "its python3 is 3.11.2" in (
        lying["env PYTHON_VERSION"][1])


def test_version_variables_nothing_answers_are_said_on_one_line_never_dropped() -> None:
    ngc_tensorflow = {"TENSORFLOW_VERSION": "2.15.0", "NVIDIA_TENSORFLOW_VERSION": "24.01-tf2",
                      "OPENMPI_VERSION": "4.1.7", "HPCX_VERSION": "2.20",
                      "CUDA_VERSION": "12.4.1",                      # the table's: its own check
                      "JUPYTER_PORT": "8888", "LIBRARY_PATH": "/usr/local/cuda/lib64/stubs",
                      "GDRCOPY_VERSION": "", "RDMA_VERSION": "rdma-core"}   # no version in them
    checks = by_name(ngc_tensorflow)
    assert set(checks) == {"env CUDA_VERSION", "env *_VERSION"}
    status, said = checks["env *_VERSION"]
    assert status == INFO and said == (
        "the image also says HPCX_VERSION=2.20, NVIDIA_TENSORFLOW_VERSION=24.01-tf2 (NGC's "
        "release of the container), OPENMPI_VERSION=4.1.7, TENSORFLOW_VERSION=2.15.0: imgkit "
        "reads no version of these by their names: not verified")
    assert [c for c in claim_checks(parse_report(GOOD), ngc_tensorflow)
            if c.name == "env *_VERSION"][0].required is False


def test_a_version_nothing_else_answers_is_read_from_what_is_installed_by_name() -> None:
    """With the probe's list of what is installed: the Python distribution of that name
    (its spelling with - _ or .), else the Debian package (its epoch dropped); NGC's release
    of the container (NVIDIA_<PRODUCT>_VERSION) is never held to a package of that name."""
    inventory = {"os_release": {}, "dpkg": [{"name": "ucx", "version": "1:1.13.1-1"}],
                 "python": [{"name": "transformer_engine", "version": "1.12.0", "location": "/x"},
                            {"name": "nvidia-tensorflow", "version": "1.15.5+nv22.12",
                             "location": "/x"},
                            {"name": "pip", "version": "26.3", "location": "/x"}]}
    report = {**GOOD, "inventory": inventory}
    env = {"TRANSFORMER_ENGINE_VERSION": "1.12", "UCX_VERSION": "1.13.1", "PIP_VERSION": "24.2",
           "NVIDIA_TENSORFLOW_VERSION": "22.12-tf1", "NUMPY_VERSION": "1.26.4"}
    checks = by_name(env, report)
    assert checks["env TRANSFORMER_ENGINE_VERSION"][0] == PASS
    assert checks["env UCX_VERSION"][0] == PASS
    assert checks["env PIP_VERSION"] == (FAIL, "the image says PIP_VERSION=24.2, but its Python "
                                         "package pip is 26.3 (read by the variable's name)")
    assert checks["env *_VERSION"][1].startswith(
        "the image also says NUMPY_VERSION=1.26.4, NVIDIA_TENSORFLOW_VERSION=22.12-tf1 (NGC's "
        "release of the container): ")
    # without the list (a report made without it), the same names are said, not judged
    assert set(by_name(env)) == {"env *_VERSION"}


def test_the_list_of_what_is_installed_is_asked_for_only_when_a_claim_needs_it() -> None:
    from imgkit.verify.stated import listed_names, wants_inventory
    # the names read from the table's lines are the table's, as YAML reads it
    assert listed_names() == {(c.kind, c.name) for c in table()}
    assert not wants_inventory(NVIDIA_STYLE)                      # every name is the table's
    assert not wants_inventory({"PYTHON_VERSION": "3.11.2", "NVIDIA_TENSORFLOW_VERSION": "24.10",
                                "JUPYTER_PORT": "8888", "GDRCOPY_VERSION": ""})
    assert wants_inventory({"NUMPY_VERSION": "1.26.4"})
    assert wants_inventory({}, {"com.nvidia.tensorrt.version": "10.6.0.26"})


def test_an_nvidia_version_label_the_table_does_not_know_is_read_by_its_name() -> None:
    # NGC's com.nvidia.<thing>.version labels: the framework by its project's name, a library
    labels = {"com.nvidia.pytorch.version": "2.5.1", "com.nvidia.cublaslt.version": "12.4.0",
              "com.nvidia.tensorrt.version": "10.6.0.26", "com.nvidia.build.id": "117",
              "com.nvidia.cudnn.version": "9.1.0.70-1"}              # the table's: its own check
    checks = {c.name: c for c in claim_checks(parse_report(GOOD), {}, labels)}
    assert checks["label com.nvidia.pytorch.version"].verdict == PASS
    lying = checks["label com.nvidia.cublaslt.version"]
    assert lying.verdict == FAIL and lying.diagnosis == (
        "the image says com.nvidia.cublaslt.version=12.4.0, but its cublasLt is 12.4.5 (read "
        "by the label's name)")
    assert checks["label com.nvidia.cudnn.version"].verdict == PASS
    said = checks["label com.nvidia.*.version"]
    assert said.verdict == INFO and "com.nvidia.tensorrt.version=10.6.0.26" in said.diagnosis
    assert not any("build.id" in c.diagnosis for c in checks.values())
