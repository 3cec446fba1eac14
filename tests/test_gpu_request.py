"""How verify asks for GPUs (imgkit/gpus.py, verify/gpu_request.py): CDI names checked
against what the engine's CDI found, docker's forms through NVIDIA's spec when the engine has
one, each of the host's faults named for what it is. The real engine's form is in
tests/test_docker_cdi.py."""
from __future__ import annotations

import pytest

from imgkit.errors import HostError, UsageError
from imgkit.gpus import cdi_names
from imgkit.verify.gpu_request import resolve

DIRS = ["/etc/cdi", "/var/run/cdi"]
NVIDIA = ["nvidia.com/gpu=0", "nvidia.com/gpu=1", "nvidia.com/gpu=all",
          "nvidia.com/gpu=GPU-c9c0bbbd-0bc9-e32e-7339-ae6ced7a9fca", "nvidia.com/mig=0:1"]


@pytest.mark.parametrize("gpus, names", [
    ("all", None), ("2", None), ("0,1", None), ("GPU-c9c0bbbd", None),
    ("nvidia.com/gpu=all", ["nvidia.com/gpu=all"]),
    ("nvidia.com/gpu=0,nvidia.com/gpu=1", ["nvidia.com/gpu=0", "nvidia.com/gpu=1"]),
    ("nvidia.com/mig=0:1", ["nvidia.com/mig=0:1"]),
])
def test_docker_forms_and_cdi_names_are_told_apart(gpus: str, names: list[str] | None) -> None:
    assert cdi_names(gpus) == names


@pytest.mark.parametrize("gpus", ["nvidia.com/gpu", "gpu=all", "nvidia/gpu=0",
                                  "nvidia.com/gpu=0,1"])
def test_a_malformed_cdi_name_is_a_usage_error_that_shows_the_form(gpus: str) -> None:
    with pytest.raises(UsageError) as caught:
        resolve(gpus, DIRS, NVIDIA)
    assert "VENDOR/CLASS=NAME" in str(caught.value) and "nvidia.com/gpu=all" in caught.value.hint


def test_all_and_indexes_go_through_nvidias_spec_when_the_engine_has_it() -> None:
    assert (resolve("all", DIRS, NVIDIA).gpus, resolve("all", DIRS, NVIDIA).way) == \
        ("nvidia.com/gpu=all", "CDI")
    assert resolve("0,1", DIRS, NVIDIA).gpus == "nvidia.com/gpu=0,nvidia.com/gpu=1"
    check = resolve("all", DIRS, NVIDIA).check()
    assert check.verdict == "info" and check.measured == "CDI: nvidia.com/gpu=all"


@pytest.mark.parametrize("gpus, dirs, found", [
    ("all", DIRS, []),            # CDI on, no NVIDIA spec: the hook
    ("all", [], None),            # CDI off
    ("all", DIRS, None),          # an engine before API 1.50 says nothing of its devices
    ("2", DIRS, NVIDIA),          # a count has no CDI name
    ("3", DIRS, NVIDIA[:1]),
    ("0,7", DIRS, NVIDIA),        # not every index is in the spec
])
def test_otherwise_nvidias_hook(gpus: str, dirs: list[str], found: list[str] | None) -> None:
    path = resolve(gpus, dirs, found)
    assert (path.gpus, path.way) == (gpus, "NVIDIA's hook")


def test_a_cdi_name_is_passed_on_as_asked_when_the_engine_has_it() -> None:
    path = resolve("nvidia.com/mig=0:1", DIRS, NVIDIA)
    assert (path.gpus, path.way) == ("nvidia.com/mig=0:1", "CDI")
    # an engine before API 1.50 cannot be asked ahead: it names what it lacks at the start
    assert resolve("nvidia.com/gpu=all", DIRS, None).way == "CDI"


def test_cdi_off_in_the_daemon_is_the_hosts_fault() -> None:
    with pytest.raises(HostError) as caught:
        resolve("nvidia.com/gpu=all", [], None)
    assert "CDI is off" in str(caught.value) and "daemon.json" in caught.value.hint
    assert caught.value.exit_code == 3


def test_no_spec_for_the_kind_says_how_to_make_one() -> None:
    with pytest.raises(HostError) as caught:
        resolve("nvidia.com/gpu=all", DIRS, ["vendor.example/fpga=0"])
    assert "no CDI spec on this host names nvidia.com/gpu" in str(caught.value)
    assert "/etc/cdi, /var/run/cdi" in str(caught.value)
    assert "nvidia-ctk cdi generate" in caught.value.hint


def test_a_device_the_spec_lacks_names_those_it_has() -> None:
    with pytest.raises(HostError) as caught:
        resolve("nvidia.com/gpu=7", DIRS, NVIDIA)
    said = str(caught.value)
    assert "no device '7'" in said and "0, 1, GPU-c9c0bbbd" in said and "all" in said
