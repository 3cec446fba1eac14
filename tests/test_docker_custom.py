"""A family using every customisation key, built on the real engine and inspected: the user
and its uid, entrypoint, cmd, labels, env, workdir, ports, a `run:` step's result, and an
extension of it that keeps the user."""
from __future__ import annotations

import subprocess
import sys

import pytest

from .helpers.families import TEAM, TEAM2
from .helpers.images import MINI_FAMILY

pytestmark = pytest.mark.docker


def test_every_customisation_key_is_in_the_built_image(engine, mini, namespace, tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    (images / "mini.yaml").write_text(MINI_FAMILY)
    (images / "team.yaml").write_text(TEAM.replace("family: base", "family: mini")
                                      .replace("team/app", f"{namespace}/app"))
    (images / "team2.yaml").write_text(TEAM2.replace("team/app2", f"{namespace}/app2"))
    done = subprocess.run([sys.executable, "-m", "imgkit", "build", "--images", str(images),
                           "--namespace", namespace], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    app = f"{namespace}/app:11.8-cudart-py3.11-bookworm"
    config = engine.client.api.inspect_image(app)["Config"]
    assert config["User"] == "ml"
    assert config["Entrypoint"] == ["/usr/bin/tini", "--"]
    assert config["Cmd"] == ["python3", "-c", "print('hi')"]
    assert config["Labels"]["com.example.team"] == "ml-platform"
    assert "APP_HOME=/workspace/app" in config["Env"]
    assert config["WorkingDir"] == "/workspace/app" and "8080/tcp" in config["ExposedPorts"]

    def run(image: str, script: str) -> str:
        return engine.client.containers.run(image, ["-c", script], entrypoint="/bin/sh",
                                            remove=True).decode().strip()

    assert run(app, "id -u; id -g; id -un; stat -c %U /workspace/app; cat /etc/team-marker; pwd") \
        .split() == ["1001", "1001", "ml", "ml", "built-by-run", "/workspace/app"]
    assert engine.client.containers.run(app, remove=True).decode().strip() == "hi"  # via tini
    app2 = f"{namespace}/app2:11.8-cudart-py3.11-bookworm"
    assert run(app2, "id -un; command -v jq") == "ml\n/usr/bin/jq"
    # verify runs its probe past the entrypoint, as the image's own user
    verified = subprocess.run([sys.executable, "-m", "imgkit", "verify", app2, "--gpus", "none"],
                              capture_output=True, text=True, timeout=600)
    assert verified.returncode == 0, verified.stdout + verified.stderr
