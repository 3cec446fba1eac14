"""The engine of the docker CLI's current context (`docker context use rootless`, Docker
Desktop's desktop-linux, colima): imgkit talks to the engine `docker` itself talks to, which
is also where its buildx builds run. Contexts made by the real docker CLI, in a folder of
the test's own (DOCKER_CONFIG); the last test reaches the real engine through one."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from imgkit.builder.noopcache import entry_name
from imgkit.engine.address import engine_address
from imgkit.errors import UsageError

from .helpers.background import missing
from .helpers.cli import imgkit


def docker_cli(config: Path, *args: str) -> None:
    found = shutil.which("docker")
    if found is None:
        missing("docker CLI", ".ci/setup-host.sh")
    subprocess.run([found, *args], env={**os.environ, "DOCKER_CONFIG": str(config)},
                   check=True, capture_output=True, timeout=60)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    folder = tmp_path / "docker-config"
    docker_cli(folder, "context", "create", "laptop", "--docker", "host=unix:///tmp/laptop.sock")
    return folder


def test_the_context_docker_uses_is_the_engine_imgkit_uses(config: Path) -> None:
    environ = {"DOCKER_CONFIG": str(config)}
    assert engine_address(environ, 1000) == (None, None)                   # created, not chosen
    docker_cli(config, "context", "use", "laptop")
    assert engine_address(environ, 1000) == ("unix:///tmp/laptop.sock", "laptop")
    assert engine_address({**environ, "DOCKER_CONTEXT": "default"}, 1000)[0] is None
    assert engine_address({**environ, "DOCKER_HOST": "tcp://h:2375"}, 1000)[0] == "tcp://h:2375"
    assert engine_address({**environ, "IMGKIT_ENGINE": "podman"}, 0)[0] == "unix:///run/podman/podman.sock"
    home = config.parent / "home"                           # ~/.docker when DOCKER_CONFIG is unset
    shutil.copytree(config, home / ".docker")
    assert engine_address({"HOME": str(home)}, 1000)[0] == "unix:///tmp/laptop.sock"


def test_a_context_that_does_not_exist_or_needs_tls_files_says_what_to_set(config: Path,
                                                                           tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="the Docker context 'gone' .DOCKER_CONTEXT. does not exist"):
        engine_address({"DOCKER_CONFIG": str(config), "DOCKER_CONTEXT": "gone"}, 1000)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=engine", "-keyout", tmp_path / "key.pem",
                    "-out", tmp_path / "cert.pem"], check=True, capture_output=True, timeout=60)
    shutil.copy(tmp_path / "cert.pem", tmp_path / "ca.pem")
    docker_cli(config, "context", "create", "remote", "--docker",
               f"host=tcp://10.0.0.9:2376,ca={tmp_path}/ca.pem,cert={tmp_path}/cert.pem,"
               f"key={tmp_path}/key.pem")
    with pytest.raises(UsageError, match="reaches tcp://10.0.0.9:2376 with TLS files") as said:
        engine_address({"DOCKER_CONFIG": str(config), "DOCKER_CONTEXT": "remote"}, 1000)
    assert "DOCKER_TLS_VERIFY=1" in said.value.hint


def test_a_no_op_build_is_not_answered_for_the_engine_of_another_context(
        config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(config))
    monkeypatch.delenv("DOCKER_CONTEXT", raising=False)
    before = entry_name([])
    docker_cli(config, "context", "use", "laptop")
    assert entry_name([]) != before


@pytest.mark.docker
def test_imgkit_reaches_the_engine_of_the_current_context_and_names_it_when_dead(
        config: Path, tmp_path: Path) -> None:
    linked = tmp_path / "engine.sock"           # the real engine, by a path only the context names
    linked.symlink_to(os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
                      .removeprefix("unix://"))
    docker_cli(config, "context", "create", "alive", "--docker", f"host=unix://{linked}")
    env = {"DOCKER_CONFIG": str(config), "DOCKER_HOST": ""}
    reached = imgkit("size", "imgkit-test/never-built:1", env={**env, "DOCKER_CONTEXT": "alive"})
    assert reached.returncode == 2, reached.stderr       # the engine answered: no such image
    assert "not found in the local engine" in reached.stderr
    dead = imgkit("size", "imgkit-test/never-built:1", env={**env, "DOCKER_CONTEXT": "laptop"})
    assert dead.returncode == 3, dead.stderr
    said = " ".join(dead.stderr.split())
    assert "/tmp/laptop.sock" in said and "the Docker context 'laptop' points at" in said
