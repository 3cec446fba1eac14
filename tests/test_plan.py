from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from imgkit.errors import CompatError, SpecError, SpecErrors
from imgkit.matrix.compat import load
from imgkit.matrix.plan import make_plan, select
from imgkit.matrix.spec import Spec, load_spec, parse_family

ROOT = Path(__file__).resolve().parent.parent


def bundled():
    return make_plan(load_spec(ROOT / "images"), load())


def test_parents_come_first_and_are_shared() -> None:
    plan = bundled()
    seen: set[str] = set()
    for target in plan.targets:
        assert target.parent is None or target.parent in seen
        seen.add(target.tag)
    python_layers = [t for t in plan.targets if t.layer == "python"]
    # one root per OS the matrix uses (bookworm, and trixie for JAX's Python >= 3.12),
    # shared by every image of that OS
    assert {t.os for t in python_layers} == {"bookworm", "trixie"}
    assert len(python_layers) == 2
    assert len(plan.targets) == len({t.tag for t in plan.targets})


def test_seed_paddle_image_and_its_chain() -> None:
    plan = bundled()
    paddle = plan.get("paddle:2.6.2-gpu-cuda11.8-cudnn8")
    comps = paddle.component_map
    assert (comps["cuda"], comps["cudnn"], comps["framework_version"]) == ("11.8", "8.6.0.163", "2.6.2")
    chain = []
    tag = paddle.tag
    while tag:
        chain.append(plan.get(tag).layer)
        tag = plan.get(tag).parent
    assert chain == ["framework", "nccl", "cudnn", "cuda", "python"]


def test_torch_gets_the_exact_pins_its_wheel_requires() -> None:
    comps = bundled().get("pytorch:2.5.1-cuda12.4-cudnn9-runtime").component_map
    assert comps["cudnn"] == "9.1.0.70" and comps["nccl"] == "2.21.5"
    assert comps["cublas"] == "12.4.5.8" and comps["cudart"] == "12.4.127"


def test_select_cuda_keeps_ancestors_only_of_that_slice() -> None:
    sliced = select(bundled(), cuda="11.8")
    assert {t.cuda for t in sliced.targets} == {None, "11.8"}
    assert "paddle:2.6.2-gpu-cuda11.8-cudnn8" in sliced.finals
    only = select(bundled(), only=("paddle:*",))
    assert [t.layer for t in only.targets] == ["python", "cuda", "cudnn", "nccl", "framework"]


def test_only_may_name_a_shared_parent_of_the_cuda_slice() -> None:
    sliced = select(bundled(), cuda="11.8", only=("imgkit/python:3.11-bookworm",))
    assert [t.tag for t in sliced.targets] == ["imgkit/python:3.11-bookworm"]
    assert sliced.named == ("imgkit/python:3.11-bookworm",) and not sliced.finals
    with pytest.raises(CompatError, match="nothing in the matrix matches --only 'imgkit/python:3.13-trixie'"):
        select(bundled(), cuda="11.8", only=("imgkit/python:3.13-trixie",))


@pytest.mark.parametrize("cuda, glob, hint", [
    ("12.8", "paddle:*", "it matches images of CUDA 11.8; drop --cuda"),
    (None, "paddle", "--only takes tags or globs of tags: --only 'paddle:*'"),   # the repository
    (None, "cuda", "--only 'imgkit/cuda:*'"),        # the family's images, not its shared layers
    (None, "nothing*", "as `imgkit list` prints them"),
    # what a person means by a near miss
    (None, "padle:*", "did you mean --only 'paddle:*'?"),                  # misspelt
    (None, "python:*", "did you mean --only 'imgkit/python:*'?"),          # the namespace left out
    (None, "paddle:2.6", "did you mean --only 'paddle:2.6*'?"),            # no * at its end
    (None, "paddle:2.6.2-gpu-cuda12.4-cudnn9", "paddle has: 2.6.2-gpu-cuda11.8-cudnn8"),
    (None, "paddle:* ", "it has a space at an end: --only 'paddle:*'"),
])
def test_an_only_that_matches_nothing_says_what_would(cuda: str | None, glob: str, hint: str) -> None:
    with pytest.raises(CompatError) as info:
        select(bundled(), cuda=cuda, only=(glob,))
    assert hint in info.value.hint, info.value.hint


def torch_family(tmp_path: Path, tag: str, axes: str) -> tuple[Path, list[SpecError]]:
    """A torch family t on CUDA 12.8 and 12.6 with `axes` besides, in a matrix folder of its
    own, and the problems its plan is refused with."""
    images = tmp_path / "images"
    images.mkdir()
    (images / "t.yaml").write_text(
        f'family: t\nrepository: ml/t\nframework: torch\ntag: "{tag}"\naxes:\n{axes}'
        '  cuda: ["12.8", "12.6"]\n  cudnn: [default]\n  nccl: [default]\n')
    with pytest.raises(SpecErrors) as info:
        make_plan(load_spec(images), load())
    return images, list(info.value.problems)


def test_every_impossible_point_of_a_family_is_said_with_the_exclude_that_leaves_it_out(
        tmp_path: Path) -> None:
    images, problems = torch_family(tmp_path, '{framework_version}-cuda{cuda}',
                                    '  framework_version: ["2.10.0", "2.7.0"]\n')
    said = sorted((p.reason, p.hint) for p in problems)
    assert said == [
        ("torch 2.10.0 is built for CUDA 12.8, not 12.6", 'use cuda 12.8 for torch 2.10.0; or leave '
         'the point out: exclude: [{cuda: "12.6", framework_version: "2.10.0"}]'),
        ("torch 2.7.0 is built for CUDA 12.6, not 12.8", 'use cuda 12.6 for torch 2.7.0; or leave '
         'the point out: exclude: [{cuda: "12.8", framework_version: "2.7.0"}]')]
    # the hint's entry, as written, makes the family plan
    text = (images / "t.yaml").read_text() + ('exclude: [{cuda: "12.6", framework_version: "2.10.0"}, '
                                              '{cuda: "12.8", framework_version: "2.7.0"}]\n')
    (images / "t.yaml").write_text(text)
    finals = make_plan(load_spec(images), load()).finals
    assert sorted(finals) == ["ml/t:2.10.0-cuda12.8", "ml/t:2.7.0-cuda12.6"]


def test_points_impossible_for_one_reason_are_said_once_with_entries_that_leave_all_out(
        tmp_path: Path) -> None:
    """An unknown version on four points was said at one of them, with an entry for that
    one: a team excluded it and met the next on the following run. Now the reason is said
    once with how many points it holds, and its entries leave them all out, over the fewest
    axes, never a point that could be built."""
    images, problems = torch_family(tmp_path, '{framework_version}-cuda{cuda}-{os}',
                                    '  os: [bookworm, noble]\n'
                                    '  framework_version: ["2.10.0", "2.9.1", "2.7.0"]\n')
    said = {p.reason: (p.key, p.hint) for p in problems}
    key, hint = said["unknown torch version '2.9.1'"]
    assert key.endswith("; 3 more points like it)"), key
    assert hint.endswith('or leave them out: exclude: [{framework_version: "2.9.1"}]'), hint
    key, hint = said["torch 2.10.0 is built for CUDA 12.8, not 12.6"]
    assert hint.endswith('exclude: [{cuda: "12.6", framework_version: "2.10.0"}]'), hint
    entries = [h.split("exclude: [", 1)[1].rstrip("]") for _, h in said.values()]
    (images / "t.yaml").write_text((images / "t.yaml").read_text()
                                   + f"exclude: [{', '.join(entries)}]\n")
    finals = make_plan(load_spec(images), load()).finals
    assert sorted(finals) == [f"ml/t:{v}-{os}" for v in ("2.10.0-cuda12.8", "2.7.0-cuda12.6")
                              for os in ("bookworm", "noble")]


def test_unknown_cuda_in_selection_is_refused_with_choices() -> None:
    with pytest.raises(CompatError, match="no image in the matrix has CUDA '99.9'") as info:
        select(bundled(), cuda="99.9")
    assert "11.8" in info.value.hint


@pytest.mark.parametrize("cuda, hint", [
    ("11.8.0", "the matrix names CUDA releases by major.minor: --cuda 11.8"),
    ("cu118", "--cuda 11.8"), ("cuda12.4", "--cuda 12.4"),
    ("11.8,12.4", "one CUDA release per run: --cuda 11.8, then --cuda 12.4"),
    ("11.8 12.4", "one CUDA release per run"),
])
def test_a_cuda_spelt_otherwise_names_the_release_meant(cuda: str, hint: str) -> None:
    with pytest.raises(CompatError) as info:
        select(bundled(), cuda=cuda)
    assert hint in info.value.hint, info.value.hint


@pytest.mark.parametrize("axes, message", [
    ({"cuda": ["12.4"], "framework_version": ["2.6.2"], "cudnn": ["8"], "nccl": ["default"]},
     "paddle 2.6.2 is built for CUDA 11.8, not 12.4"),
    ({"cuda": ["11.8"], "framework_version": ["2.6.2"], "cudnn": ["9"], "nccl": ["default"]},
     "cudnn 9 is not available with CUDA 11.8 for a framework needing cudnn >=8.6,<9"),
    ({"cuda": ["99.9"], "framework_version": ["2.6.2"], "cudnn": ["8"], "nccl": ["default"]},
     "unknown CUDA version '99.9'"),
    ({"cuda": ["11.8"], "framework_version": ["9.9.9"], "cudnn": ["8"], "nccl": ["default"]},
     "unknown paddle version '9.9.9'"),
    ({"os": ["trixie"], "cuda": ["11.8"], "framework_version": ["2.6.2"], "cudnn": ["8"],
      "nccl": ["default"]},
     "paddle 2.6.2 has no wheel for python 3.13"),
    ({"os": ["focal"], "cuda": ["11.8"], "framework_version": ["2.6.2"], "cudnn": ["8"],
      "nccl": ["default"]},
     "unknown OS 'focal'"),
])
def test_impossible_combinations_point_at_the_file(axes: dict[str, list[str]], message: str) -> None:
    fam = parse_family("images/paddle.yaml", {"family": "paddle", "repository": "paddle",
                                              "framework": "paddle", "tag": "{cuda}", "axes": axes})
    with pytest.raises(SpecError) as info:
        make_plan(Spec(families=(fam,)), load())
    assert info.value.file == "images/paddle.yaml"
    assert message in info.value.reason
    assert not info.value.hint.endswith(("; ", ";")), info.value.hint    # one point: no exclude


def test_two_families_cannot_claim_one_tag_for_different_images() -> None:
    a = parse_family("a.yaml", {"family": "a", "repository": "x", "framework": "paddle",
                                "tag": "same", "axes": {"cuda": ["11.8"], "cudnn": ["8.6"],
                                                        "nccl": ["default"],
                                                        "framework_version": ["2.6.2"]}})
    b = parse_family("b.yaml", {"family": "b", "repository": "x", "framework": "paddle",
                                "tag": "same", "axes": {"cuda": ["11.8"], "cudnn": ["8.9"],
                                                        "nccl": ["default"],
                                                        "framework_version": ["2.6.2"]}})
    with pytest.raises(SpecError, match="would name two different images"):
        make_plan(Spec(families=(a, b)), load())


@pytest.mark.parametrize("os_name, python, base", [
    ("bookworm", "3.11", "imgkit/debian:bookworm"),
    ("trixie", "3.13", "imgkit/debian:trixie"),
    ("jammy", "3.10", "imgkit/ubuntu:jammy"),
    ("noble", "3.12", "imgkit/ubuntu:noble"),
])
def test_each_os_brings_its_own_python_and_base(os_name: str, python: str, base: str) -> None:
    fam = parse_family("images/cuda.yaml", {"family": "cuda", "axes": {
        "os": [os_name], "cuda": ["12.4"], "cudnn": ["9"], "nccl": ["default"]}})
    plan = make_plan(Spec(families=(fam,)), load())
    root = plan.targets[0]
    assert (root.tag, root.base, root.python) == (f"imgkit/python:{python}-{os_name}", base, python)
    assert all(t.python == python and t.os == os_name for t in plan.targets)


def test_only_is_repeatable_and_every_glob_must_match() -> None:
    both = select(bundled(), only=("paddle:*", "pytorch:*"))
    assert {t.tag for t in both.targets if t.layer == "framework"} == {
        "paddle:2.6.2-gpu-cuda11.8-cudnn8", "pytorch:2.5.1-cuda12.4-cudnn9-runtime",
        "pytorch:2.10.0-cuda12.8-cudnn9-runtime", "pytorch:2.11.0-cuda13.0-cudnn9-runtime",
        "pytorch:2.15.0-cuda13.2-cudnn9-runtime"}
    with pytest.raises(CompatError, match="'nope\\*'"):
        select(bundled(), only=("paddle:*", "nope*"))


def test_a_slice_makes_shared_layers_for_the_platforms_its_images_need_only() -> None:
    """The bundled python layer is for amd64 and arm64 (the CUDA 12/13 layers stand on it
    for both); the 11.8 slice (`make build`) is amd64 only, so it makes no arm64 layer."""
    plan = bundled()
    python = "imgkit/python:3.11-bookworm"
    assert plan.get(python).platforms == ("linux/amd64", "linux/arm64")
    assert {t.platforms for t in select(plan, cuda="11.8").targets} == {("linux/amd64",)}
    sliced = select(plan, cuda="12.8")
    assert sliced.get(python).platforms == ("linux/amd64", "linux/arm64")
    assert select(plan, only=["paddle:*"]).get(python).platforms == ("linux/amd64",)
    assert select(plan, only=[python]).get(python).platforms == ("linux/amd64", "linux/arm64")


def test_a_platform_selects_its_images_only() -> None:
    """`--platform linux/arm64` (an arm64 runner's job): the images made for arm64, each for
    arm64 alone; the amd64-only families drop out; a slice with none is bad input."""
    plan = select(bundled(), cuda="12.8", on=("linux/arm64",))
    assert {t.platforms for t in plan.targets} == {("linux/arm64",)}
    assert not any(t.tag.startswith("pytorch:") for t in plan.targets)     # amd64 only
    assert any(t.startswith("imgkit/cuda:12.8") for t in plan.finals)
    amd = select(bundled(), cuda="12.8", on=("linux/amd64",))
    assert {t.platforms for t in amd.targets} == {("linux/amd64",)}
    assert any(t.startswith("pytorch:") for t in amd.finals)
    with pytest.raises(CompatError, match="makes no image for linux/arm64"):
        select(bundled(), cuda="11.8", on=("linux/arm64",))


TEAM: dict[str, Any] = {"family": "team", "framework": "torch", "repository": "team/torch",
        "tag": "{framework_version}-cuda{cuda}",
        "axes": {"framework_version": ["2.10.0"], "cuda": ["12.1", "12.8"], "cudnn": ["9.10"],
                 "nccl": ["default"]}}


def test_an_impossible_point_does_not_hide_what_extends_the_possible_ones() -> None:
    # 12.1 is impossible for torch 2.10.0; the extension's pin is wrong on the 12.8 image:
    # both said in one run
    family = parse_family("team.yaml", TEAM)
    extension = parse_family("ext.yaml", {"family": "ext", "extends": {"family": "team"},
                                          "repository": "team/ext", "tag": "{parent_tag}",
                                          "pip": ["torch==2.5.1"]})
    with pytest.raises(SpecErrors) as info:
        make_plan(Spec((family, extension)), load())
    said = [(p.file, p.key.split(" ")[0], p.reason) for p in info.value.problems]
    assert said == [
        ("team.yaml", "axes", "torch 2.10.0 is built for CUDA 12.8, not 12.1"),
        ("ext.yaml", "pip[0]", "torch==2.5.1 would replace torch==2.10.0, which "
                               "team/torch:2.10.0-cuda12.8 pins")]


def test_an_extension_narrowed_to_impossible_points_alone_is_not_refused_again() -> None:
    family = parse_family("team.yaml", TEAM)
    narrowed = parse_family("ext.yaml", {"family": "ext", "repository": "team/ext",
                                         "extends": {"family": "team", "cuda": ["12.1"]},
                                         "tag": "{parent_tag}", "pip": ["einops==0.8.1"]})
    with pytest.raises(SpecError) as info:
        make_plan(Spec((family, narrowed)), load())
    assert not isinstance(info.value, SpecErrors) and info.value.file == "team.yaml"
    # narrowed to no point at all: refused, as before
    nowhere = parse_family("ext.yaml", {"family": "ext", "repository": "team/ext",
                                        "extends": {"family": "team", "cuda": ["12.6"]},
                                        "tag": "{parent_tag}", "pip": ["einops==0.8.1"]})
    good = parse_family("team.yaml", {**TEAM, "axes": {**TEAM["axes"], "cuda": ["12.8"]}})
    with pytest.raises(SpecError, match="narrows team to no image"):
        make_plan(Spec((good, nowhere)), load())


def test_only_ships_what_it_names_and_builds_the_family_images_below_it() -> None:
    # an extension on the image a CUDA stack family names: --only the extension builds that
    # image (a parent) but neither publishes nor verifies it as one of the slice's finals
    stack = parse_family("cuda.yaml", {"family": "cuda", "cuda_libs": ["cudart"],
                                       "axes": {"cuda": ["12.8"]}})
    tools = parse_family("tools.yaml", {"family": "tools", "extends": {"family": "cuda"},
                                        "repository": "team/tools", "tag": "{parent_tag}",
                                        "apt": ["jq"]})
    plan = make_plan(Spec((stack, tools)), load())
    parent = next(t for t in plan.finals if t.startswith("imgkit/cuda:"))
    only = select(plan, only=("team/tools:*",))
    assert [t for t in only.finals] == [f"team/tools:{parent.split(':', 1)[1]}"]
    assert parent in {t.tag for t in only.targets}              # still built, below it
    assert parent in select(plan, cuda="12.8").finals and parent in select(plan).finals
