"""Size budgets and what each image adds: parsing, the plan, the pure checks."""
from __future__ import annotations

import pytest

from imgkit.budget import Budget, parse_size
from imgkit.builder.outcome import BUILT, FAILED, UP_TO_DATE, Result
from imgkit.builder.weights import Layer, heaviest, overruns, with_added
from imgkit.errors import SpecError
from imgkit.matrix.compat import load
from imgkit.matrix.plan import make_plan
from imgkit.matrix.spec import Spec, parse_family
from imgkit.render.stamp import Stamp

PADDLE = {"family": "paddle", "repository": "paddle", "framework": "paddle",
          "tag": "{framework_version}-gpu-cuda{cuda}", "axes": {
              "cuda": ["11.8"], "cudnn": ["8.6"], "nccl": ["default"],
              "framework_version": ["2.6.2"]}}


@pytest.mark.parametrize("text, size", [("7.5GB", 7_500_000_000), ("800 MB", 800_000_000),
                                        ("1tb", 10**12), ("12KB", 12_000)])
def test_sizes_read_like_docker_shows_them(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("value, message", [
    ("lots", "not a valid size"), (7.5, "read as a number"), ("0MB", "leaves no room"),
    ("7.5 GiB", "not a valid size"),
])
def test_a_bad_size_budget_names_the_file_and_key(value: object, message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_family("images/paddle.yaml", {**PADDLE, "size_budget": value})
    assert info.value.file == "images/paddle.yaml" and info.value.key == "size_budget"
    assert message in info.value.reason


def test_the_budget_binds_the_images_a_family_names_not_their_parents() -> None:
    family = parse_family("images/paddle.yaml", {**PADDLE, "size_budget": "7.5GB"})
    plan = make_plan(Spec(families=(family,)), load())
    budgets = {t.tag: t.budget for t in plan.targets if t.budget}
    assert budgets == {"paddle:2.6.2-gpu-cuda11.8": Budget(7_500_000_000, "images/paddle.yaml")}


def stamps() -> list[Stamp]:
    return [Stamp("ns/python:3", None, "ns/debian:12", "a"),
            Stamp("ns/cuda:11.8", "ns/python:3", None, "b", Budget(500, "cuda.yaml"))]


def test_each_image_adds_its_size_less_its_parents() -> None:
    results = [Result("ns/python:3", UP_TO_DATE, size=300), Result("ns/cuda:11.8", BUILT, size=700)]
    added = with_added(results, stamps(), {"ns/debian:12": 100}.get)
    assert [r.added for r in added] == [200, 400]
    unknown_base = with_added(results, stamps(), lambda ref: None)
    assert [r.added for r in unknown_base] == [0, 400]


def test_images_over_budget_built_or_up_to_date_and_only_those() -> None:
    over = overruns([Result("ns/python:3", BUILT, size=10**9),
                     Result("ns/cuda:11.8", UP_TO_DATE, size=501)], stamps())
    assert [(o.tag, o.size, o.budget.size) for o in over] == [("ns/cuda:11.8", 501, 500)]
    assert overruns([Result("ns/cuda:11.8", BUILT, size=500)], stamps()) == []
    assert overruns([Result("ns/cuda:11.8", FAILED, size=0)], stamps()) == []


def test_the_heaviest_steps_come_first_and_empty_ones_never() -> None:
    steps = [Layer(0, "ENV A=1", True), Layer(5, "RUN a", False), Layer(9, "RUN b", True),
             Layer(7, "COPY c", True)]
    assert [s.instruction for s in heaviest(steps, 2)] == ["RUN b", "COPY c"]


def test_history_entries_read_as_dockerfile_lines() -> None:
    from imgkit.builder.weights import instruction
    assert instruction("/bin/sh -c imgkit-build-env pip install x") == "RUN imgkit-build-env pip install x"
    assert instruction("/bin/sh -c #(nop)  LABEL a=b") == "LABEL a=b"
    # the legacy builder records the build arguments a RUN was given before its command
    assert instruction("|1 SOURCE_DATE_EPOCH=1795659286 /bin/sh -c pip install x") == "RUN pip install x"
    assert instruction("RUN /bin/sh -c echo hi # buildkit") == "RUN /bin/sh -c echo hi # buildkit"
    assert instruction("RUN |1 SOURCE_DATE_EPOCH=1 /bin/sh -c echo hi") == "RUN /bin/sh -c echo hi"
