"""The CDI device names a host's spec files declare, read where the engine does not say them
itself (Podman's API has no list of them, unlike Docker's from API 1.50): each spec file's
`kind` and its devices' `name`s, as VENDOR/CLASS=NAME (NVIDIA's spec names `all` as a
device of its own). Only the names are read: applying a spec's edits is the engine's job."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from ..yamlload import YAMLError, safe_load

# the folders Podman reads unless containers.conf's cdi_spec_dirs names others
PODMAN_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")


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
