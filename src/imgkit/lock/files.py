"""Lock files: what one image's pip step installs, every distribution with its version and
hashes, one reviewable file per image (images/locks/<image>.txt, pip's requirements format).

A lock records the digest of what it was resolved from (the layer's requirements, the
parent's lock, the python and platform): when the matrix moves, the digest no longer
matches and the lock is stale (`imgkit lock --check`, and a build refuses it). Pure.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping, Sequence

from ..errors import SpecError
from ..matrix.extension import canonical, pins_of
from ..matrix.plan import Plan, Target, lineage
from ..matrix.targets import given_base

FORMAT = "imgkit-lock-1"
LOCKS_DIR = "locks"                 # beside the matrix files
INPUTS = re.compile(r"^# inputs: ([0-9a-f]{64})$", re.MULTILINE)
APT_LINE = re.compile(r"^# apt: ([a-z0-9][a-z0-9+.-]*)=(\S+)$", re.MULTILINE)
ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)(?: ; ([^\\\n]+?))?"
                   r"((?:\s*\\?\s*--hash=sha256:[0-9a-f]{64})+)", re.MULTILINE)


# what the python layer's template installs on the base (before its own venv)
PYTHON_PACKAGES = ("python3", "python3-venv", "ca-certificates")


def venv_support(python: str) -> tuple[str, ...]:
    """The distro's packages that make a venv with its own pip and setuptools (their old
    wheels): the python layer installs them, makes the venv, then removes them (purged in
    the same step, so no image holds them, though its lock pins them)."""
    return ("python3-venv", f"python{python}-venv", "python3-pip-whl", "python3-setuptools-whl",
            "python-pip-whl")


def apt_requests(target: Target) -> tuple[str, ...]:
    """What the image's own apt step asks for (the python layer: its packages, and every
    upgrade the base's pockets hold)."""
    if target.layer == "python":
        return PYTHON_PACKAGES
    if target.layer == "framework":
        return target.apt
    if target.layer == "extension" and target.extension is not None:
        return target.extension.apt
    return ()


@dataclass(frozen=True)
class Pinned:
    name: str
    version: str
    hashes: tuple[str, ...]         # sha256 hex of the files pip may install
    marker: str = ""                # on a multi-platform image: the platforms it is for


def lock_path(images: Path, tag: str) -> Path:
    return images / LOCKS_DIR / (tag.replace("/", "_").replace(":", "_") + ".txt")


def requirements(target: Target) -> tuple[str, ...]:
    """What the image's own pip step asks for (empty for the python layer)."""
    if target.layer == "python":
        return ()
    return target.packages


def root_of(target: Target, plan: Plan) -> Target:
    return list(lineage(target, {t.tag: t for t in plan.targets}))[-1]


def inputs_digest(target: Target, plan: Plan, parent_lock: bytes | None) -> str:
    """What the lock was resolved from; a different digest means a stale lock."""
    root = root_of(target, plan)
    glibc = root.os_release.glibc if root.os_release else None
    digest = hashlib.sha256(f"{FORMAT}\0{target.tag}\0{target.python}\0{glibc}\0".encode())
    digest.update("\0".join(target.platforms).encode() + b"\0")
    digest.update("\0".join(requirements(target)).encode() + b"\0")
    digest.update("\0".join(apt_requests(target)).encode() + b"\0")
    digest.update(parent_lock or b"(no parent lock)")
    base = given_base(target, plan)
    if base:      # a team's own base, by digest: a new one makes every lock on it stale
        digest.update(f"\0base:{base}".encode())
    return digest.hexdigest()



def render_lock(target: Target, inputs: str, pinned: Sequence[Pinned], glibc: str,
                apt: Mapping[str, str] | None = None, base: str | None = None) -> str:
    lines = [f"# imgkit lock of {target.tag} ({target.layer} layer): what its apt and pip steps",
             f"# install, resolved for CPython {target.python} on {', '.join(target.platforms)} "
             f"(manylinux, glibc {glibc}).",
             "# Written by `imgkit lock`; do not edit: change the matrix and lock again.",
             f"# inputs: {inputs}"]
    if base:
        lines.append(f"# base: {base}")
    # apt's pins are comments to pip, which reads this file as its requirements
    lines += [f"# apt: {name}={version}" for name, version in sorted((apt or {}).items())]
    for pin in sorted(pinned, key=lambda p: p.name.lower()):
        hashes = " \\\n".join(f"    --hash=sha256:{h}" for h in sorted(pin.hashes))
        marker = f" ; {pin.marker}" if pin.marker else ""
        lines.append(f"{pin.name}=={pin.version}{marker} \\\n{hashes}")
    return "\n".join(lines) + "\n"


def parse_lock(path: str, text: str) -> tuple[str, list[Pinned]]:
    """(inputs digest, pins); a file that is not a lock is exit 2 naming it."""
    inputs = INPUTS.search(text)
    if inputs is None:
        raise SpecError(path, "inputs", "not an imgkit lock (no `# inputs:` line)",
                        hint="write it with `imgkit lock`")
    pins = [Pinned(m.group(1), m.group(2), tuple(re.findall(r"sha256:([0-9a-f]{64})", m.group(4))),
                   (m.group(3) or "").strip()) for m in ENTRY.finditer(text)]
    return inputs.group(1), pins


def apt_pins(text: str) -> list[str]:
    """The lock's apt packages as `name=version`, as apt-get install takes them."""
    return [f"{m.group(1)}={m.group(2)}" for m in APT_LINE.finditer(text)]


@dataclass(frozen=True)
class LockState:
    tag: str
    path: Path
    expected: str               # the inputs digest the matrix gives now
    found: str | None           # the lock's, None when there is no lock
    content: bytes | None = None
    moved: str = ""             # what the matrix asks for now that the lock lacks, in words

    @property
    def stale(self) -> bool:
        """There is a lock, locked from other inputs than the matrix gives now."""
        return self.found is not None and self.found != self.expected

    @property
    def problem(self) -> str:
        if self.found is None:
            return "no lock"
        if not self.stale:
            return ""
        return "stale: the matrix changed since it was locked" + (f" ({self.moved})" if self.moved else "")


def what_moved(target: Target, content: str, below: str | None) -> str:
    """What a stale lock lacks that the matrix asks for now: a pin it has not, or at another
    version, an apt package; else the stale lock `below` it; "" when none of those."""
    pins = {canonical(p.name): p.version for p in parse_lock("", content)[1]}
    said = []
    for name, version in pins_of(requirements(target)).items():
        locked = pins.get(name)
        if locked is None:
            said.append(f"{name}=={version} is not in it")
        elif locked != version:
            said.append(f"it has {name}=={locked}, the matrix {name}=={version}")
    apt = {m.group(1) for m in APT_LINE.finditer(content)}
    said += [f"apt {name} is not in it" for name in apt_requests(target) if name not in apt]
    if not said and below:
        said.append(f"the lock below it, of {below}, changed")
    return "; ".join(said[:3]) + ("; ..." if len(said) > 3 else "")


def lock_states(images: Path, plan: Plan) -> list[LockState]:
    """Every image with an apt or pip step, parents first: its lock and whether it matches
    the matrix."""
    contents: dict[str, bytes | None] = {}
    states: list[LockState] = []
    for target in plan.targets:
        path = lock_path(images, target.tag)
        contents[target.tag] = path.read_bytes() if path.is_file() else None
        if not (requirements(target) or apt_requests(target)):
            continue
        parent = contents.get(target.parent) if target.parent else None
        expected = inputs_digest(target, plan, parent)
        content = contents[target.tag]
        found = parse_lock(str(path), content.decode())[0] if content is not None else None
        state = LockState(target.tag, path, expected, found, content)
        if content is not None and state.stale:
            state = replace(state, moved=what_moved(target, content.decode(),
                                                    _stale_below(target, states)))
        states.append(state)
    return states


def _stale_below(target: Target, states: list[LockState]) -> str | None:
    """The parent, when its own lock is stale (its state comes first: parents first)."""
    parent = next((s for s in states if s.tag == target.parent), None)
    return parent.tag if parent is not None and parent.stale else None


def read_locks(images: Path, plan: Plan) -> dict[str, bytes]:
    """The locks a build installs from (tag -> content). None at all: the build resolves as
    before. A stale one is exit 2 naming it: building from it would not be what it says."""
    states = lock_states(images, plan)
    if all(s.found is None for s in states):
        return {}
    stale = [s for s in states if s.stale]
    if stale:
        raise SpecError(str(stale[0].path), "inputs", f"the lock of {stale[0].tag} is {stale[0].problem}",
                        hint="run `imgkit lock` (with the same --cuda/--only) and review the diff")
    return {s.tag: s.content for s in states if s.content is not None}
