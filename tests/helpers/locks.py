"""Locks written by hand for a planned image, as `imgkit lock` would write them."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from imgkit.lock.files import (
    Pinned,
    inputs_digest,
    lock_path,
    render_lock,
)
from imgkit.matrix.compat import load
from imgkit.matrix.plan import make_plan
from imgkit.matrix.spec import Spec, parse_family


def plan_of(**extra: Any):
    family = {"family": "mini", "cuda_libs": ["cudart"], "axes": {"cuda": ["12.8"]}, **extra}
    return make_plan(Spec((parse_family("images/mini.yaml", family),)), load())


def cuda_target(plan):
    return next(t for t in plan.targets if t.layer == "cuda")


def write(images: Path, plan, pins: list[Pinned]) -> Path:
    target = cuda_target(plan)
    path = lock_path(images, target.tag)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_lock(target, inputs_digest(target, plan, None), pins, "2.36"))
    return path
