"""Compatibility data users extend: an overlay beside the matrix (or --compat FILE), validated
like the shipped data and merged over it, so a new framework build or CUDA release needs no
imgkit release. Through the CLI, as a user meets it."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from imgkit.builder.noop import plan_inputs
from imgkit.builder.noopcache import fingerprint
from imgkit.cli import app
from imgkit.selection import Selection

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()
PADDLE3 = {"family": "paddle3", "repository": "paddle", "framework": "paddle",
           "tag": "{framework_version}-gpu-cuda{cuda}-cudnn{cudnn_major}",
           "axes": {"framework_version": ["3.0.0"], "cuda": ["12.6"], "cudnn": ["9"], "nccl": ["default"]}}
OVERLAY: dict[str, Any] = {"frameworks": {"paddle": {"3.0.0": {
    "pip": "paddlepaddle-gpu==3.0.0", "cuda": "12.6", "cudnn": ">=9.5,<10", "nccl": ">=2.21,<3",
    "python": ["3.11", "3.12"], "apt": ["libgomp1"], "dlopen": ["libcudnn.so", "libcublas.so"]}}}}
# a release the shipped data does not have (made up: 13.6 with 13.2's wheels, unsuffixed as
# from CUDA 13 on)
CUDA_13_6: dict[str, Any] = {"cuda": {"13.6": {
    "wheel_suffix": "cu13", "driver": {"toolkit": "580.65.06", "minor_compat": "580"},
    "packages": {"cudart": "nvidia-cuda-runtime", "nvrtc": "nvidia-cuda-nvrtc",
                 "cublas": "nvidia-cublas"},
    "components": {"cudart": "13.2.86", "nvrtc": "13.2.86", "cublas": "13.4.1.3"},
    "cudnn": ["9.26.0.51"], "nccl": ["2.30.7"]}}}


def matrix(tmp_path: Path, family: dict[str, Any], overlay: Any = None, raw: str | None = None) -> Path:
    images = tmp_path / "images"
    images.mkdir(exist_ok=True)
    (images / f"{family['family']}.yaml").write_text(yaml.safe_dump(family))
    if overlay is not None:
        (images / "compat.yaml").write_text(yaml.safe_dump(overlay))
    if raw is not None:
        (images / "compat.yaml").write_text(raw)
    return images


def imgkit_list(images: Path, *extra: str) -> Any:
    return runner.invoke(app, ["list", "--images", str(images), *extra], terminal_width=200)


def test_an_overlay_beside_the_matrix_adds_a_framework_build(tmp_path: Path) -> None:
    without = imgkit_list(matrix(tmp_path, PADDLE3))
    assert without.exit_code == 2 and "unknown paddle version '3.0.0'" in without.output
    result = imgkit_list(matrix(tmp_path, PADDLE3, OVERLAY))
    assert result.exit_code == 0, result.output
    assert "paddle:3.0.0-gpu-cuda12.6-cudnn9" in result.output


def test_an_overlay_framework_the_probe_cannot_run_lists_with_a_warning(tmp_path: Path) -> None:
    overlay = {"frameworks": {"tensorflow": {"2.17.0": {
        "pip": "tensorflow==2.17.0", "cuda": "12.4", "cudnn": ">=9.3,<10", "nccl": ">=2.21,<3",
        "python": ["3.11"]}}}}
    family = {"family": "tf", "framework": "tensorflow", "repository": "ml/tf",
              "tag": "{framework_version}", "axes": {"framework_version": ["2.17.0"],
                                                     "cuda": ["12.4"], "cudnn": ["default"],
                                                     "nccl": ["default"]}}
    result = imgkit_list(matrix(tmp_path, family, overlay))
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "ml/tf:2.17.0" in out and "framework tensorflow: imgkit's probe proves jax, paddle, torch" in out


def test_an_overlay_adds_a_cuda_release(tmp_path: Path) -> None:
    family = {"family": "cuda", "cuda_libs": ["cudart", "cublas"], "axes": {"cuda": ["13.6"]}}
    assert imgkit_list(matrix(tmp_path, family)).exit_code == 2
    result = imgkit_list(matrix(tmp_path, family, CUDA_13_6))
    assert result.exit_code == 0, result.output
    assert "imgkit/cuda:13.6-cudart-cublas-py3.11-bookworm" in result.output


def test_compat_flag_names_the_file(tmp_path: Path) -> None:
    images = matrix(tmp_path, PADDLE3)
    elsewhere = tmp_path / "team-compat.yaml"
    elsewhere.write_text(yaml.safe_dump(OVERLAY))
    assert imgkit_list(images, "--compat", str(elsewhere)).exit_code == 0
    missing = imgkit_list(images, "--compat", str(tmp_path / "nope.yaml"))
    assert missing.exit_code == 2 and "nope.yaml" in missing.output


@pytest.mark.parametrize("raw,key,reason", [
    ("frameworks: {paddle: {'3.0.0': {pip: 'paddlepaddle-gpu==3.0.0', cuda: '12.6'}}}",
     "frameworks.paddle.3.0.0.cudnn", "required key is missing"),
    ("cuda: {'12.9': {wheel_suffix: cu12, driver: {toolkit: '575.51.03', minor_compat: '525.60.13'}, "
     "components: {cudart: '12.9.79'}, cudnn: [9.10], nccl: ['2.27.3']}}",
     "cuda.12.9.cudnn[0]", "9.10 was read as a number"),
    ("frameworks: {paddle: {'3.0.0': {pip: 'paddlepaddle-gpu', cuda: '12.6', cudnn: '>=9', "
     "nccl: '>=2', python: ['3.11']}}}", "frameworks.paddle.3.0.0.pip", "is not valid here"),
    ("frameworks: {paddle: {'3.0.0': {pip: 'paddlepaddle-gpu==3.0.0', cuda: '12.6', cudnn: 'nine', "
     "nccl: '>=2', python: ['3.11']}}}", "frameworks.paddle.3.0.0.cudnn", "not a version range"),
    ("frameworks: {paddle: {'3.0.0': {pip: 'paddlepaddle-gpu==3.0.0', cuda: '13.7', cudnn: '>=9', "
     "nccl: '>=2', python: ['3.11']}}}", "frameworks.paddle.3.0.0.cuda",
     "CUDA 13.7 is not in the compat data"),
    ("gpus: {}", "gpus", "unknown key"),
    ("venvs: {}", "venvs", "unknown key hint: did you mean 'venv'?"),
    ("frameworks: {paddle: {'3.0.0': {pip: 'paddlepaddle-gpu==3.0.0', cuda: '12.6', cudnn: '>=9', "
     "nccl: '>=2', pythons: ['3.11']}}}", "frameworks.paddle.3.0.0.pythons",
     "unknown key hint: did you mean 'python'?"),
    ("cuda: {'12.9': {wheel_sufix: cu12}}", "cuda.12.9.wheel_sufix",
     "unknown key hint: did you mean 'wheel_suffix'?"),
    ("venv: {'3.12': {pip: {version: '26.4', sha256: 'abc'}, setuptools: {version: '85.0', "
     f"sha256: '{'0' * 64}'}}}}}}", "venv.3.12.pip.sha256", "is not valid here"),
    ("venv: {'3.12': {pip: {version: '26.4', sha256: '" + "0" * 64 + "'}}}",
     "venv.3.12.setuptools", "required key is missing"),
    ("cuda: [", "line", "not valid YAML"),
])
def test_a_bad_overlay_is_exit_2_naming_file_and_key(tmp_path: Path, raw: str, key: str, reason: str) -> None:
    result = imgkit_list(matrix(tmp_path, PADDLE3, raw=raw))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    out = " ".join(result.output.split())
    assert result.exit_code == 2 and "compat.yaml" in out and key in out and reason in out, out


def test_an_unquoted_version_gets_a_hint(tmp_path: Path) -> None:
    raw = ("cuda: {'12.9': {wheel_suffix: cu12, driver: {toolkit: '575.51.03', minor_compat: "
           "'525.60.13'}, components: {cudart: '12.9.79'}, cudnn: ['9.10.2.21'], nccl: [2.27]}}")
    out = " ".join(imgkit_list(matrix(tmp_path, PADDLE3, raw=raw)).output.split())
    assert "cuda.12.9.nccl[0]" in out and "quote versions" in out and "'2.27'" in out


def test_every_problem_of_an_overlay_is_said_at_once_with_its_line(tmp_path: Path) -> None:
    raw = ("frameworks:\n"
           "  paddle:\n"
           "    '3.0.0':\n"
           "      pip: paddlepaddle-gpu==3.0.0\n"
           "      cuda: '12.6'\n"
           "      cudnn: '>=9'\n"
           "      nccl: 2.20\n"                   # the number 2.2, typed as 2.20
           "      python: ['3.11']\n"
           "      apt: [libgomp1, LibFoo]\n"
           "      bogus: 1\n")
    result = imgkit_list(matrix(tmp_path, PADDLE3, raw=raw))
    assert result.exit_code == 2, result.output
    out = result.output
    assert "3 problems in 1 file" in out
    assert "compat.yaml:7: frameworks.paddle.3.0.0.nccl: 2.20 was read as a number" in out
    assert "keeps them as text: '2.20'" in out
    assert "compat.yaml:9: frameworks.paddle.3.0.0.apt[1]: 'LibFoo' is not valid here" in out
    assert "compat.yaml:10: frameworks.paddle.3.0.0.bogus: unknown key" in out
    assert out.count("quote versions") == 1               # not for the unknown key's 1


def plan_key(selection: Selection) -> str:
    return fingerprint(plan_inputs(selection))


def test_the_noop_cache_sees_an_overlay_change(tmp_path: Path) -> None:
    images = matrix(tmp_path, PADDLE3, OVERLAY)
    before = plan_key(Selection(images, templates=ROOT / "templates"))
    (images / "compat.yaml").write_text(yaml.safe_dump({**OVERLAY, **CUDA_13_6}))
    assert plan_key(Selection(images, templates=ROOT / "templates")) != before
    elsewhere = tmp_path / "c.yaml"
    elsewhere.write_text("{}")
    first = plan_key(Selection(images, templates=ROOT / "templates", compat_file=elsewhere))
    elsewhere.write_text(yaml.safe_dump(CUDA_13_6))
    assert plan_key(Selection(images, templates=ROOT / "templates", compat_file=elsewhere)) != first


overlay_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(0, 30), st.floats(allow_nan=False), st.text(max_size=10),
              st.sampled_from(["12.6", "3.0.0", ">=9,<10", "cu12", "paddlepaddle-gpu==3.0.0", "3.11"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(
        st.one_of(st.sampled_from(["cuda", "frameworks", "os", "packages", "paddle", "3.0.0", "pip",
                                   "cudnn", "nccl", "python", "driver", "components"]), st.text(max_size=6)),
        inner, max_size=4)), max_leaves=10)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(overlay=st.one_of(overlay_values, st.builds(lambda v: {"frameworks": {"paddle": {"3.0.0": v}}},
                                                   overlay_values)))
def test_any_overlay_is_used_or_refused(tmp_path: Path, overlay: Any) -> None:
    result = imgkit_list(matrix(tmp_path, PADDLE3, raw=yaml.safe_dump(overlay)))
    assert result.exception is None or isinstance(result.exception, SystemExit), (overlay, result.exception)
    assert result.exit_code in (0, 2), (overlay, result.output)


PIP_NEXT = "1" * 64           # made up: a pip after the shipped one, as a team pins it first
SETUPTOOLS_NEXT = "2" * 64


def test_an_overlay_moves_the_venvs_pip_and_setuptools(tmp_path: Path) -> None:
    """A fix in pip lands before imgkit's release: the team's compat.yaml pins it, and the
    python layer's context installs that, by its hash (the old one's context did not)."""
    family = {"family": "cuda", "axes": {"cuda": ["12.8"], "cudnn": ["none"], "nccl": ["none"]},
              "cuda_libs": ["cudart"]}
    shipped = runner.invoke(app, ["render", "--images", str(matrix(tmp_path, family)),
                                  "--out", str(tmp_path / "before")])
    assert shipped.exit_code == 0, shipped.output
    overlay = {"venv": {"3.11": {"pip": {"version": "26.4", "sha256": PIP_NEXT},
                                 "setuptools": {"version": "85.0.0", "sha256": SETUPTOOLS_NEXT}}}}
    moved = runner.invoke(app, ["render", "--images", str(matrix(tmp_path, family, overlay)),
                                "--out", str(tmp_path / "after")])
    assert moved.exit_code == 0, moved.output
    [before] = (tmp_path / "before").glob("*python*/imgkit/venv-tools.txt")
    [after] = (tmp_path / "after").glob("*python*/imgkit/venv-tools.txt")
    assert after.read_text() == (f"pip==26.4 --hash=sha256:{PIP_NEXT}\n"
                                 f"setuptools==85.0.0 --hash=sha256:{SETUPTOOLS_NEXT}\n")
    assert "pip==26.3 --hash=sha256:" in before.read_text()
    listed = imgkit_list(tmp_path / "images", "--known")
    assert "3.11" in listed.output and "26.4" in listed.output, listed.output


def test_a_python_older_than_every_venv_entry_is_named(tmp_path: Path) -> None:
    from imgkit.errors import CompatError
    from imgkit.matrix.compat import load
    with pytest.raises(CompatError, match="python 3.7") as caught:
        load().venv_tools("3.7")
    assert 'venv."3.7"' in str(caught.value.hint)
