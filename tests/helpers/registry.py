"""A real registry for tests: Debian's docker-registry (distribution 2.8) on a free loopback
port with its own config (htpasswd, bcrypt), and a fault proxy to put in front of it.
Used by the publish tests and by bench/publish_bench.py."""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

USER = "imgkit"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, seconds: float = 15.0, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {host}:{port}")


@dataclass
class Registry:
    root: Path
    port: int
    password: str
    tls: tuple[Path, Path] | None = None        # certificate, key
    host: str = "127.0.0.1"
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> Registry:
        import bcrypt
        self.root.mkdir(parents=True, exist_ok=True)
        htpasswd = self.root / "htpasswd"
        hashed = bcrypt.hashpw(self.password.encode(), bcrypt.gensalt(rounds=4)).decode()
        htpasswd.write_text(f"{USER}:{hashed}\n")
        http = {"addr": self.address, "secret": uuid.uuid4().hex}
        if self.tls:
            http["tls"] = {"certificate": str(self.tls[0]), "key": str(self.tls[1])}  # type: ignore[assignment]
        config = {"version": 0.1, "log": {"level": "error", "accesslog": {"disabled": True}},
                  "storage": {"filesystem": {"rootdirectory": str(self.root / "data")},
                              "delete": {"enabled": True}},
                  "http": http,
                  "auth": {"htpasswd": {"realm": "imgkit-test", "path": str(htpasswd)}}}
        (self.root / "config.yml").write_text(json.dumps(config))  # YAML is a superset of JSON
        self.process = subprocess.Popen(["docker-registry", "serve", str(self.root / "config.yml")],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port, host=self.host)
        return self

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def remove(self) -> None:
        self.kill()
        shutil.rmtree(self.root, ignore_errors=True)


def start_registry(root: Path, tls: tuple[Path, Path] | None = None,
                   host: str = "127.0.0.1") -> Registry:
    return Registry(root=root, port=free_port(host), password=uuid.uuid4().hex, tls=tls,
                    host=host).start()


def make_ca_and_certificate(directory: Path, ip: str) -> tuple[Path, Path, Path]:
    """A throwaway CA and a server certificate it signed for `ip`: (ca.crt, server.crt,
    server.key), made with openssl."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca, key, csr, cert = (directory / n for n in ("ca.key", "ca.crt", "server.key",
                                                             "server.csr", "server.crt"))
    ext = directory / "san.ext"
    ext.write_text(f"subjectAltName=IP:{ip}\nbasicConstraints=CA:FALSE\n"
                   "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out",
            str(ca), "-days", "2", "-subj", "/CN=imgkit test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
            "-subj", f"/CN={ip}")
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
            "-CAcreateserial", "-out", str(cert), "-days", "2", "-extfile", str(ext))
    return ca, cert, key


def runner_docker_config(directory: Path) -> Path:
    """A Docker config directory of its own (for DOCKER_CONFIG) in which the docker CLI still
    finds this host's plugins, as on a CI runner with buildx installed system-wide. This
    host's buildx is the user's (~/.docker/cli-plugins: .ci/setup-host.sh), so that a test
    can hide it; a bare config would hide it from every test that logs in on its own, and
    their `imgkit build` would fall back to the legacy builder, which no user's runner does."""
    directory.mkdir(parents=True, exist_ok=True)
    plugins = Path(os.environ.get("DOCKER_CONFIG") or Path.home() / ".docker") / "cli-plugins"
    if plugins.is_dir() and not (directory / "cli-plugins").exists():
        (directory / "cli-plugins").symlink_to(plugins.resolve(), target_is_directory=True)
    return directory


def docker_config(directory: Path, logins: dict[str, tuple[str, str]]) -> Path:
    """A Docker config directory (for DOCKER_CONFIG) holding these registry logins, and the
    host's CLI plugins (runner_docker_config)."""
    runner_docker_config(directory)
    auths = {host: {"auth": base64.b64encode(f"{u}:{p}".encode()).decode()}
             for host, (u, p) in logins.items()}
    (directory / "config.json").write_text(json.dumps({"auths": auths}))
    return directory


def skopeo_json(*args: str, registry: Registry) -> dict:
    """skopeo, the independent reader, with the registry's credentials."""
    out = subprocess.run(["skopeo", *args, "--tls-verify=false",
                          f"--creds={USER}:{registry.password}"],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout)


def skopeo_tags(registry: Registry, repository: str) -> list[str]:
    try:
        return list(skopeo_json("list-tags", f"docker://{registry.address}/{repository}",
                                registry=registry)["Tags"])
    except RuntimeError as exc:
        if "NAME_UNKNOWN" in str(exc) or "name unknown" in str(exc) or "404" in str(exc):
            return []
        raise


REQUEST_LINE = re.compile(rb"(GET|HEAD|POST|PUT|PATCH|DELETE) (\S+) HTTP/1\.[01]\r\n")


class FaultProxy:
    """A TCP proxy on a free loopback port in front of `target_port`. While faults remain,
    each new connection gets the next one: "reset" (RST at once), "502" or "429" (an HTTP
    answer, then close). `on_request(method, path)` sees every request line passing through."""

    def __init__(self, target_port: int, faults: list[str] | None = None,
                 on_request: Callable[[str, str], None] | None = None) -> None:
        self.target_port = target_port
        self.faults = list(faults or [])
        self.served: list[str] = []
        self.on_request = on_request
        self.port = free_port()
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self._closed = True
        self._server.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            with self._lock:
                fault = self.faults.pop(0) if self.faults else None
            if fault is not None:
                self.served.append(fault)
                threading.Thread(target=self._fail, args=(client, fault), daemon=True).start()
            else:
                threading.Thread(target=self._pipe_both, args=(client,), daemon=True).start()

    def _fail(self, client: socket.socket, fault: str) -> None:
        if fault == "reset":
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()
            return
        client.settimeout(5)
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = client.recv(65536)
                if not chunk:
                    break
                data += chunk
            reason = {"502": "Bad Gateway", "429": "Too Many Requests"}[fault]
            client.sendall(f"HTTP/1.1 {fault} {reason}\r\nContent-Length: 0\r\nRetry-After: 0\r\n"
                           "Connection: close\r\n\r\n".encode())
        except OSError:
            pass
        finally:
            client.close()

    def _pipe_both(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
        except OSError:
            client.close()
            return
        threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()
        self._pipe(client, upstream, True)

    def _pipe(self, source: socket.socket, sink: socket.socket, requests: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if requests and self.on_request is not None:
                    for method, path in REQUEST_LINE.findall(chunk):
                        self.on_request(method.decode(), path.decode())
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()
