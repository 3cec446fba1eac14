"""A family using every customisation key, built on the real engine and inspected: the user
and its uid, entrypoint, cmd, labels, env, workdir, ports, a `run:` step's result, and an
extension of it that keeps the user."""
from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from .helpers.docs import families
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
    (tmp_path / "imgkit.toml").write_text(     # the team's OCI labels, for its images
        'images = "images"\n[labels]\n"org.opencontainers.image.vendor" = "Example ML"\n')
    done = subprocess.run([sys.executable, "-m", "imgkit", "build", "--images", str(images),
                           "--namespace", namespace], capture_output=True, text=True, timeout=900,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    app = f"{namespace}/app:11.8-cudart-py3.11-bookworm"
    config = engine.client.api.inspect_image(app)["Config"]
    assert config["User"] == "ml"
    assert config["Entrypoint"] == ["/usr/bin/tini", "--"]
    assert config["Cmd"] == ["python3", "-c", "print('hi')"]
    assert config["Labels"]["com.example.team"] == "ml-platform"
    assert config["Labels"]["org.opencontainers.image.vendor"] == "Example ML"
    assert config["Labels"]["org.imgkit.tag"] == app
    shared = engine.client.api.inspect_image(f"{namespace}/python:3.11-bookworm")["Config"]
    assert "org.opencontainers.image.vendor" not in shared["Labels"]      # imgkit's layers
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


def test_the_docs_user_and_run_example_builds_and_holds_what_it_says(engine, mini, namespace,
                                                                     tmp_path):
    """docs/your-matrix.md's family with a user, env, workdir and `run:` steps that chown to
    that user, as written, moved onto the mini stack (its parent and repository only): the
    steps run as root once the user exists, and the image holds all of it."""
    [document] = [d for _, _, d in families() if "user" in d and "run" in d]
    document = {**document, "extends": {"family": "mini"}, "repository": f"{namespace}/serving"}
    images = tmp_path / "images"
    images.mkdir()
    (images / "mini.yaml").write_text(MINI_FAMILY)
    (images / "serving.yaml").write_text(yaml.safe_dump(document))
    done = subprocess.run([sys.executable, "-m", "imgkit", "build", "--images", str(images),
                           "--namespace", namespace], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    image = f"{namespace}/serving:11.8-cudart-py3.11-bookworm"
    config = engine.client.api.inspect_image(image)["Config"]
    user = document["user"]["name"]
    assert config["User"] == user and config["WorkingDir"] == document["workdir"]
    assert f"HF_HOME={document['env']['HF_HOME']}" in config["Env"]
    said = engine.client.containers.run(image, ["-c", "stat -c %U /opt/models; id -u"],
                                        entrypoint="/bin/sh", remove=True).decode().split()
    assert said == [user, str(document["user"]["uid"])]
