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
    vulnerability_db = "advisories"     # `imgkit scan`'s advisory database (osv.dev's zips)
    fail_on = "high"                    # the severity `imgkit scan` fails from
    scanner = "trivy"                   # `imgkit scan`'s scanner (default: osv-scanner)
    [select]                            # what a command works on when no --cuda, --only or
    cuda = "12.8"                       # --platform is given
    only = ["ml/pytorch:*"]
    [labels]                            # on every image a framework or extension family
    "org.opencontainers.image.vendor" = "Example ML"   # names (a family's own labels: win)
    [cluster]                           # what `imgkit export k8s` needs of a cluster
    runtime_class = "nvidia"            # (export/cluster.py reads and checks this table)

A setting comes from, first to last: the command line, an IMGKIT_* variable (IMGKIT_IMAGES,
IMGKIT_TEMPLATES, IMGKIT_COMPAT, IMGKIT_NAMESPACE, IMGKIT_REGISTRY, IMGKIT_INDEX_URL,
IMGKIT_EXTRA_INDEX_URL, IMGKIT_VULNERABILITY_DB, IMGKIT_FAIL_ON, IMGKIT_SCANNER), the project file, imgkit's
default.
Standard library only: the no-op build's fast path reads it too."""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path

from .errors import SpecError, UsageError, every_problem
from .selection import DEFAULT_IMAGES, DEFAULT_NAMESPACE, Selection

PROJECT_FILE = "imgkit.toml"
PATHS = ("images", "templates", "compat", "vulnerability_db")
TEXTS = ("namespace", "registry", "index_url", "extra_index_url", "fail_on", "scanner")
ENV = {"images": "IMGKIT_IMAGES", "templates": "IMGKIT_TEMPLATES", "compat": "IMGKIT_COMPAT",
       "namespace": "IMGKIT_NAMESPACE", "registry": "IMGKIT_REGISTRY",
       "index_url": "IMGKIT_INDEX_URL", "extra_index_url": "IMGKIT_EXTRA_INDEX_URL",
       "vulnerability_db": "IMGKIT_VULNERABILITY_DB", "fail_on": "IMGKIT_FAIL_ON",
       "scanner": "IMGKIT_SCANNER"}


@dataclass(frozen=True)
class Settings:
    """What a project file sets (None: not set); paths as a user in this folder names them.
    Plain dataclasses, not pydantic: the no-op build's fast path reads this file too."""
    images: Path | None = None
    templates: Path | None = None
    compat: Path | None = None
    namespace: str | None = None
    registry: str | None = None
    index_url: str | None = None
    extra_index_url: str | None = None
    vulnerability_db: Path | None = None    # `imgkit scan`'s advisory database (a folder)
    fail_on: str | None = None              # the severity `imgkit scan` fails from
    scanner: str | None = None              # `imgkit scan`'s scanner (osv-scanner, trivy)

    def given(self) -> frozenset[str]:
        return frozenset(f.name for f in fields(self) if getattr(self, f.name) is not None)


@dataclass(frozen=True)
class Select:
    """The project's default selection (`[select]`): what a command works on when no
    --cuda, --only or --platform is given."""
    cuda: str | None = None
    only: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()


@dataclass(frozen=True)
class Project:
    file: Path | None                          # None: no project file was found
    settings: Settings = field(default_factory=Settings)
    select: Select = field(default_factory=Select)
    cluster: dict[str, object] | None = None   # [cluster], as written: export/cluster.py checks it
    labels: tuple[tuple[str, str], ...] = ()   # [labels]: the team's, on its families' images

    def setting(self, name: str) -> Path | str | None:
        """A setting from its IMGKIT_* variable, else the project file, else None."""
        from_env = os.environ.get(ENV[name]) if name in ENV else None
        if from_env:
            return Path(from_env) if name in PATHS else from_env
        value: Path | str | None = getattr(self.settings, name)
        return value


def _table(path: Path) -> tuple[dict[str, object], str] | None:
    """The settings table of a project file and the file's text, or None when it is not one."""
    try:
        text = path.read_text()
    except OSError:
        return None
    if path.name == "pyproject.toml" and "[tool.imgkit" not in text:
        return None
    document = _parsed(path, text)
    if path.name == PROJECT_FILE:
        return document, text
    tool = document.get("tool")
    table = tool.get("imgkit") if isinstance(tool, dict) else None
    return (table, text) if isinstance(table, dict) else None


def _parsed(path: Path, text: str) -> dict[str, object]:
    from . import tomlfile  # imported only when there is a TOML file to read
    try:
        return tomlfile.loads(text)
    except tomlfile.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}")


def read_toml(path: Path) -> dict[str, object]:
    """A TOML settings file given by name (bad or missing: exit 2, naming it)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}")
    return _parsed(path, text)


def _checked(path: Path, table: dict[str, object], text: str) -> Project:
    """The project a table declares, every key checked: every problem at once, each with
    the file, line and key (project_problems.py words them)."""
    where = path.parent
    paths: dict[str, Path] = {"images": _shown(where / "images")}   # a project's matrix: its images/
    texts: dict[str, str] = {}
    select = Select()
    cluster: dict[str, object] | None = None
    team_labels: tuple[tuple[str, str], ...] = ()
    found: list[SpecError] = []
    for key, value in table.items():
        if key in PATHS and isinstance(value, str) and value:
            paths[key] = _shown(where / value)
        elif key in TEXTS and isinstance(value, str) and value:
            texts[key] = value
        elif key == "select" and isinstance(value, dict):
            select = _selection(path, text, value, found)
        elif key == "cluster" and isinstance(value, dict):
            cluster = value
        elif key == "labels" and isinstance(value, dict):
            team_labels = _labels(path, text, value, found)
        else:
            from . import project_problems
            found.append(project_problems.setting(
                path, text, key, value, "a path in quotes" if key in PATHS else "text in quotes",
                (*PATHS, *TEXTS, "select", "cluster", "labels")))
    if found:
        raise every_problem(found)
    settings = Settings(images=paths["images"], templates=paths.get("templates"),
                        compat=paths.get("compat"), namespace=texts.get("namespace"),
                        registry=texts.get("registry"), index_url=texts.get("index_url"),
                        extra_index_url=texts.get("extra_index_url"),
                        vulnerability_db=paths.get("vulnerability_db"), fail_on=texts.get("fail_on"),
                        scanner=texts.get("scanner"))
    return Project(file=path, settings=settings, select=select, cluster=cluster,
                   labels=team_labels)


def _labels(path: Path, text: str, table: dict[str, object],
            found: list[SpecError]) -> tuple[tuple[str, str], ...]:
    """[labels]: names a team may set, each with a text value."""
    from .labels import refused
    for name, value in table.items():
        why = refused(name) if isinstance(value, str) else "its value must be text"
        if why is not None:
            from .project_problems import where
            found.append(SpecError(str(path), f"labels.{name}", why, line=where(text, "labels", name)[0],
                                   hint="e.g. \"org.opencontainers.image.vendor\" = \"Example ML\""))
    return tuple((str(k), str(v)) for k, v in table.items())


def _shown(path: Path) -> Path:
    """`path` relative to the current folder when it lies below it (as a user would type
    it, and as a CI job in the same checkout names it), else absolute."""
    try:
        return path.relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _selection(path: Path, text: str, table: dict[str, object],
               found: list[SpecError]) -> Select:
    from .platforms import KNOWN
    lists: dict[str, tuple[str, ...]] = {}
    for key, value in table.items():
        if key in ("only", "platforms") and isinstance(value, list) and all(
                isinstance(v, str) for v in value):
            lists[key] = tuple(value)
        elif key != "cuda" or not isinstance(value, str):
            from . import project_problems
            found.append(project_problems.selection(path, text, key, value))
    unknown = [p for p in lists.get("platforms", ()) if p not in KNOWN]
    if unknown:
        from .project_problems import where
        found.append(SpecError(str(path), "select.platforms", f"{unknown[0]!r} is not one of "
                               f"{', '.join(KNOWN)}", line=where(text, "select", "platforms")[0]))
    cuda = table.get("cuda")
    return Select(cuda=cuda if isinstance(cuda, str) else None, only=lists.get("only", ()),
                  platforms=tuple(dict.fromkeys(lists.get("platforms", ()))))


def find_project(start: Path | None = None) -> Project:
    """The nearest project file at or above `start` (default: the current folder)."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        for name in (PROJECT_FILE, "pyproject.toml"):
            read = _table(folder / name)
            if read is not None:
                return _checked(folder / name, *read)
    return Project(file=None)


def setting_or(given: str | None, name: str) -> str | None:
    """An option's value: as given, else its IMGKIT_* variable, else the project file's."""
    if given:
        return given
    found = find_project().setting(name)
    return str(found) if found else None


def scan_required() -> bool:
    """Whether the project gates on `imgkit scan` (publish, promote, the site's signed
    scans): it, or IMGKIT_VULNERABILITY_DB, names an advisory database."""
    return setting_or(None, "vulnerability_db") is not None


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
    taken = {name: value if value is not None else project.setting(name)
             for name, value in given.items()}
    in_file = project.settings.given()
    from_project = frozenset(n for n, v in given.items()
                             if v is None and n in in_file and not os.environ.get(ENV[n]))
    if cuda is None and not only and not platforms:
        cuda, only, platforms = project.select.cuda, project.select.only, project.select.platforms
    return Selection(images=_path(taken["images"]) or DEFAULT_IMAGES,
                     namespace=str(taken["namespace"] or DEFAULT_NAMESPACE), cuda=cuda, only=only,
                     templates=_path(taken["templates"]), compat_file=_path(taken["compat"]),
                     platforms=platforms, project=project.file, from_project=from_project,
                     labels=project.labels)


def _path(value: Path | str | None) -> Path | None:
    return Path(value) if value is not None else None
