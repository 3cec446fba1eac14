"""ssh:// engines: the address as the docker CLI reads it, and the bridge's pumping, with
a stand-in `ssh` first on PATH (tests/test_docker_reproducible.py reaches a real engine
through a real sshd)."""
from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from imgkit.engine.ssh_bridge import SshAddress, SshBridge, parse
from imgkit.errors import UsageError


def test_the_address_is_read_as_the_docker_cli_reads_it() -> None:
    assert parse("ssh://gpu-box") == SshAddress("gpu-box", None, None)
    assert parse("ssh://gpu_box_02") == SshAddress("gpu_box_02", None, None)   # an ssh_config alias
    where = parse("ssh://ci@gpu-box:2222/run/user/1000/docker.sock")
    assert where == SshAddress("ci@gpu-box", 2222, "/run/user/1000/docker.sock")
    assert where.command() == ["ssh", "-p", "2222", "-o", "ConnectTimeout=30", "-T", "--", "ci@gpu-box",
                               "docker", "--host", "unix:///run/user/1000/docker.sock", "system",
                               "dial-stdio"]


@pytest.mark.parametrize("address", ["ssh://", "ssh://box:port", "tcp://box:2375", "ssh://u:pw@box",
                                     "ssh://gpu box", "ssh://box;reboot"])
def test_an_address_that_is_not_ssh_is_refused_naming_the_form(address: str) -> None:
    with pytest.raises(UsageError, match="not an ssh address") as info:
        parse(address)
    assert info.value.hint == "ssh://[user@]host[:port][/path/to/docker.sock]"


def _fake_ssh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    (tmp_path / "ssh").write_text(f"#!/bin/sh\n{body}\n")
    (tmp_path / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{Path('/usr/bin')}:{Path('/bin')}")


def _exchange(bridge: SshBridge, sent: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(10)
        conn.connect(bridge.path)

        def send() -> None:           # beside the reads, as a client reads an answer
            try:
                conn.sendall(sent)
                conn.shutdown(socket.SHUT_WR)
            except OSError:           # the far side went first (an ssh that failed)
                pass
        sender = threading.Thread(target=send)
        sender.start()
        got = b""
        try:
            while chunk := conn.recv(1 << 16):
                got += chunk
        except ConnectionResetError:  # ended with our bytes unread: an end all the same
            pass
        sender.join()
        return got


def test_each_connection_is_one_ssh_whose_bytes_go_both_ways(tmp_path, monkeypatch) -> None:
    _fake_ssh(tmp_path, monkeypatch, "exec cat")              # the far side echoes
    bridge = SshBridge("ssh://box")
    payload = bytes(range(256)) * 4096                          # 1 MiB, every byte value
    assert _exchange(bridge, payload) == payload
    assert _exchange(bridge, b"again") == b"again"
    assert bridge.address == f"unix://{bridge.path}"


def test_an_ssh_that_fails_ends_the_connection_and_its_words_are_kept(tmp_path, monkeypatch) -> None:
    _fake_ssh(tmp_path, monkeypatch, 'echo "box: Permission denied (publickey)." >&2; exit 255')
    bridge = SshBridge("ssh://box")
    assert _exchange(bridge, b"GET /_ping HTTP/1.1\r\n\r\n") == b""
    # kept before the connection ends: the error docker-py raises can say it
    assert bridge.last_error() == "box: Permission denied (publickey)."
