"""A project: the folder whose `imgkit.toml` (or `[tool.imgkit]` in `pyproject.toml`) says
where its matrix lives, found by walking up from the current folder as ruff and pytest find
theirs. Every command run anywhere inside the project then sees the same matrix.

    # imgkit.toml                       # or, in pyproject.toml, under [tool.imgkit]
    images = "images"                   # the matrix folder (the default; paths are from this
                                        # file's folder)
    templates = "templates"             # optional: your own templates
    compat = "images/compat.yaml"       # optional: your compatibility data
    namespace = "ml"                    # the shared layers' repository prefix
    registry = "registry.example.com/ml"   # where `imgkit ci`'s pipeline promotes to
    index_url = "https://pypi.example.com/simple"   # the package index builds and locks use
    extra_index_url = "https://pypi.example.com/team/simple"   # and one more beside it
    [select]                            # what a command works on when no --cuda, --only or
    cuda = "12.8"                       # --platform is given
    only = ["ml/pytorch:*"]

A setting comes from, first to last: the command line, an IMGKIT_* variable (IMGKIT_IMAGES,
IMGKIT_TEMPLATES, IMGKIT_COMPAT, IMGKIT_NAMESPACE, IMGKIT_REGISTRY, IMGKIT_INDEX_URL,
IMGKIT_EXTRA_INDEX_URL), the project file, imgkit's default.
Standard library only: the no-op build's fast path reads it too."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import UsageError
from .selection import DEFAULT_IMAGES, DEFAULT_NAMESPACE, Selection

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

PROJECT_FILE = "imgkit.toml"
PATHS = ("images", "templates", "compat")
TEXTS = ("namespace", "registry", "index_url", "extra_index_url")
SELECT = {"cuda": str, "only": list, "platforms": list}
ENV = {"images": "IMGKIT_IMAGES", "templates": "IMGKIT_TEMPLATES", "compat": "IMGKIT_COMPAT",
       "namespace": "IMGKIT_NAMESPACE", "registry": "IMGKIT_REGISTRY",
       "index_url": "IMGKIT_INDEX_URL", "extra_index_url": "IMGKIT_EXTRA_INDEX_URL"}


@dataclass(frozen=True)
class Project:
    file: Path | None                          # None: no project file was found
    settings: dict[str, Any] = field(default_factory=dict)   # paths made absolute
    select: dict[str, Any] = field(default_factory=dict)

    def setting(self, name: str) -> Any:
        """A setting from its IMGKIT_* variable, else the project file, else None."""
        from_env = os.environ.get(ENV[name]) if name in ENV else None
        if from_env:
            return Path(from_env) if name in PATHS else from_env
        return self.settings.get(name)


def _table(path: Path) -> dict[str, Any] | None:
    """The settings table of a project file, or None when it is not one."""
    try:
        text = path.read_text()
    except OSError:
        return None
    if path.name == "pyproject.toml" and "[tool.imgkit" not in text:
        return None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}")
    if path.name == PROJECT_FILE:
        return document
    table = document.get("tool", {}).get("imgkit")
    return table if isinstance(table, dict) else None


def _checked(path: Path, table: dict[str, Any]) -> Project:
    """The project a table declares, every key checked (file and key named)."""
    where = path.parent
    settings: dict[str, Any] = {}
    select: dict[str, Any] = {}
    for key, value in table.items():
        if key in PATHS and isinstance(value, str) and value:
            settings[key] = _shown(where / value)
        elif key in TEXTS and isinstance(value, str) and value:
            settings[key] = value
        elif key == "select" and isinstance(value, dict):
            select = _selection(path, value)
        else:
            known = ", ".join((*PATHS, *TEXTS, "select"))
            raise UsageError(f"{path}: {key}: not a setting, or not of its type ({value!r})",
                             hint=f"settings: {known} (docs/your-matrix.md#the-project-file)")
    settings.setdefault("images", _shown(where / "images"))   # a project's matrix: its images/
    return Project(file=path, settings=settings, select=select)


def _shown(path: Path) -> Path:
    """`path` relative to the current folder when it lies below it (as a user would type
    it, and as a CI job in the same checkout names it), else absolute."""
    try:
        return path.relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _selection(path: Path, table: dict[str, Any]) -> dict[str, Any]:
    from .platforms import KNOWN
    for key, value in table.items():
        kind = SELECT.get(key)
        if kind is None or not isinstance(value, kind) or (
                kind is list and not all(isinstance(v, str) for v in value)):
            raise UsageError(f"{path}: select.{key}: not a selection setting, or not of its "
                             f"type ({value!r})", hint="select: cuda = \"X.Y\", only = [GLOB, "
                             "...], platforms = [PLATFORM, ...]")
    unknown = [p for p in table.get("platforms", []) if p not in KNOWN]
    if unknown:
        raise UsageError(f"{path}: select.platforms: {unknown[0]!r} is not one of "
                         f"{', '.join(KNOWN)}")
    return dict(table)


def find_project(start: Path | None = None) -> Project:
    """The nearest project file at or above `start` (default: the current folder)."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        for name in (PROJECT_FILE, "pyproject.toml"):
            table = _table(folder / name)
            if table is not None:
                return _checked(folder / name, table)
    return Project(file=None)


def setting_or(given: str | None, name: str) -> str | None:
    """An option's value: as given, else its IMGKIT_* variable, else the project file's."""
    if given:
        return given
    found = find_project().setting(name)
    return str(found) if found else None


def searched_hint(start: Path | None = None) -> str:
    """What to say when no matrix was found."""
    here = (start or Path.cwd()).resolve()
    return (f"no {PROJECT_FILE} (or [tool.imgkit] in pyproject.toml) in {here} or above it, "
            "and no images/ here: run `imgkit init` to start a project, or pass --images DIR "
            "(or set IMGKIT_IMAGES)")


def selection_from(images: Path | None = None, templates: Path | None = None,
                   compat: Path | None = None, namespace: str | None = None,
                   cuda: str | None = None, only: tuple[str, ...] = (),
                   platforms: tuple[str, ...] = (), start: Path | None = None) -> Selection:
    """The Selection a command works on: what the command line gave (None or empty where
    it gave nothing), else the IMGKIT_* variables, else the project file, else defaults."""
    project = find_project(start)
    given = {"images": images, "templates": templates, "compat": compat, "namespace": namespace}
    taken: dict[str, Any] = {name: value if value is not None else project.setting(name)
                             for name, value in given.items()}
    from_project = frozenset(n for n, v in given.items()
                             if v is None and n in project.settings and not os.environ.get(ENV[n]))
    if cuda is None and not only and not platforms:
        cuda = project.select.get("cuda")
        only = tuple(project.select.get("only", ()))
        platforms = tuple(dict.fromkeys(project.select.get("platforms", ())))
    return Selection(images=taken["images"] or DEFAULT_IMAGES,
                     namespace=taken["namespace"] or DEFAULT_NAMESPACE, cuda=cuda, only=only,
                     templates=taken["templates"], compat_file=taken["compat"],
                     platforms=platforms, project=project.file, from_project=from_project)
