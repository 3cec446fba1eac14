"""Build-time trust settings (extra CA bundle, package index) served to build steps only.

The legacy builder that docker-py drives has no secret mounts, and build args end up in
the image history. Instead, while `imgkit build` runs, a small HTTP server on the Docker
bridge hands these files to `imgkit-build-env` inside the RUN step, which deletes them
before the step ends: no layer and no history entry keeps them.

Only imgkit's own running build may read them (an index URL can carry credentials, and
every container on the bridge reaches the server): each run makes a random token, the
server answers only requests that carry it, and the build's steps alone learn it, through
an --add-host entry `<token>.imgkit-build-settings` that lands in their /etc/hosts (not in
a layer, the history, or the cache key). The helper reads the server's address from that
entry: no name is looked up, so nothing answering to a name through DNS is trusted.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from ..errors import HostError, UsageError

if TYPE_CHECKING:
    from http.server import ThreadingHTTPServer

HOST_SUFFIX = ".imgkit-build-settings"   # the helper finds <token><suffix> in /etc/hosts
PORT = 47419  # fixed: the helper in the image knows it, and it is not part of any cache key
DEFAULT_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
# the BuildKit form's secret mount ids (render/contexts.py SECRET_MOUNTS) of each file
SECRET_IDS = {"ca.pem": "imgkit-ca-bundle", "index-url": "imgkit-index-url",
              "extra-index-url": "imgkit-extra-index-url"}


@dataclass(frozen=True)
class BuildEnv:
    ca_bundle: Path | None = None
    index_url: str | None = None
    extra_index_url: str | None = None

    def files(self) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        if self.ca_bundle is not None:
            try:
                out["ca.pem"] = self.ca_bundle.read_bytes()
            except OSError as exc:
                raise UsageError(f"--ca-bundle {self.ca_bundle}: {exc.strerror}")
        if self.index_url:
            out["index-url"] = self.index_url.encode()
        if self.extra_index_url:
            out["extra-index-url"] = self.extra_index_url.encode()
        return out

    def secret_mounts(self) -> dict[str, bytes]:
        """The files as the BuildKit form's secret mounts name them (id -> content), for a
        builder that takes secrets with the build (Podman's)."""
        return {SECRET_IDS[name]: content for name, content in self.files().items()}


def build_env(ca_bundle: str | None, index_url: str | None,
              extra_index_url: str | None = None) -> BuildEnv:
    """The build's settings from --ca-bundle and --index-url (and the project's
    extra_index_url); a bad CA bundle is exit 2 now."""
    env = BuildEnv(ca_bundle=default_ca_bundle(ca_bundle), index_url=index_url,
                   extra_index_url=extra_index_url)
    env.files()
    return env


def default_ca_bundle(value: str | None) -> Path | None:
    """'none' disables; unset means: trust what this host trusts, when it has a bundle."""
    if value == "none":
        return None
    if value:
        return Path(value)
    return DEFAULT_CA_BUNDLE if DEFAULT_CA_BUNDLE.exists() else None


class SecretServer:
    """Serves BuildEnv files on the bridge gateway while builds run."""

    def __init__(self, env: BuildEnv, bind_ip: str) -> None:
        self.files = env.files()
        self.bind_ip = bind_ip
        import secrets  # here, not at the top: a no-op build reads this module for build_env
        self.token = secrets.token_hex(16)
        self._server: ThreadingHTTPServer | None = None

    @property
    def extra_hosts(self) -> dict[str, str]:
        return {self.token + HOST_SUFFIX: self.bind_ip} if self.files else {}

    def __enter__(self) -> "SecretServer":
        if not self.files:
            return self
        import hmac  # only when something is built: no-op runs skip their import cost
        import http.server
        import threading

        files, wanted = self.files, f"Bearer {self.token}".encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                given = (self.headers.get("Authorization") or "").encode()
                if not hmac.compare_digest(given, wanted):
                    self.send_response(403)
                    self.end_headers()
                    return
                body = files.get(self.path.lstrip("/"))
                self.send_response(200 if body is not None else 404)
                self.end_headers()
                if body is not None:
                    self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        try:
            self._server = http.server.ThreadingHTTPServer((self.bind_ip, PORT), Handler)
        except OSError as exc:
            raise HostError(f"cannot serve build settings on {self.bind_ip}:{PORT}: "
                            f"{exc.strerror}", hint=f"another program holds port {PORT} on the "
                            "Docker bridge (imgkit builds wait for each other, so not one of them)")
        # A short poll interval: shutdown() waits up to one interval.
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
