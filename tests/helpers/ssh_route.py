"""An ssh route to a Docker engine, as a user reaches another machine's: `ssh://HOST`,
where imgkit (engine/ssh_bridge.py) and the docker CLI (buildx) both run the `ssh` client,
which runs `docker system dial-stdio` on the far side. Here the far side is an sshd of the
test's own on 127.0.0.1, whose one key may run only that command, against the engine it
is given (a forced command). The client's settings (port, key, the host's key) are what a
user's ~/.ssh/config says; here an `ssh` first on PATH adds `-F` with the test's own, so
nothing of the machine's ssh set-up is read or changed."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from .second_engine import free_port

HOST = "imgkit-second"          # the name ssh_config gives 127.0.0.1 and the port
REFUSED = "imgkit-refused"      # the same sshd, with a key it does not know


@dataclass(frozen=True)
class SshRoute:
    address: str                # ssh://imgkit-second
    refused: str                # ssh://imgkit-refused: sshd says "Permission denied (publickey..."
    environ: dict[str, str]     # PATH with the test's ssh first


def _sshd() -> str:
    found = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").is_file() else None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("no sshd on this host (.ci/setup-test-tools.sh installs openssh-server)")
        pytest.skip("no sshd on this host (apt-get install openssh-server)")
    return found


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


@contextlib.contextmanager
def ssh_route(engine: str, folder: Path) -> Iterator[SshRoute]:
    """An sshd on 127.0.0.1 whose one key runs `docker -H ENGINE system dial-stdio`, and the
    client settings that reach it as ssh://imgkit-second. Stopped whatever happens."""
    sshd, docker = _sshd(), shutil.which("docker")
    assert docker, "no docker CLI on PATH"
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    host_key = _keygen(folder / "host_key")
    user_key = _keygen(folder / "user_key")
    _keygen(folder / "other_key")
    (folder / "authorized_keys").write_text(
        f'command="{docker} -H {engine} system dial-stdio",restrict {user_key}\n')
    (folder / "sshd_config").write_text(
        f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {folder / 'host_key'}\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPidFile {folder / 'sshd.pid'}\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\nUsePAM no\n"
        "StrictModes no\n")
    (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key}\n")
    (folder / "ssh_config").write_text("".join(
        f"Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {_user()}\n"
        f"  IdentityFile {folder / key}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {folder / 'known_hosts'}\n  StrictHostKeyChecking yes\n"
        "  BatchMode yes\n" for alias, key in ((HOST, "user_key"), (REFUSED, "other_key"))))
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(f'#!/bin/sh\nexec {shutil.which("ssh")} -F {folder / "ssh_config"} "$@"\n')
    (bin_dir / "ssh").chmod(0o755)
    Path("/run/sshd").mkdir(exist_ok=True)          # sshd's privilege separation folder
    process = subprocess.Popen([sshd, "-D", "-e", "-f", str(folder / "sshd_config")],
                               stdout=subprocess.DEVNULL, stderr=(folder / "sshd.log").open("w"))
    try:
        environ = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
        _wait_for(f"ssh://{HOST}", environ, process, folder / "sshd.log")
        yield SshRoute(address=f"ssh://{HOST}", refused=f"ssh://{REFUSED}", environ=environ)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def _user() -> str:
    import pwd
    return pwd.getpwuid(os.geteuid()).pw_name


def _wait_for(address: str, environ: dict[str, str], process: subprocess.Popen[bytes], log: Path,
              within: float = 30) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"sshd stopped: {log.read_text()[-2000:]}")
        if subprocess.run(["docker", "-H", address, "version"], capture_output=True,
                          env=environ).returncode == 0:
            return
        time.sleep(0.5)
    pytest.fail(f"the engine did not answer through ssh within {within:.0f} s: {log.read_text()[-2000:]}")
