"""Extension families: what teams add on top of another family's images (pinned pip and apt
packages, files from beside the matrix, environment, ports, the default command), each
built as a child layer of every image it extends (what it sets on the image, such as
env, ports and cmd, is custom.py's).

    family: paddle-jupyter
    extends: {family: paddle}          # optionally narrowed: {family: paddle, cuda: ["11.8"]}
    repository: paddle-jupyter
    tag: "{parent_tag}"                # the default
    pip: ["jupyterlab==4.2.5", "opencv-python-headless==4.10.0.84"]
    apt: [libgl1]
    files: {jupyter_server_config.py: /etc/jupyter/jupyter_server_config.py}
    env: {JUPYTER_PORT: "8888"}
    ports: [8888]
    cmd: ["jupyter", "lab"]

The format is family_model.ExtensionFamily; what a well-formed file may still get wrong is
checked here, with the file and key at fault; what needs the parent's
stack (a CUDA wheel of another CUDA major, a pin that would replace the parent's) is checked
when the plan is made.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement

from ..errors import SpecError
from .family_model import ExtensionFamily


@dataclass(frozen=True)
class Extension:
    parent_family: str
    narrow: tuple[tuple[str, tuple[str, ...]], ...] = ()   # axis -> values the parent may have
    pip: tuple[str, ...] = ()                 # pinned requirements, name==version
    apt: tuple[str, ...] = ()
    files: tuple[tuple[str, str], ...] = ()   # (path beside the matrix file, path in the image)
    matrix_dir: str = ""                      # where `files` are read from

    def pins(self) -> dict[str, str]:
        """Normalised package name -> pinned version."""
        return pins_of(self.pip)


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pinned_version(requirement: Requirement) -> str:
    return next(iter(requirement.specifier)).version


def _missing_file_hint(here: Path, source: str) -> str:
    """Where a file of `files:` is looked for, and a file of that name elsewhere under it;
    or, for a folder, that its files are named one a line."""
    if (here / source).is_dir():
        inside = sorted(p.name for p in (here / source).iterdir() if p.is_file())[:2]
        example = f", e.g. {source.rstrip('/')}/{inside[0]}: /path/{inside[0]}" if inside else ""
        return f"`files:` copies files, one a line{example}"
    name = Path(source).name
    near = [*here.glob(name), *here.glob(f"*/{name}"), *here.glob(f"*/*/{name}")]  # not deep
    elsewhere = sorted(str(p.relative_to(here)) for p in near if p.is_file())[:3]
    if elsewhere:
        return f"did you mean {' or '.join(repr(e) for e in elsewhere)}? (paths are read from {here}/)"
    return f"paths are read from the family file's folder ({here}/): put the file there"


def missing_sources(file: str, files: object) -> list[SpecError]:
    """Each `files:` source that is no file beside the family file (read from the file as
    written, so that a destination of the wrong shape does not hide them)."""
    here = Path(file).parent
    sources = [s for s in files if isinstance(s, str)] if isinstance(files, dict) else []
    return [SpecError(file, f"files.{source}", f"{here / source} is "
                      f"{'a folder' if (here / source).is_dir() else 'not a file'}",
                      hint=_missing_file_hint(here, source))
            for source in sources if not (here / source).is_file()]


def extension_problems(file: str, model: ExtensionFamily) -> list[SpecError]:
    """What a well-formed extension family may still get wrong, every problem of it."""
    found = missing_sources(file, model.files)
    if not (model.pip or model.apt or model.files):
        found.append(SpecError(file, "(top)", "an extension family adds something to the image it "
                               "extends: pip, apt or files (user, env, labels and the like "
                               "come with them)", hint="add the packages or files it is for; "
                               "to only retag an image, use `aliases:` on its own family"))
    return found + pinned_twice(file, model.pip)


def pinned_twice(file: str, pip: list[str]) -> list[SpecError]:
    """A package a family's `pip:` pins more than once (names compared as pip does:
    Pillow and pillow are one), at its second entry, naming the first."""
    found: list[SpecError] = []
    first: dict[str, int] = {}
    for index, line in enumerate(pip):
        name = canonical(Requirement(line).name)
        if name in first:
            found.append(SpecError(file, f"pip[{index}]", f"{name} is pinned twice: "
                                   f"{pip[first[name]]!r} (pip[{first[name]}]) and {line!r}",
                                   hint="keep one of them"))
        first.setdefault(name, index)
    return found


def pins_of(pip: tuple[str, ...]) -> dict[str, str]:
    """Normalised package name -> pinned version, of `name==version` requirements."""
    return {canonical(Requirement(r).name): _pinned_version(Requirement(r)) for r in pip}


def to_extension(file: str, model: ExtensionFamily) -> Extension:
    narrow = tuple((axis, tuple(values)) for axis, values in model.extends
                   if axis != "family" and values is not None)
    return Extension(parent_family=model.extends.family, narrow=narrow, pip=tuple(model.pip),
                     apt=tuple(model.apt), files=tuple(model.files.items()),
                     matrix_dir=str(Path(file).parent))
