"""The build-settings server, over real HTTP on loopback: only requests carrying the run's
token get the files, and only the build's own steps are told the token."""
from __future__ import annotations

import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from imgkit.builder.buildenv import HOST_SUFFIX, PORT, BuildEnv, SecretServer


def get(name: str, token: str | None) -> tuple[int, bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    request = urllib.request.Request(f"http://127.0.0.1:{PORT}/{name}", headers=headers)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=5) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""


@pytest.fixture
def server(tmp_path: Path):
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    env = BuildEnv(ca_bundle=bundle, index_url="https://user:secret@pypi.example/simple")
    with SecretServer(env, "127.0.0.1") as running:
        yield running


def test_only_the_runs_token_gets_the_settings(server: SecretServer) -> None:
    assert get("index-url", None)[0] == 403
    assert get("index-url", "0" * 32)[0] == 403
    assert get("index-url", server.token) == (200, b"https://user:secret@pypi.example/simple")
    assert get("ca.pem", server.token)[1].startswith(b"-----BEGIN")


def test_the_token_reaches_the_build_as_a_hosts_entry(server: SecretServer) -> None:
    ((name, address),) = server.extra_hosts.items()
    assert address == "127.0.0.1" and name == server.token + HOST_SUFFIX
    assert re.fullmatch(r"[0-9a-f]{32}", server.token)


def test_each_run_has_its_own_token() -> None:
    env = BuildEnv(index_url="https://pypi.example/simple")
    assert SecretServer(env, "127.0.0.1").token != SecretServer(env, "127.0.0.1").token


def test_nothing_is_served_when_nothing_was_asked_for() -> None:
    with SecretServer(BuildEnv(), "127.0.0.1") as idle:
        assert idle.extra_hosts == {}
        with pytest.raises(OSError):
            get("index-url", idle.token)
