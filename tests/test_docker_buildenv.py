"""The build settings on the real engine: only the build's own steps can read them."""
from __future__ import annotations

import io

import docker.errors
import pytest

from imgkit.builder.buildenv import PORT, BuildEnv, SecretServer
from imgkit.builder.hostlock import one_build_at_a_time

# the legacy builder's own tests
pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("legacy_builder")]


def test_only_the_builds_own_steps_read_the_build_settings(engine, mini_stack, tmp_path):
    secret = "https://user:s3cret@pypi.example/simple"
    check = f'RUN imgkit-build-env sh -c \'test "$PIP_INDEX_URL" = "{secret}"\''
    dockerfile = f"FROM {mini_stack.python}\nUSER root\n{check}\n".encode()
    gateway = engine.bridge_gateway()
    # the settings server's port is the host's: one legacy build at a time, as imgkit's
    with one_build_at_a_time(lambda _: None), SecretServer(BuildEnv(index_url=secret), gateway) as server:
        # any other container on the bridge reaches the port, but not the settings
        fetch = (f"import urllib.request as u; u.build_opener(u.ProxyHandler({{}}))"
                 f".open('http://{gateway}:{PORT}/index-url', timeout=5)")
        with pytest.raises(docker.errors.ContainerError) as refused:
            engine.client.containers.run(mini_stack.python, ["python3", "-c", fetch], remove=True)
        assert b"403" in refused.value.stderr
        # the build's step, told the token by its --add-host entry, gets them
        image, _ = engine.client.images.build(fileobj=io.BytesIO(dockerfile), rm=True, forcerm=True,
                                              extra_hosts=server.extra_hosts, nocache=True)
        engine.remove_image(image.id)
    # a plain docker build runs the step without them, and says so
    with pytest.raises(docker.errors.BuildError) as plain:
        engine.client.images.build(fileobj=io.BytesIO(dockerfile), rm=True, forcerm=True, nocache=True)
    assert any("not run by `imgkit build`" in str(chunk.get("stream", "")) for chunk in plain.value.build_log)
