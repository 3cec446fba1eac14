"""Where the docker CLI looks for buildx, and what hides it.

The CLI finds a plugin in `$DOCKER_CONFIG/cli-plugins` (default `~/.docker/cli-plugins`) and
in the system's plugin folders (`/usr/local/lib/docker/cli-plugins`, `/usr/libexec/docker/
cli-plugins`...). A CI job that sets DOCKER_CONFIG for its own logins, on a machine whose
buildx was installed for the user alone, loses buildx: `imgkit build` then falls back to the
legacy builder, and `--engine buildx` fails. Said in words where it happens.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

# where a plugin is found whatever DOCKER_CONFIG says (the one a package installs to first)
SYSTEM_PLUGINS = Path("/usr/local/lib/docker/cli-plugins")


def hidden_buildx(said: str, environ: Mapping[str, str] = os.environ,
                  home: Path | None = None) -> str | None:
    """A sentence when the docker CLI `said` it has no buildx, DOCKER_CONFIG points away
    from the user's Docker config and that config holds the plugin; None otherwise."""
    if not no_such_plugin(said):
        return None                  # buildx is there and failed otherwise
    config = environ.get("DOCKER_CONFIG")
    users = (home if home is not None else Path.home()) / ".docker"
    plugin = users / "cli-plugins" / "docker-buildx"
    if not config or Path(config).expanduser().resolve() == users.resolve() or not plugin.exists():
        return None
    return (f"DOCKER_CONFIG={config} hides the user's buildx ({plugin}): link it into "
            f"{Path(config) / 'cli-plugins'}, or install it where every config finds it "
            f"({SYSTEM_PLUGINS})")


def no_such_plugin(said: str) -> bool:
    """Whether the docker CLI said it has no such command (28.x: "unknown command: docker
    buildx"; before: "'buildx' is not a docker command")."""
    return "unknown command" in said or "is not a docker command" in said
