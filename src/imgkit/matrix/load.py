"""A Selection of the matrix as a validated Plan: every command that works on the matrix
starts here (bad files, keys or selections are exit 2, naming what is at fault)."""
from __future__ import annotations

from ..errors import UsageError
from ..selection import Selection
from . import compat
from .plan import Plan, Settings, make_plan, select
from .spec import REPOSITORY_PATTERN, load_spec


def load_plan(selection: Selection) -> Plan:
    if not REPOSITORY_PATTERN.match(selection.namespace):
        raise UsageError(f"--namespace {selection.namespace!r} is not a valid repository prefix")
    spec = load_spec(selection.images)
    overlay = selection.compat_overlay
    data = compat.load(str(overlay) if overlay else None)
    plan = make_plan(spec, data, Settings(namespace=selection.namespace))
    return select(plan, selection.cuda, selection.only, selection.platforms)
