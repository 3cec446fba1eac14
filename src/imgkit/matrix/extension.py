"""Extension families: what teams add on top of another family's images (pinned pip and apt
packages, files from beside the matrix, environment, ports, the default command), each
built as a child layer of every image it extends.

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

Every value is checked here, with the file and key at fault; what needs the parent's
stack (a CUDA wheel of another CUDA major, a pin that would replace the parent's) is checked
when the plan is made.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from packaging.requirements import InvalidRequirement, Requirement

from ..errors import SpecError

KEYS = {"family", "description", "extends", "repository", "tag", "aliases", "size_budget",
        "pip", "apt", "files", "env", "ports", "cmd"}
NARROWING = ("os", "python", "cuda", "cudnn", "nccl", "framework_version")
APT = re.compile(r"^[a-z0-9][a-z0-9+.-]{0,63}(=[A-Za-z0-9.+:~-]{1,64})?$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
LINE = re.compile(r"^[^\n\r\x00]{0,1024}$")
SOURCE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$")
DESTINATION = re.compile(r"^/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")
DEFAULT_TAG = "{parent_tag}"


@dataclass(frozen=True)
class Extension:
    parent_family: str
    narrow: tuple[tuple[str, tuple[str, ...]], ...] = ()   # axis -> values the parent may have
    pip: tuple[str, ...] = ()                 # pinned requirements, name==version
    apt: tuple[str, ...] = ()
    files: tuple[tuple[str, str], ...] = ()   # (path beside the matrix file, path in the image)
    env: tuple[tuple[str, str], ...] = ()
    ports: tuple[int, ...] = ()
    cmd: tuple[str, ...] = ()
    matrix_dir: str = ""                      # where `files` are read from

    def pins(self) -> dict[str, str]:
        """Normalised package name -> pinned version."""
        return {canonical(Requirement(r).name): _pinned_version(Requirement(r)) for r in self.pip}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pinned_version(requirement: Requirement) -> str:
    return next(iter(requirement.specifier)).version


def _list(file: str, key: str, raw: Any, item: Callable[[str, Any], Any]) -> tuple[Any, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SpecError(file, key, f"must be a list, got a {type(raw).__name__}")
    return tuple(item(f"{key}[{i}]", value) for i, value in enumerate(raw))


def _string(file: str, key: str, value: Any, pattern: re.Pattern[str], what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise SpecError(file, key, f"expected {what}, got {value!r}")
    text = str(value)
    if not pattern.match(text):
        raise SpecError(file, key, f"{text!r} is not a valid {what}")
    return text


def _pin(file: str, key: str, value: Any) -> str:
    """A requirement pinned to one exact version: what is built is what was declared."""
    text = _string(file, key, value, LINE, "pinned requirement")
    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        raise SpecError(file, key, f"{text!r} is not a requirement: {exc}")
    specs = list(requirement.specifier)
    if (requirement.url or requirement.marker or len(specs) != 1 or specs[0].operator != "=="
            or "*" in specs[0].version):
        raise SpecError(file, key, f"{text!r} is not pinned to one version",
                        hint=f"pin it exactly, e.g. {requirement.name}==1.2.3")
    return text


def _files(file: str, raw: Any) -> tuple[tuple[str, str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise SpecError(file, "files", "must map a path beside the matrix file to a path in "
                        "the image")
    here = Path(file).parent
    out = []
    for source, destination in raw.items():
        key = f"files.{source}"
        _string(file, key, source, SOURCE, "relative path (no '..')")
        if not (here / str(source)).is_file():
            raise SpecError(file, key, f"{here / str(source)} is not a file")
        out.append((str(source), _string(file, key, destination, DESTINATION,
                                          "absolute path in the image")))
    return tuple(out)


def _env(file: str, raw: Any) -> tuple[tuple[str, str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise SpecError(file, "env", "must map variable names to values")
    return tuple((_string(file, f"env.{name}", name, ENV_NAME, "variable name"),
                  _string(file, f"env.{name}", value, LINE, "value (one line)"))
                 for name, value in raw.items())


def _port(file: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise SpecError(file, key, f"{value!r} is not a port (1 to 65535)")
    return value


def _extends(file: str, raw: Any) -> tuple[str, tuple[tuple[str, tuple[str, ...]], ...]]:
    if not isinstance(raw, dict) or not isinstance(raw.get("family"), str):
        raise SpecError(file, "extends", "must name a family: {family: NAME, ...axis: [values]}")
    narrow = []
    for axis, values in raw.items():
        if axis == "family":
            continue
        if axis not in NARROWING:
            raise SpecError(file, f"extends.{axis}", "unknown axis",
                            hint=f"narrow by: {', '.join(NARROWING)}")
        if not isinstance(values, list) or not values:
            raise SpecError(file, f"extends.{axis}", "must be a non-empty list of values")
        narrow.append((axis, tuple(_string(file, f"extends.{axis}[{i}]", v, LINE, "value")
                                   for i, v in enumerate(values))))
    return raw["family"], tuple(narrow)


# A notebook server is a remote shell: never as root, never without authentication.
UNSAFE_ARGUMENT = re.compile(r"^--(allow-root|(ServerApp|NotebookApp|IdentityProvider)\.token=(''|\"\")?"
                             r"|(ServerApp|NotebookApp)\.(password=(''|\"\")?|allow_root=True|"
                             r"disable_check_xsrf=True))$")


def _check_authentication(file: str, extension: Extension) -> None:
    for i, argument in enumerate(extension.cmd):
        if UNSAFE_ARGUMENT.match(argument):
            raise SpecError(file, f"cmd[{i}]", f"{argument!r} would run a server as root or "
                            "without authentication", hint="keep the token: set JUPYTER_TOKEN "
                            "when the container starts")
    for name, value in extension.env:
        if name in ("JUPYTER_TOKEN", "JUPYTER_PASSWORD") and not value:
            raise SpecError(file, f"env.{name}", "an empty token turns authentication off")


def parse_extension(file: str, raw: dict[str, Any]) -> Extension:
    unknown = set(raw) - KEYS
    if unknown:
        raise SpecError(file, sorted(unknown)[0], "not a key of an extension family",
                        hint=f"an extension family has: {', '.join(sorted(KEYS))}")
    parent, narrow = _extends(file, raw["extends"])
    extension = Extension(
        parent_family=parent, narrow=narrow,
        pip=_list(file, "pip", raw.get("pip"), lambda k, v: _pin(file, k, v)),
        apt=_list(file, "apt", raw.get("apt"), lambda k, v: _string(file, k, v, APT, "apt package")),
        files=_files(file, raw.get("files")), env=_env(file, raw.get("env")),
        ports=_list(file, "ports", raw.get("ports"), lambda k, v: _port(file, k, v)),
        cmd=_list(file, "cmd", raw.get("cmd"), lambda k, v: _string(file, k, v, LINE, "argument")),
        matrix_dir=str(Path(file).parent))
    _check_authentication(file, extension)
    if not (extension.pip or extension.apt or extension.files):
        raise SpecError(file, "pip", "an extension adds something: pip, apt or files")
    names = [canonical(Requirement(r).name) for r in extension.pip]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SpecError(file, "pip", f"{twice[0]} is pinned twice")
    return extension
