"""The docker CLI's current context, read from its files as the CLI reads them: DOCKER_CONTEXT,
else `currentContext` in config.json (in DOCKER_CONFIG, else ~/.docker), else "default".
A context other than "default" names the engine `docker` talks to (rootless Docker, Docker
Desktop, colima), and so the one imgkit's buildx builds run on. Standard library only: the
no-op build's path reads the name too (typing's import would cost it a tenth)."""
from __future__ import annotations

import hashlib
import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping


def config_dir(environ: Mapping[str, str]) -> str | None:
    """The docker CLI's folder: DOCKER_CONFIG, else ~/.docker (None: no home to look in)."""
    if environ.get("DOCKER_CONFIG"):
        return environ["DOCKER_CONFIG"]
    return os.path.join(environ["HOME"], ".docker") if environ.get("HOME") else None


def current_name(environ: Mapping[str, str]) -> str:
    """The current context's name ("default" when none is chosen)."""
    if environ.get("DOCKER_CONTEXT"):
        return environ["DOCKER_CONTEXT"]
    folder = config_dir(environ)
    if folder is None:
        return "default"
    try:
        with open(os.path.join(folder, "config.json"), "rb") as config:
            name = json.load(config).get("currentContext")
    except (OSError, ValueError, AttributeError):
        return "default"          # the docker CLI goes on without a readable config.json too
    return name if isinstance(name, str) and name else "default"


def endpoint(environ: Mapping[str, str], name: str) -> tuple[str | None, bool, bool]:
    """(its Docker endpoint's Host, whether it keeps TLS files, whether the context exists)
    of the context `name`, from contexts/meta/<sha256 of the name>/meta.json."""
    folder = os.path.join(config_dir(environ) or "", "contexts")
    key = hashlib.sha256(name.encode()).hexdigest()
    try:
        with open(os.path.join(folder, "meta", key, "meta.json"), "rb") as meta:
            host = json.load(meta)["Endpoints"]["docker"]["Host"]
    except OSError:
        return None, False, False
    except (ValueError, KeyError, TypeError):
        return None, False, True
    tls = os.path.isdir(os.path.join(folder, "tls", key, "docker"))
    return (host if isinstance(host, str) and host else None), tls, True
