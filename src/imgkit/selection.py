"""Which part of which matrix a command works on: one frozen value, made once by the CLI (or
by the no-op fast path in entry.py) and handed down every stage. Standard library only."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from .errors import UsageError

DEFAULT_IMAGES = Path("images")
DEFAULT_NAMESPACE = "imgkit"
OVERLAY_NAME = "compat.yaml"   # users' compat data beside their matrix files


@dataclass(frozen=True)
class Selection:
    images: Path = DEFAULT_IMAGES           # the folder of matrix files (*.yaml)
    namespace: str = DEFAULT_NAMESPACE      # repository prefix of the shared layers
    cuda: str | None = None                 # only images of this CUDA release
    only: tuple[str, ...] = ()              # only tags matching any of these globs (+ parents)
    templates: Path | None = None           # default: templates/ beside the matrix folder
    compat_file: Path | None = None         # default: compat.yaml in the matrix folder
    platforms: tuple[str, ...] = ()         # only these platforms' images (default: all)
    project: Path | None = None             # the project file the settings were read from
    from_project: frozenset[str] = frozenset()  # settings it gave (another imgkit finds them too)
    labels: tuple[tuple[str, str], ...] = ()    # the project's [labels], on its families' images
    # what a team's own base images hold (`base:`), read through the engine: the CLI hands
    # the builder's reader down, so the matrix stage itself never reaches the engine
    read_bases: Callable[[list[str]], Mapping[str, object]] | None = field(
        default=None, compare=False, repr=False)

    @property
    def templates_dir(self) -> Path:
        """--templates DIR, else templates/ beside the matrix folder, else the templates
        imgkit ships."""
        from .shipped import default_templates
        beside = self.images.resolve().parent / "templates"
        path = self.templates if self.templates is not None else (
            beside if beside.is_dir() else default_templates() or beside)
        if not path.is_dir():
            raise UsageError(f"template directory {path} not found", hint="pass --templates DIR")
        return path

    @property
    def compat_overlay(self) -> Path | None:
        """The user's compat data: --compat FILE, else compat.yaml in the matrix folder."""
        if self.compat_file is not None:
            return self.compat_file
        beside = self.images / OVERLAY_NAME
        return beside if beside.is_file() else None

    @property
    def options(self) -> dict[str, object]:
        """What of it shapes a plan besides the files it names (in the no-op cache's key)."""
        return {"namespace": self.namespace, "cuda": self.cuda, "only": list(self.only),
                "compat": str(self.compat_file) if self.compat_file else None,
                "platforms": list(self.platforms), "labels": [list(pair) for pair in self.labels]}

    def matrix_args(self) -> tuple[str, ...]:
        """The options another imgkit (a CI job's) needs to see the same matrix (defaults,
        and what the project file says, left out); the selection's --cuda/--only are not
        among them."""
        args: list[str] = []
        if self.images != DEFAULT_IMAGES and "images" not in self.from_project:
            args += ["--images", str(self.images)]
        if self.namespace != DEFAULT_NAMESPACE and "namespace" not in self.from_project:
            args += ["--namespace", self.namespace]
        if self.compat_file is not None and "compat" not in self.from_project:
            args += ["--compat", str(self.compat_file)]
        return tuple(args)
