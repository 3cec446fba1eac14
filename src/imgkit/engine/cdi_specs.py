"""The CDI device names a host's spec files declare, read where the engine does not say them
itself (Podman's API has no list of them, unlike Docker's from API 1.50): each spec file's
`kind` and its devices' `name`s, as VENDOR/CLASS=NAME (NVIDIA's spec names `all` as a
device of its own). Only the names are read: applying a spec's edits is the engine's job."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable, Mapping

from ..yamlload import YAMLError, safe_load

# the folders Podman reads unless containers.conf's cdi_spec_dirs names others
PODMAN_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")
ROOTLESS_SOCKET = re.compile(r"^/run/user/(\d+)/")


def podman_spec_dirs(socket_path: str | None, env: Mapping[str, str] = os.environ,
                     root: Path = Path("/"), home: Path | None = None) -> tuple[list[str], bool]:
    """The folders a Podman service reads CDI specs from: `engine.cdi_spec_dirs` of the last
    containers.conf file that sets it, in the order containers.conf(5) reads them (the
    rootless service's user's own files last), and whether that is known for sure (not
    when a file cannot be read as TOML)."""
    from .. import tomlfile
    found = ROOTLESS_SOCKET.match(socket_path or "")
    uid = int(found.group(1)) if found else None
    dirs, sure = list(PODMAN_SPEC_DIRS), True
    for path in _conf_files(uid, env, root, home):
        try:
            engine = tomlfile.loads(path.read_text()).get("engine") or {}
        except (OSError, UnicodeDecodeError, tomlfile.TOMLDecodeError):
            sure = False
            continue
        given = engine.get("cdi_spec_dirs") if isinstance(engine, dict) else None
        if isinstance(given, list) and all(isinstance(d, str) for d in given):
            dirs = given
    return dirs, sure


def _conf_files(uid: int | None, env: Mapping[str, str], root: Path,
                home: Path | None) -> list[Path]:
    if env.get("CONTAINERS_CONF"):
        files = [Path(env["CONTAINERS_CONF"])]
    else:
        def with_dropins(conf: Path) -> list[Path]:
            return [conf, *sorted(Path(f"{conf}.d").glob("*.conf"))]
        etc = root / "etc/containers"
        files = [*with_dropins(root / "usr/share/containers/containers.conf"),
                 *with_dropins(etc / "containers.conf")]
        if uid is None:
            files += sorted((etc / "containers.rootful.conf.d").glob("*.conf"))
        else:
            files += sorted((etc / "containers.rootless.conf.d").glob("*.conf"))
            files += sorted((etc / "containers.rootless.conf.d" / str(uid)).glob("*.conf"))
            files += with_dropins((home or _home_of(uid)) / ".config/containers/containers.conf")
    if env.get("CONTAINERS_CONF_OVERRIDE"):
        files.append(Path(env["CONTAINERS_CONF_OVERRIDE"]))
    return [f for f in files if f.is_file()]


def _home_of(uid: int) -> Path:
    import pwd
    try:
        return Path(pwd.getpwuid(uid).pw_dir)
    except KeyError:
        return Path("/nonexistent")


def device_names(folders: Iterable[str]) -> list[str]:
    """Every device name the spec files (*.yaml, *.yml, *.json) in `folders` declare; a file
    that cannot be read or parsed declares none (the engine reports it when used)."""
    names: list[str] = []
    for folder in folders:
        try:
            files = sorted(p for p in Path(folder).iterdir()
                           if p.suffix in (".yaml", ".yml", ".json") and p.is_file())
        except OSError:
            continue
        for path in files:
            names += _declared(path)
    return sorted(set(names))


def _declared(path: Path) -> list[str]:
    try:
        spec = safe_load(path.read_text())      # JSON is YAML too
    except (OSError, UnicodeDecodeError, YAMLError):
        return []
    if not isinstance(spec, dict) or not isinstance(spec.get("kind"), str):
        return []
    kind = spec["kind"]
    devices = [d.get("name") for d in spec.get("devices") or [] if isinstance(d, dict)]
    return [f"{kind}={name}" for name in devices if isinstance(name, str) and name]
