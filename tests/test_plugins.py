"""Where the docker CLI finds buildx: a DOCKER_CONFIG of a job's own hides the user's."""
from __future__ import annotations

from pathlib import Path

from imgkit.builder.plugins import SYSTEM_PLUGINS, hidden_buildx, no_such_plugin

MISSING = "docker: unknown command: docker buildx"      # what the CLI says (28.5)


def users_buildx(home: Path) -> Path:
    plugin = home / ".docker" / "cli-plugins" / "docker-buildx"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("#!/bin/sh\n")
    return plugin


def test_a_config_of_its_own_hiding_the_users_buildx_is_named_with_both_ways_out(tmp_path: Path) -> None:
    plugin = users_buildx(tmp_path / "home")
    said = hidden_buildx(MISSING, {"DOCKER_CONFIG": "/ci/job/docker"}, tmp_path / "home")
    assert said is not None
    assert f"DOCKER_CONFIG=/ci/job/docker hides the user's buildx ({plugin})" in said
    assert "/ci/job/docker/cli-plugins" in said and str(SYSTEM_PLUGINS) in said


def test_nothing_is_said_where_nothing_is_hidden(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert hidden_buildx(MISSING, {}, home) is None                            # no DOCKER_CONFIG
    assert hidden_buildx(MISSING, {"DOCKER_CONFIG": "/ci/docker"}, home) is None   # no user's buildx
    users_buildx(home)
    assert hidden_buildx(MISSING, {"DOCKER_CONFIG": str(home / ".docker")}, home) is None  # the user's own
    assert hidden_buildx(MISSING, {"DOCKER_CONFIG": ""}, home) is None
    # buildx there but failing otherwise: it hides nothing
    assert hidden_buildx("ERROR: no builder \"nope\" found", {"DOCKER_CONFIG": "/ci/docker"},
                         home) is None


def test_the_clis_words_for_a_missing_plugin_old_and_new() -> None:
    assert no_such_plugin(MISSING)                                            # 28.5, here
    assert no_such_plugin("docker: 'buildx' is not a docker command.")          # 20.10 to 27
    assert not no_such_plugin("ERROR: no builder \"nope\" found")
