"""Docker's reference grammar (pure logic), on the cases that trip people up."""
from __future__ import annotations

import pytest

from imgkit.registry.reference import problem


@pytest.mark.parametrize("ref", [
    "paddle:2.6.2-gpu-cuda11.8-cudnn8", "imgkit/cuda:11.8-runtime-py3.11-bookworm",
    "localhost:5000/team/paddle:latest", "registry.example.com/a_b/c__d/e-f:T_1.x",
    "a" * 255 + ":" + "t" * 128, "[::1]:5000/x:y",
])
def test_valid_references(ref: str) -> None:
    assert problem(ref) is None


@pytest.mark.parametrize("ref,why", [
    ("paddle:.11.8", "the tag '.11.8' is not valid"),
    ("paddle:-x", "is not valid"),
    ("paddle:" + "t" * 129, "is not valid"),
    ("Paddle:1", "the name 'Paddle' is not valid"),
    ("paddle", "no tag"),
    ("paddle:1/2", "no tag"),
    ("a" * 256 + ":1", "more than 255"),
    ("team//paddle:1", "is not valid"),
    ("team/paddle_:1", "is not valid"),
])
def test_invalid_references_say_why(ref: str, why: str) -> None:
    reason = problem(ref)
    assert reason is not None and why in reason


@pytest.mark.parametrize("ref,path", [("Paddle:1", "Paddle"), ("team/Paddle:1", "team/Paddle"),
                                      ("127.0.0.1:5000/ML/paddle:1", "ML/paddle")])
def test_upper_case_names_say_that_is_why(ref: str, path: str) -> None:
    reason = problem(ref)
    assert reason is not None and f"repository names are lowercase: {path!r}" in reason
    assert f"try {path.lower()!r}" in reason
