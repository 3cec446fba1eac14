"""A second Docker engine on this host, as near to a second machine as one host gets: the
same dockerd binary with a data-root, exec-root, socket, BuildKit cache and bridge of its
own (its bridge's NAT is added by hand and removed after). Nothing of the first engine is
touched: in particular never `--bridge none`, with which dockerd deletes `docker0`, the
first engine's bridge, under every container the tests run."""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

ENGINE = Path("/opt/imgkit-engine")      # where .ci/setup-host.sh unpacks Debian's engine
SUBNETS = [f"172.31.{n}.0/24" for n in range(240, 250)]


def dockerd() -> tuple[str, str]:
    """The first engine's dockerd and the PATH its containerd and shims are on."""
    if (ENGINE / "usr/sbin/dockerd").is_file():
        return str(ENGINE / "usr/sbin/dockerd"), f"{ENGINE}/usr/sbin:{ENGINE}/usr/bin:{os.environ['PATH']}"
    found = shutil.which("dockerd")
    if found is None:
        pytest.fail("no dockerd on this host (.ci/setup-host.sh installs it)")
    return found, os.environ["PATH"]


def _free_subnet() -> str:
    routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
    for subnet in SUBNETS:
        if subnet.rsplit(".", 1)[0] + "." not in routes:
            return subnet
    pytest.fail(f"no free subnet among {SUBNETS[0]}..{SUBNETS[-1]} for a second engine's bridge")


def _run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True, text=True)


@dataclass(frozen=True)
class SecondEngine:
    unix: str            # unix:///run/imgkit-engine-NAME/docker.sock
    tcp: str             # tcp://127.0.0.1:PORT, plain (no TLS): only this host reaches it


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def second_engine(data: Path | None = None, features: tuple[str, ...] = ()) -> Iterator[SecondEngine]:
    """A running second engine, on a unix socket and on TCP at 127.0.0.1. Needs root (as
    the first engine's set-up does). Stopped, and its bridge, rules and folders removed,
    whatever happens; but for `data`, a data-root the caller keeps (and removes) to start
    an engine on it again. `features`: dockerd's --feature switches turned on (e.g.
    containerd-snapshotter, the containerd image store)."""
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("a second engine needs root")
        pytest.skip("a second engine needs root")
    binary, path = dockerd()
    name = uuid.uuid4().hex[:6]
    bridge, subnet = f"imgkitbr{name}", _free_subnet()
    gateway = subnet.replace(".0/24", ".1/24")
    kept = data is not None
    data, run = data or Path(f"/var/lib/imgkit-engine-{name}"), Path(f"/run/imgkit-engine-{name}")
    unix = f"unix://{run / 'docker.sock'}"
    tcp = f"tcp://127.0.0.1:{free_port()}"
    nat = ["-s", subnet, "!", "-o", bridge, "-j", "MASQUERADE"]
    forward = [["FORWARD", "-i", bridge, "-j", "ACCEPT"],
               ["FORWARD", "-o", bridge, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED",
                "-j", "ACCEPT"]]
    process = None
    try:
        _run("ip", "link", "add", bridge, "type", "bridge")
        _run("ip", "addr", "add", gateway, "dev", bridge)
        _run("ip", "link", "set", bridge, "up")
        _run("iptables", "-t", "nat", "-A", "POSTROUTING", *nat)
        for rule in forward:
            _run("iptables", "-I", *rule)
        run.mkdir(parents=True)
        process = subprocess.Popen(
            [binary, "--data-root", str(data), "--exec-root", str(run), "--pidfile",
             str(run / "dockerd.pid"), "-H", unix, "-H", tcp, "--tls=false", "--bridge", bridge,
             "--iptables=false", "--ip6tables=false",
             *(f"--feature={name}=true" for name in features)],
            stdout=subprocess.DEVNULL, stderr=(run / "dockerd.log").open("w"),
            env={**os.environ, "PATH": path})
        _wait_for(unix, process, run / "dockerd.log")
        yield SecondEngine(unix=unix, tcp=tcp)
    finally:
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
        for rule in forward:
            subprocess.run(["iptables", "-D", *rule], capture_output=True)
        subprocess.run(["iptables", "-t", "nat", "-D", "POSTROUTING", *nat], capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], capture_output=True)
        if not kept:
            shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(run, ignore_errors=True)


def _wait_for(host: str, process: subprocess.Popen[bytes], log: Path, within: float = 60) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the second engine stopped: {log.read_text()[-2000:]}")
        if subprocess.run(["docker", "-H", host, "info"], capture_output=True).returncode == 0:
            return
        time.sleep(0.5)
    pytest.fail(f"the second engine did not answer within {within:.0f} s: {log.read_text()[-2000:]}")
