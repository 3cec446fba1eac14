"""The platform axis: a family says which platforms its images are for, the compat data
says which have wheels (read from PyPI's files), and a point without one is refused before
anything runs, naming the package and the platform."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from imgkit.errors import SpecError
from imgkit.matrix.compat import load
from imgkit.matrix.plan import make_plan
from imgkit.matrix.report import plan_document, plan_listing
from imgkit.matrix.spec import Spec, parse_family

BOTH = ["linux/amd64", "linux/arm64"]


def plan_of(*families: dict[str, Any]):
    return make_plan(Spec(tuple(parse_family(f"images/{f['family']}.yaml", f) for f in families)),
                     load())


def cuda_family(cuda: list[str], **extra: Any) -> dict[str, Any]:
    return {"family": "cuda", "axes": {"cuda": cuda, "cudnn": ["9"], "nccl": ["default"]},
            "platforms": BOTH, **extra}


def test_a_layer_is_planned_for_every_platform_an_image_on_it_needs() -> None:
    plan = plan_of(cuda_family(["12.8"]),
                   {"family": "mini", "cuda_libs": ["cudart"], "axes": {"cuda": ["11.8"]}})
    by_tag = {t.tag: t for t in plan.targets}
    assert by_tag["imgkit/python:3.11-bookworm"].platforms == tuple(BOTH)   # shared
    assert by_tag["imgkit/cuda:12.8-runtime-cudnn9.10-nccl2.27-py3.11-bookworm"].platforms \
        == tuple(BOTH)
    assert by_tag["imgkit/cuda:11.8-cudart-py3.11-bookworm"].platforms == ("linux/amd64",)
    assert "platforms" in plan_listing(plan).splitlines()[1]
    assert {tuple(i["platforms"]) for i in plan_document(plan)["images"]} == {  # type: ignore[attr-defined]
        tuple(BOTH), ("linux/amd64",)}


def test_one_platform_by_default_and_no_platform_column_then() -> None:
    plan = plan_of({"family": "mini", "cuda_libs": ["cudart"], "axes": {"cuda": ["12.4"]}})
    assert {t.platforms for t in plan.targets} == {("linux/amd64",)}
    assert "platforms" not in plan_listing(plan)


@pytest.mark.parametrize("family, needle", [
    # CUDA 12.1's component wheels are x86-64 only
    (cuda_family(["12.1"]), "no linux/arm64 wheel of nvidia-cuda-runtime-cu12==12.1.105"),
    # cuDNN 8.9.7.29 (cuDNN 8 on 12.4) has no aarch64 wheel
    ({**cuda_family(["12.4"]), "axes": {"cuda": ["12.4"], "cudnn": ["8"], "nccl": ["none"]}},
     "no linux/arm64 wheel of nvidia-cudnn-cu12==8.9.7.29"),
    # NCCL 2.21.5 (pinned by torch 2.5.1's range on 12.4) neither
    ({**cuda_family(["12.6"]), "axes": {"cuda": ["12.6"], "cudnn": ["9"], "nccl": ["2.21"]}},
     "nvidia-nccl-cu12==2.21.5"),
    # Paddle 2.6.2 has no aarch64 wheel at all
    ({"family": "paddle", "repository": "paddle", "framework": "paddle", "tag": "{cuda}",
      "platforms": BOTH, "axes": {"cuda": ["11.8"], "cudnn": ["8.6"], "nccl": ["default"],
                                  "framework_version": ["2.6.2"]}},
     "paddle 2.6.2 has no GPU build for linux/arm64"),
    # torch 2.10.0's aarch64 wheel on PyPI is a CPU build
    ({"family": "torch", "repository": "pytorch", "framework": "torch", "tag": "{cuda}",
      "platforms": BOTH, "axes": {"cuda": ["12.8"], "cudnn": ["9.10"], "nccl": ["2.27"],
                                  "framework_version": ["2.10.0"]}},
     "torch 2.10.0 has no GPU build for linux/arm64"),
])
def test_a_point_without_a_wheel_for_its_platform_is_refused_naming_it(
        family: dict[str, Any], needle: str) -> None:
    with pytest.raises(SpecError) as info:
        plan_of(family)
    assert info.value.file == f"images/{family['family']}.yaml"
    assert "platform=linux/arm64" in info.value.key
    assert needle in info.value.reason
    assert "exclude" in info.value.hint


def test_exclude_takes_a_platform_and_torch_2_11_and_jax_build_for_arm64() -> None:
    plan = plan_of({**cuda_family(["12.1", "12.8"]),
                    "exclude": [{"cuda": "12.1", "platform": "linux/arm64"}]},
                   {"family": "torch", "repository": "pytorch", "framework": "torch",
                    "tag": "{framework_version}", "platforms": BOTH,
                    "axes": {"cuda": ["13.0"], "cudnn": ["9.19"], "nccl": ["2.28"],
                             "framework_version": ["2.11.0"]}},
                   {"family": "jax", "repository": "jax", "framework": "jax",
                    "tag": "{framework_version}", "platforms": BOTH,
                    "axes": {"os": ["trixie"], "cuda": ["13.0"], "cudnn": ["9"],
                             "nccl": ["default"], "framework_version": ["0.11.2"]}})
    by_tag = {t.tag: t for t in plan.targets}
    assert by_tag["pytorch:2.11.0"].platforms == tuple(BOTH)
    assert by_tag["jax:0.11.2"].platforms == tuple(BOTH)
    assert [t.platforms for t in plan.targets if t.cuda == "12.1"] == [("linux/amd64",)] * 3


@pytest.mark.parametrize("raw, key, reason", [
    (["linux/s390x"], "platforms[0]", "not a valid platform"),
    ([], "platforms", "non-empty list"),
    (["linux/arm64", "linux/arm64"], "platforms", "twice"),
    ("linux/arm64", "platforms", "must be a list"),
])
def test_bad_platforms_name_file_and_key(raw: Any, key: str, reason: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_family("images/x.yaml", {"family": "x", "axes": {"cuda": ["12.8"]},
                                       "platforms": raw})
    assert (info.value.key, reason in info.value.reason) == (key, True), info.value


def test_platforms_given_twice_is_refused() -> None:
    with pytest.raises(SpecError, match="given twice"):
        parse_family("images/x.yaml", {"family": "x", "platforms": BOTH,
                                       "axes": {"cuda": ["12.8"], "platform": ["linux/arm64"]}})


def test_a_compat_overlay_that_says_nothing_claims_amd64_only(tmp_path: Path) -> None:
    """A new CUDA release or framework build in a user's overlay is not assumed to have
    aarch64 wheels: it must say so."""
    overlay = tmp_path / "compat.yaml"
    overlay.write_text('cuda:\n  "12.8":\n    wheel_suffix: cu12\n'
                       '    driver: {toolkit: "570.26", minor_compat: "525.60.13"}\n'
                       '    components: {cudart: "12.8.90"}\n    cudnn: ["9.10.2.21"]\n'
                       '    nccl: ["2.26.2"]\n')
    data = load(str(overlay))
    assert data.cuda["12.8"].platforms == ("linux/amd64",)
    assert data.cuda["12.9"].platforms == tuple(BOTH)        # the shipped entries keep theirs
    other = tmp_path / "other.yaml"
    other.write_text(overlay.read_text() + "    platforms: [linux/riscv64]\n")
    with pytest.raises(SpecError) as info:
        load(str(other))
    assert info.value.key.startswith("cuda.12.8.platforms")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "imgkit", *args], capture_output=True, text=True,
                          env={**os.environ, "DOCKER_HOST": "unix:///nonexistent.sock"})


MINI_BOTH: dict[str, Any] = {"family": "mini", "cuda_libs": ["cudart"], "platforms": BOTH,
                             "axes": {"cuda": ["12.8"]}}


def two_platform_matrix(tmp_path: Path) -> Path:
    images = tmp_path / "images"
    images.mkdir()
    (images / "mini.yaml").write_text("family: mini\ncuda_libs: [cudart]\n"
                                      "platforms: [linux/amd64, linux/arm64]\n"
                                      "axes:\n  cuda: [\"12.8\"]\n")
    return images


def test_a_platform_this_host_cannot_run_is_a_host_error_naming_an_image(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from imgkit import platforms
    from imgkit.builder.command import platforms_to_build
    from imgkit.errors import HostError
    plan = plan_of(MINI_BOTH)
    monkeypatch.setattr(platforms, "host", lambda: "linux/amd64")
    monkeypatch.setattr(platforms, "can_run", lambda p: True)
    assert platforms_to_build(plan) == ("linux/amd64", "linux/arm64")
    monkeypatch.setattr(platforms, "can_run", lambda p: p == "linux/amd64")
    with pytest.raises(HostError) as caught:
        platforms_to_build(plan)
    assert "planned for linux/arm64" in caught.value.message and "qemu-user-static" in caught.value.hint


def test_each_platform_renders_under_its_local_name_with_the_neutral_hash() -> None:
    """An arm64 image stands on its parent's arm64 image (TAG-arm64, FROM it), and carries the
    input hash of the platform-neutral form: the one BuildKit's multi-platform build has."""
    from imgkit.render.contexts import render_plan
    from imgkit.shipped import default_templates
    plan = plan_of(MINI_BOTH)
    templates = default_templates()
    assert templates is not None
    neutral = {c.target.tag: c for c in render_plan(plan, templates)}
    amd64 = render_plan(plan, templates, platform="linux/amd64")
    arm64 = render_plan(plan, templates, platform="linux/arm64")
    assert [c.target.tag for c in amd64] == list(neutral)
    assert [c.target.tag for c in arm64] == [f"{t}-arm64" for t in neutral]
    for plain, context in zip(neutral.values(), arm64):
        assert context.input_hash == plain.input_hash
        assert context.target.platforms == ("linux/arm64",)
        stands_on = plain.target.parent or plain.target.base
        assert f"FROM {stands_on}-arm64\n" in context.dockerfile
        assert context.dockerfile.replace(f"{stands_on}-arm64", str(stands_on)) == plain.dockerfile


def test_the_bake_export_asks_buildkit_for_every_platform(tmp_path: Path) -> None:
    done = cli("export", "bake", "--images", str(two_platform_matrix(tmp_path)),
               "--out", str(tmp_path / "bake"))
    assert done.returncode == 0, done.stderr
    bake = json.loads((tmp_path / "bake" / "docker-bake.json").read_text())
    assert {tuple(t["platforms"]) for t in bake["target"].values()} == {tuple(BOTH)}


def test_the_k8s_export_writes_one_job_per_platform_on_nodes_of_that_arch(tmp_path: Path) -> None:
    import yaml
    done = cli("export", "k8s", "--images", str(two_platform_matrix(tmp_path)),
               "--registry", "registry.example.com/ml", "--out", str(tmp_path / "k8s"))
    assert done.returncode == 0, done.stderr
    jobs = [yaml.safe_load(f.read_text()) for f in sorted((tmp_path / "k8s").glob("verify-*"))]
    arches = {j["spec"]["template"]["spec"]["nodeSelector"]["kubernetes.io/arch"]: j
              for j in jobs}
    assert set(arches) == {"amd64", "arm64"}
    assert len({j["metadata"]["name"] for j in jobs}) == 2
    assert {j["metadata"]["annotations"]["imgkit.dev/platform"] for j in jobs} == set(BOTH)


# -- running another platform's images here (imgkit.platforms), and judging them -----------

def binfmt(tmp_path: Path, text: str) -> Path:
    (tmp_path / "qemu-aarch64").write_text(text)
    return tmp_path


@pytest.mark.parametrize("entry, runs", [
    ("enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: PF\n", True),
    ("disabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: PF\n", False),
    ("enabled\ninterpreter /usr/bin/qemu-aarch64-static\nflags: P\n", False),   # not in containers
])
def test_an_emulated_platform_runs_only_with_an_enabled_fix_binary_handler(
        tmp_path: Path, entry: str, runs: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from imgkit import platforms
    monkeypatch.setattr(platforms, "host", lambda: "linux/amd64")
    assert platforms.can_run("linux/arm64", binfmt(tmp_path, entry)) is runs
    assert platforms.can_run("linux/amd64", tmp_path)                       # its own, always
    assert not platforms.can_run("linux/s390x", tmp_path)
    assert not platforms.can_run("linux/arm64", tmp_path / "nothing")


def test_platform_names(monkeypatch: pytest.MonkeyPatch) -> None:
    from imgkit import platforms
    assert platforms.of_machine("aarch64") == "linux/arm64"
    assert platforms.of_machine("x86_64") == "linux/amd64"
    assert platforms.of_machine("riscv64") == "linux/riscv64"
    assert platforms.debian_arch("linux/arm64") == "arm64"
    import platform
    assert platforms.host() == platforms.of_machine(platform.machine())   # uname's, as platform's
    monkeypatch.setattr(platforms, "host", lambda: "linux/amd64")
    assert platforms.local_ref("imgkit/debian:bookworm", "linux/amd64") == "imgkit/debian:bookworm"
    assert platforms.local_ref("reg:5000/ml/paddle:2.6", "linux/arm64") == "reg:5000/ml/paddle:2.6-arm64"


def test_the_platform_is_judged_from_the_programs_not_the_config() -> None:
    """A config that says arm64 over x86-64 programs fails; an x86-64 library in an arm64
    image is named with the architecture it needs; an old report (no machine) is not judged."""
    import copy

    from imgkit.verify.evaluate import evaluate
    from imgkit.verify.expect import expectations
    from imgkit.verify.facts import parse_report

    from .helpers.reports import GOOD, TAG
    report = copy.deepcopy(GOOD)
    report["system"]["machine"] = "x86_64"
    report["libraries"]["families"]["cudart"]["copies"][0]["machine"] = "x86_64"

    def judged(platform: str) -> dict[str, tuple[str, str, str]]:
        verdict = evaluate(TAG, "sha256:" + "0" * 64, parse_report(report), expectations(TAG, {}, []),
                           gpu=False, platform=platform)
        return {c.name: (c.verdict, c.measured, c.diagnosis) for c in verdict.checks}
    same = judged("linux/amd64")
    assert same["platform"][:2] == ("pass", "linux/amd64 (x86_64)")
    assert "cudart.architecture" not in same
    other = judged("linux/arm64/v8")
    assert other["platform"][0] == "fail" and "python3 is a x86_64 program" in other["platform"][2]
    assert other["cudart.architecture"][:2] == ("fail", "x86_64")
    assert "needs the aarch64 build (for a wheel, its manylinux_*_aarch64 file)" in \
        other["cudart.architecture"][2]
    del report["system"]["machine"]
    assert "platform" not in judged("linux/arm64")

