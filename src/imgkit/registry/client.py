"""A small client of the registry HTTP API (OCI distribution): what publishing needs to read
digests back, put a manifest under another tag and push kilobyte artifacts (the verdict).
Images themselves are pushed by the engine and copied by skopeo, except the zstd layers of
`publish --compression zstd`, streamed from a file through here.

Every operation is retried as a whole while the failure is transient (a connection reset or
timed out, 5xx, 429, an upload the registry forgot) with backoff and jitter, for at most
`retry_for` seconds; a refusal of the credentials (401/403), or an address nothing answers
at (refused, unresolvable), is raised at once.
Credentials come from the caller (Docker's config, read by the engine) and never appear in
a message.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar
from urllib.parse import urljoin

import requests
import stamina
import stamina.instrumentation

from ..errors import ImgkitError, RegistryAuthError, RegistryError, RegistryUnreachable, first_line
from .reference import DIGEST

if TYPE_CHECKING:
    from ..engine import Engine

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MANIFEST_TYPES = (OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_LIST)
TRANSIENT_CODES = {"BLOB_UPLOAD_UNKNOWN", "BLOB_UPLOAD_INVALID", "TOOMANYREQUESTS", "UNAVAILABLE"}
CERTS_D = Path("/etc/docker/certs.d")     # where the engine looks for a registry's own CA
SYSTEM_CAS = Path("/etc/ssl/certs/ca-certificates.crt")
T = TypeVar("T")
ENGINE_AUTH_WORDS = ("unauthorized", "authentication required", "denied", "no basic auth credentials")


@dataclass(frozen=True)
class Endpoint:
    registry: str                  # host[:port]
    secure: bool                   # False: the engine treats it as insecure (http allowed)
    credentials: tuple[str, str] | None = field(default=None, repr=False)


def endpoint_of(engine: Engine, registry: str) -> Endpoint:
    """`registry` as the engine sees it: its TLS policy and Docker's credentials for it."""
    return Endpoint(registry, engine.registry_is_secure(registry),
                    engine.registry_credentials(registry))


@dataclass(frozen=True)
class Manifest:
    digest: str
    media_type: str
    body: bytes

    @property
    def config_digest(self) -> str | None:
        config = json.loads(self.body).get("config")
        return str(config["digest"]) if isinstance(config, dict) and "digest" in config else None


def sha256_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _challenge(header: str) -> tuple[str, dict[str, str]]:
    """`Bearer realm="...",service="..."` -> ("bearer", {realm: ..., service: ...})."""
    scheme, _, rest = header.strip().partition(" ")
    return scheme.lower(), dict(re.findall(r'(\w+)="([^"]*)"', rest))


def _error_codes(response: requests.Response) -> list[tuple[str, str]]:
    try:
        errors = response.json().get("errors") or []
        return [(str(e.get("code", "")), str(e.get("message", ""))) for e in errors]
    except (ValueError, AttributeError):
        return []


class RegistryClient:
    def __init__(self, endpoint: Endpoint, *, retry_for: float = 60.0, timeout: float = 30.0) -> None:
        self.endpoint = endpoint
        self.retry_for = retry_for
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers["User-Agent"] = "imgkit"
        self._base: str | None = None
        self._basic: str | None = None            # Authorization once the registry asked
        self._tokens: dict[str, str] = {}         # scope -> Bearer token

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- operations (each retried as a whole) -------------------------------------------
    def check_push(self, repository: str) -> None:
        """Prove we may push to `repository` (credentials and permission) before anything
        is pushed: start a blob upload and cancel it."""
        def attempt() -> None:
            upload = self._send("POST", f"/v2/{repository}/blobs/uploads/", repository,
                                push=True, ok=(202,))
            self._cancel_upload(upload, repository)
        self._retrying(attempt)

    def digest(self, repository: str, reference: str) -> str | None:
        """The digest `reference` (tag or digest) resolves to, read from the registry."""
        found = self.manifest(repository, reference)
        return found.digest if found else None

    def manifest(self, repository: str, reference: str) -> Manifest | None:
        def attempt() -> Manifest | None:
            response = self._send("GET", f"/v2/{repository}/manifests/{reference}", repository,
                                  headers={"Accept": ", ".join(MANIFEST_TYPES)}, ok=(200, 404))
            if response.status_code == 404:
                return None
            body = response.content
            digest = sha256_of(body)
            claimed = response.headers.get("Docker-Content-Digest", digest)
            if claimed != digest or (DIGEST.match(reference) and reference != digest):
                raise RegistryError(self.endpoint.registry,
                                    f"{repository}@{reference}: the manifest does not hash to its "
                                    f"digest ({claimed} claimed, {digest} read)")
            media = response.headers.get("Content-Type", "").split(";")[0].strip()
            return Manifest(digest=digest, media_type=media or json.loads(body).get("mediaType", ""),
                            body=body)
        return self._retrying(attempt)

    def put_manifest(self, repository: str, reference: str, body: bytes, media_type: str) -> str:
        """Put `body` under `reference` (a tag); returns the digest the registry reports,
        which must be the body's own."""
        def attempt() -> str:
            response = self._send("PUT", f"/v2/{repository}/manifests/{reference}", repository,
                                  push=True, data=body, headers={"Content-Type": media_type},
                                  ok=(201,))
            return response.headers.get("Docker-Content-Digest", sha256_of(body))
        digest = self._retrying(attempt)
        if digest != sha256_of(body):
            raise RegistryError(self.endpoint.registry, f"{repository}:{reference} was stored as "
                                f"{digest}, not as the manifest sent ({sha256_of(body)})")
        return digest

    def put_blob(self, repository: str, data: bytes) -> str:
        """Upload `data` as a blob (monolithically: publishing only sends small ones)."""
        digest = sha256_of(data)

        def attempt() -> str:
            if not self._holds(repository, digest):
                self._upload(repository, digest, data)
            return digest
        return self._retrying(attempt)

    def has_blob(self, repository: str, digest: str) -> bool:
        return self._retrying(lambda: self._holds(repository, digest))

    def mount_blob(self, repository: str, digest: str, source: str) -> bool:
        """Mount blob `digest` of repository `source` (same registry) into `repository`,
        uploading nothing; False when the registry would not (it opens an upload instead,
        cancelled here)."""
        def attempt() -> bool:
            try:
                answer = self._send("POST", f"/v2/{repository}/blobs/uploads/", repository,
                                    push=True, params={"mount": digest, "from": source},
                                    ok=(201, 202))
            except RegistryAuthError:   # a token for this repository alone may not read
                return False            # `source`: then it is uploaded as any other blob
            if answer.status_code == 202:
                self._cancel_upload(answer, repository)
                return False
            return True
        return self._retrying(attempt)

    def put_blob_file(self, repository: str, path: Path, digest: str,
                      progress: Callable[[int], None] = lambda _: None) -> None:
        """Upload the file at `path` (whose sha256 is `digest`) as a blob, streamed, unless
        the registry holds it; a failed try starts the upload over."""
        def attempt() -> None:
            if self._holds(repository, digest):
                progress(path.stat().st_size)
                return
            with open(path, "rb") as data:
                self._upload(repository, digest, _Counted(data, progress))
        self._retrying(attempt)

    def _holds(self, repository: str, digest: str) -> bool:
        return self._send("HEAD", f"/v2/{repository}/blobs/{digest}", repository,
                          ok=(200, 404)).status_code == 200

    def _upload(self, repository: str, digest: str, body: Any) -> None:
        """One upload session: opened, then the whole body put at once (bytes, or a file
        requests streams); a refused put cancels the session rather than leave it open."""
        upload = self._send("POST", f"/v2/{repository}/blobs/uploads/", repository,
                            push=True, ok=(202,))
        location = urljoin(self._url("/"), upload.headers["Location"])
        try:
            self._send("PUT", location, repository, push=True, params={"digest": digest},
                       data=body, headers={"Content-Type": "application/octet-stream"}, ok=(201,))
        except RegistryError:
            self._cancel_upload(upload, repository)
            raise

    def blob(self, repository: str, digest: str) -> bytes:
        def attempt() -> bytes:
            data = self._send("GET", f"/v2/{repository}/blobs/{digest}", repository,
                              ok=(200,)).content
            if sha256_of(data) != digest:
                raise RegistryError(self.endpoint.registry, f"blob {digest} does not hash to "
                                    "its digest", transient=True)
            return data
        return self._retrying(attempt)

    # -- HTTP, authentication and retries -------------------------------------------------
    def _retrying(self, attempt: Callable[[], T]) -> T:
        return retrying(attempt, self.retry_for, wait_max=5.0)

    def _url(self, path: str) -> str:
        if path.startswith(("http://", "https://")):
            return path
        if self._base is None:
            self._base = self._discover()
        return self._base + path

    def _verify(self) -> bool | str:
        if not self.endpoint.secure:
            return False
        own = CERTS_D / self.endpoint.registry / "ca.crt"
        if own.is_file():
            return str(own)
        return str(SYSTEM_CAS) if SYSTEM_CAS.is_file() else True

    def _discover(self) -> str:
        """https, as the engine would; an insecure registry may answer plain http instead."""
        host = self.endpoint.registry
        try:
            self.session.get(f"https://{host}/v2/", verify=self._verify(), timeout=self.timeout)
            return f"https://{host}"
        except requests.exceptions.SSLError as exc:
            if self.endpoint.secure:
                raise RegistryError(host, f"TLS failed: {exc}", hint=(
                    f"put the registry's CA in {CERTS_D}/{host}/ca.crt, as the engine expects"))
        except requests.exceptions.RequestException as exc:
            if self.endpoint.secure:
                raise connection_error(host, "GET /v2/", exc, self.timeout)
        try:
            self.session.get(f"http://{host}/v2/", timeout=self.timeout)
        except requests.exceptions.RequestException as exc:
            raise connection_error(host, "GET /v2/", exc, self.timeout)
        return f"http://{host}"

    def _send(self, method: str, path: str, repository: str, *, push: bool = False,
              ok: tuple[int, ...], headers: dict[str, str] | None = None,
              **kwargs: Any) -> requests.Response:
        scope = f"repository:{repository}:{'pull,push' if push else 'pull'}"
        url = self._url(path)
        response = self._request(method, url, scope, headers or {}, kwargs)
        if response.status_code == 401 and self._authenticate(response, scope):
            response = self._request(method, url, scope, headers or {}, kwargs)
        if response.status_code in ok:
            return response
        codes = _error_codes(response)
        said = "; ".join(f"{c}: {m}" for c, m in codes) or response.reason
        where = path if not path.startswith("http") else f"/v2/{repository}/blobs/uploads/..."
        message = f"{method} {where}: {response.status_code} {said}"
        if response.status_code in (401, 403) or any(c in ("UNAUTHORIZED", "DENIED") for c, _ in codes):
            raise RegistryAuthError(self.endpoint.registry, message)
        transient = (response.status_code >= 500 or response.status_code == 429
                     or any(c in TRANSIENT_CODES for c, _ in codes))
        raise RegistryError(self.endpoint.registry, message, transient=transient)

    def _request(self, method: str, url: str, scope: str, headers: dict[str, str],
                 kwargs: dict[str, Any]) -> requests.Response:
        auth = self._tokens.get(scope)
        headers = {**headers, **({"Authorization": f"Bearer {auth}"} if auth else
                                 {"Authorization": self._basic} if self._basic else {})}
        try:
            return self.session.request(method, url, headers=headers, timeout=self.timeout,
                                        verify=self._verify(), **kwargs)
        except requests.exceptions.RequestException as exc:
            raise connection_error(self.endpoint.registry, method, exc, self.timeout)

    def _authenticate(self, response: requests.Response, scope: str) -> bool:
        """Answer a 401's challenge (Basic, or a Bearer token for `scope`); False when it
        was already answered (the credentials were refused)."""
        scheme, params = _challenge(response.headers.get("WWW-Authenticate", ""))
        creds = self.endpoint.credentials
        if scheme == "basic":
            if self._basic is not None:
                return False
            if creds is None:
                raise RegistryAuthError(self.endpoint.registry, "authentication required, and "
                                        "Docker's config has no credentials for it")
            self._basic = "Basic " + base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode()
            return True
        if scheme == "bearer" and "realm" in params and scope not in self._tokens:
            self._tokens[scope] = self._token(params, scope)
            return True
        return False

    def _token(self, params: dict[str, str], scope: str) -> str:
        query = {"service": params.get("service", ""), "scope": params.get("scope") or scope}
        creds = self.endpoint.credentials
        try:
            response = self.session.get(params["realm"], params=query, timeout=self.timeout,
                                        auth=creds if creds and creds[0] != "<token>" else None,
                                        verify=self._verify())
        except requests.exceptions.RequestException as exc:
            raise connection_error(self.endpoint.registry, "token service", exc, self.timeout)
        if response.status_code in (401, 403):
            raise RegistryAuthError(self.endpoint.registry,
                                    f"the token service refused the credentials ({response.status_code})")
        if response.status_code != 200:
            raise RegistryError(self.endpoint.registry, f"token service answered "
                                f"{response.status_code}", transient=response.status_code >= 500)
        body = response.json()
        return str(body.get("token") or body.get("access_token") or "")

    def _cancel_upload(self, upload: requests.Response, repository: str) -> None:
        try:
            self._request("DELETE", urljoin(self._url("/"), upload.headers["Location"]),
                          f"repository:{repository}:pull,push", {}, {})
        except (RegistryError, KeyError):
            pass  # an abandoned upload expires on its own


class _Counted:
    """A file read for an upload, saying how much was read so far."""

    def __init__(self, data: Any, progress: Callable[[int], None]) -> None:
        self.data, self.progress, self.sent = data, progress, 0

    def __len__(self) -> int:        # requests' Content-Length
        return int(os.fstat(self.data.fileno()).st_size)

    def read(self, size: int = -1) -> bytes:
        chunk: bytes = self.data.read(size)
        self.sent += len(chunk)
        self.progress(self.sent)
        return chunk


# What the OS says when nothing can answer at an address: no retry can heal these.
UNREACHABLE = (("connection refused", "connection refused"),
               ("errno 111", "connection refused"),
               ("name or service not known", "the name does not resolve"),
               ("nodename nor servname", "the name does not resolve"),
               ("temporary failure in name resolution", "the name does not resolve"),
               ("no address associated with hostname", "the name does not resolve"),
               ("no such host", "the name does not resolve"),
               ("network is unreachable", "the network is unreachable"),
               ("no route to host", "no route to the host"))


def unreachable(text: str) -> str | None:
    """The reason, when `text` (an error from requests, the engine or skopeo) says nothing
    can answer at the registry's address; None for anything a retry may heal."""
    lowered = text.lower()
    return next((reason for needle, reason in UNREACHABLE if needle in lowered), None)


def connection_error(registry: str, doing: str, exc: Exception, timeout: float) -> RegistryError:
    """A request that got no answer: unreachable (exit 3 at once), else transient."""
    if isinstance(exc, requests.exceptions.Timeout):
        return RegistryError(registry, f"{doing}: no answer within {timeout:g} s", transient=True)
    reason = unreachable(str(exc))
    if reason is not None:
        return RegistryUnreachable(registry, reason)
    return RegistryError(registry, f"{doing}: {type(exc).__name__}: {first_line(exc)[:200]}",
                         transient=True)


def announce_retry(details: stamina.instrumentation.RetryDetails) -> None:
    """A readable line per scheduled retry (stamina's default is a bare log event)."""
    cause = details.caused_by
    said = cause.message if isinstance(cause, ImgkitError) else f"{type(cause).__name__}: {cause}"
    sys.stderr.write(f"retrying in {details.wait_for:.1f} s (attempt {details.retry_num + 1}, "
                     f"{details.waited_so_far:.0f} s waited so far; --retry-for bounds it): "
                     f"{said}\n")
    sys.stderr.flush()


stamina.instrumentation.set_on_retry_hooks([announce_retry])


def retrying(attempt: Callable[[], T], retry_for: float, *, wait_max: float = 10.0) -> T:
    """Run `attempt` again while it raises a transient RegistryError, with backoff and
    jitter, for at most `retry_for` seconds (0: once)."""
    for try_ in stamina.retry_context(
            on=lambda exc: isinstance(exc, RegistryError) and exc.transient,
            attempts=None if retry_for > 0 else 1, timeout=max(retry_for, 0.001),
            wait_initial=0.2, wait_max=wait_max, wait_jitter=0.5):
        with try_:
            return attempt()
    raise AssertionError("unreachable: stamina re-raises the last error")


def classify_engine_error(call: Callable[[], T], what: str) -> T:
    """The engine reports a registry's refusal as text: credentials refused -> exit 3
    (RegistryAuthError); anything else may pass (transient)."""
    try:
        return call()
    except RegistryError as exc:
        said = exc.message.split(": ", 1)[-1]
        if any(word in exc.message.lower() for word in ENGINE_AUTH_WORDS):
            raise RegistryAuthError(exc.registry, f"{what} was refused: {said}")
        reason = unreachable(exc.message)
        if reason is not None:
            raise RegistryUnreachable(exc.registry, f"{reason} ({what})")
        raise RegistryError(exc.registry, f"{what} failed: {said}", transient=True)
