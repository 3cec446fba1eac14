"""What verify is told to expect, and the GPUs it is given, are checked before anything runs."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from imgkit.cli import app
from imgkit.errors import UsageError
from imgkit.gpus import plain as gpus_plain
from imgkit.verify.expect import check_gpus, parse_expect_options


@pytest.mark.parametrize("option,why", [
    ("cuda=abc", "a CUDA release"), ("cuda=12", "a CUDA release"), ("tf32=maybe", "on or off"),
    ("tf32=1", "on or off"), ("python=2.7", "a Python series"), ("framework=tensorflow", "one of"),
    ("cudnn=nine", "a version"), ("nosuch=1", "KEY one of"), ("cuda", "KEY=VALUE"),
])
def test_a_bad_expectation_is_refused_with_what_its_key_takes(option: str, why: str) -> None:
    with pytest.raises(UsageError, match=why):
        parse_expect_options([option])


@pytest.mark.parametrize("option, hint", [
    ("torch=2.5.1", "--expect framework=torch --expect framework_version=2.5.1"),
    ("nccl=2.21.5-1+cuda12.4", "--expect nccl=2.21.5"),       # NV_LIBNCCL_PACKAGE's spelling
    ("cudnn=9.1.0.70-1", "--expect cudnn=9.1.0.70"),
    ("CUDA=12.4", "did you mean --expect cuda=12.4?"),
])
def test_a_claim_written_as_images_and_packages_write_it_gets_the_option_that_takes_it(
        option: str, hint: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_expect_options([option])
    assert info.value.hint == hint, info.value.hint


def test_good_expectations_pass_and_framework_names_are_canonical() -> None:
    assert parse_expect_options(["cuda=12.4", "cudnn=9", "nccl=2.21.5", "python=3.11",
                                 "framework=pytorch", "framework_version=2.5.1+cu124",
                                 "tf32=off"]) == {
        "cuda": "12.4", "cudnn": "9", "nccl": "2.21.5", "python": "3.11", "framework": "torch",
        "framework_version": "2.5.1+cu124", "tf32": "off"}


@pytest.mark.parametrize("gpus", ["none", "all", "2", "0,1", "GPU-3b4cd5e6-1111-2222-3333-444455556666",
                                  "MIG-3b4cd5e6-1111-2222-3333-444455556666"])
def test_docker_gpu_values_pass(gpus: str) -> None:
    assert check_gpus(gpus) == gpus


@pytest.mark.parametrize("docker, plain", [
    ("count=2", "2"), ("count=all", "all"), ("device=0,1", "0,1"), ('"device=0,1"', "0,1"),
    ("device=GPU-3b4cd5e6-1111-2222-3333-444455556666", "GPU-3b4cd5e6-1111-2222-3333-444455556666"),
    ("nvidia.com/gpu=all", "nvidia.com/gpu=all"), ("2", "2")])
def test_dockers_own_spelling_of_gpus_is_read_as_the_same_request(docker: str, plain: str) -> None:
    # `docker run --gpus count=2` / `--gpus '"device=0,1"'`: the CLI reads them as imgkit's forms
    result = CliRunner().invoke(app, ["verify", "nope/x:1", "--gpus", docker],
                                env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert result.exit_code == 3 and "--gpus" not in result.output, result.output  # the engine's turn
    assert CliRunner().invoke(app, ["verify", "nope/x:1", "--gpus", "count=two"]).exit_code == 2
    assert check_gpus(gpus_plain(docker)) == plain


@pytest.mark.parametrize("gpus", ["bogus", "", "all,0", "1,,2", "gpu0", "capabilities=compute"])
def test_anything_else_is_bad_input(gpus: str) -> None:
    with pytest.raises(UsageError, match="--gpus"):
        check_gpus(gpus)


@pytest.mark.parametrize("gpus, meant", [("al", "all"), ("All", "all"), ("non", "none"),
                                         ("nones", "none"), ("gpu0", "")])
def test_a_near_miss_of_all_or_none_is_named(gpus: str, meant: str) -> None:
    with pytest.raises(UsageError) as refused:
        check_gpus(gpus)
    assert (refused.value.hint == f"did you mean --gpus {meant}?") if meant else \
        refused.value.hint.startswith("e.g. --gpus all")
