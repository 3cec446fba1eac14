"""The publish stage's pure parts: destinations, the verdict artifact, aliases in the matrix,
the summary; and the registry client's token flow and retries against a small HTTP server."""
from __future__ import annotations

import base64
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from imgkit.errors import RegistryAuthError, RegistryError, SpecError, UsageError
from imgkit.matrix import compat
from imgkit.matrix.plan import make_plan
from imgkit.matrix.spec import load_spec
from imgkit.publish.push import Published, id_tag
from imgkit.publish.report import publish_json, publish_markdown, publish_summary
from imgkit.registry.artifacts import artifact_tag, verdict_artifact
from imgkit.registry.client import DOCKER_MANIFEST, Endpoint, Manifest, RegistryClient, sha256_of
from imgkit.registry.destination import destination_ref, parse_destination

# -- destinations ----------------------------------------------------------------------


@pytest.mark.parametrize("text, registry, namespace", [
    ("127.0.0.1:5000", "127.0.0.1:5000", ""),
    ("registry.example.com/ml/gpu/", "registry.example.com", "ml/gpu"),
    ("localhost/team", "localhost", "team"),
])
def test_destinations_are_parsed_as_docker_names_them(text: str, registry: str, namespace: str) -> None:
    destination = parse_destination(text)
    assert (destination.registry, destination.namespace) == (registry, namespace)


@pytest.mark.parametrize("text", ["team", "docker.io/Team", "", "host:port/x", "reg.io/a//b"])
def test_a_destination_that_is_not_a_registry_is_refused(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_destination(text)
    assert "--to" in caught.value.message


def test_a_local_name_maps_under_the_namespace_without_its_own_host() -> None:
    destination = parse_destination("reg.example.com/ml")
    assert destination.repository("paddle:2.6.2") == "ml/paddle"
    assert destination.repository("imgkit/cuda:11.8") == "ml/imgkit/cuda"
    assert destination.repository("old.registry:5000/team/x:1") == "ml/team/x"
    assert destination_ref(destination, "paddle:2.6.2", "id-0123") == "reg.example.com/ml/paddle:id-0123"


def test_id_tag_names_the_image_id() -> None:
    assert id_tag("sha256:" + "ab" * 32) == "id-abababababababab"


# -- the verdict artifact ----------------------------------------------------------------

def test_the_verdict_artifact_points_at_its_subject_and_is_the_same_bytes_everywhere() -> None:
    subject = Manifest(digest=sha256_of(b"{}x"), media_type=DOCKER_MANIFEST, body=b"{}x")
    verdict = {"image_id": "sha256:" + "1" * 64, "passed": True, "gpu_checked": False}
    one = verdict_artifact(verdict, subject, gpu_unverified_allowed=True, created="2026-11-23T00:00:00Z")
    two = verdict_artifact(verdict, subject, gpu_unverified_allowed=True, created="2026-11-23T00:00:00Z")
    assert one == two and one.tag == artifact_tag(subject.digest, "verdict")
    assert one.tag == subject.digest.replace("sha256:", "sha256-") + ".verdict"
    manifest = json.loads(one.manifest)
    assert manifest["subject"] == {"mediaType": DOCKER_MANIFEST, "digest": subject.digest, "size": 3}
    assert manifest["annotations"]["dev.imgkit.verdict.gpu-unverified-allowed"] == "true"
    assert [b["digest"] for b in [manifest["config"], *manifest["layers"]]] == [
        sha256_of(b) for b in one.blobs]
    assert json.loads(one.blobs[1])["subject"] == subject.digest


# -- aliases in the matrix -----------------------------------------------------------------
PADDLE = """\
family: paddle
repository: paddle
framework: paddle
tag: "{{framework_version}}-gpu-cuda{{cuda}}-cudnn{{cudnn_major}}"
aliases: {aliases}
axes:
  framework_version: ["2.6.2"]
  cuda: ["11.8"]
  cudnn: {cudnn}
  nccl: [default]
"""


def plan_of(tmp_path: Path, aliases: str, cudnn: str = '["8.6"]'):
    (tmp_path / "paddle.yaml").write_text(PADDLE.format(aliases=aliases, cudnn=cudnn))
    return make_plan(load_spec(tmp_path), compat.load())


def test_aliases_are_rendered_per_image(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, '["{framework_minor}-gpu", "latest-gpu"]')
    target = plan.get("paddle:2.6.2-gpu-cuda11.8-cudnn8")
    assert target.aliases == ("2.6-gpu", "latest-gpu")


@pytest.mark.parametrize("aliases, key, words", [
    ('["{cudnn_version}"]', "aliases[0]", "unknown placeholder"),
    ('"latest"', "aliases", "list"),
    ('["ok", "bad tag"]', "aliases[1]", "cannot hold"),
    ('["{framework_minor"]', "aliases[0]", "{framework_minor"),
])
def test_a_malformed_alias_names_file_and_key(tmp_path: Path, aliases: str, key: str, words: str) -> None:
    with pytest.raises(SpecError) as caught:
        plan_of(tmp_path, aliases)
    assert caught.value.key == key and words in caught.value.message


def test_an_alias_that_would_name_two_images_is_refused(tmp_path: Path) -> None:
    for name in ("a", "b"):   # two families, one repository, both claim "latest-gpu"
        (tmp_path / f"{name}.yaml").write_text(
            PADDLE.format(aliases='["latest-gpu"]', cudnn='["8.6"]')
            .replace("family: paddle", f"family: paddle-{name}")
            .replace("-gpu-cuda{cuda}", f"-{name}-cuda{{cuda}}"))
    with pytest.raises(SpecError) as caught:
        make_plan(load_spec(tmp_path), compat.load())
    assert caught.value.key == "aliases" and "would name both" in caught.value.message


def test_an_alias_may_not_be_another_images_tag(tmp_path: Path) -> None:
    def family(name: str, aliases: str) -> str:
        return (PADDLE.format(aliases=aliases, cudnn='["8.6"]')
                .replace("-gpu-cuda{cuda}", f"-{name}-cuda{{cuda}}")
                .replace("family: paddle", f"family: paddle-{name}"))
    (tmp_path / "a.yaml").write_text(family("a", '["{framework_version}-b-cuda{cuda}-cudnn8"]'))
    (tmp_path / "b.yaml").write_text(family("b", "[]"))
    with pytest.raises(SpecError) as caught:
        make_plan(load_spec(tmp_path), compat.load())
    assert caught.value.key == "aliases" and "paddle:2.6.2-b-cuda11.8-cudnn8" in caught.value.message


# -- the summary -------------------------------------------------------------------------

def test_the_summary_keeps_every_reference_whole() -> None:
    results = [Published(image="paddle:2.6.2", image_id="sha256:" + "1" * 64,
                         destination="127.0.0.1:5000/ml/paddle", status="published",
                         digest="sha256:" + "2" * 64, tags=("id-1111", "2.6.2"),
                         verdict="sha256-" + "2" * 64 + ".verdict")]
    text = publish_summary(results, 1.5)
    assert "127.0.0.1:5000/ml/paddle" in text and "published" in text
    document = json.loads(publish_json(results, 1.5))["published"][0]
    assert document["reference"] == "127.0.0.1:5000/ml/paddle@sha256:" + "2" * 64
    assert "| `paddle:2.6.2` |" in publish_markdown(results)
    assert publish_summary([], 0.2) == "imgkit publish: 0 in 0.2 s (nothing)"      # no table


# -- the registry client against a small token-auth registry ------------------------------------
MANIFEST = json.dumps({"schemaVersion": 2, "mediaType": DOCKER_MANIFEST,
                       "config": {"digest": "sha256:" + "3" * 64}}).encode()


class TokenRegistry(BaseHTTPRequestHandler):
    """/v2/ answers 401 with a Bearer challenge; /token gives a token for good Basic
    credentials; the first `failures` manifest requests get a 503."""
    failures = 0
    seen_scopes: list[str] = []

    def log_message(self, *_: object) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        host = self.headers["Host"]
        if self.path.startswith("/token"):
            TokenRegistry.seen_scopes.append(self.path)
            good = "Basic " + base64.b64encode(b"user:secret").decode()
            if self.headers.get("Authorization") != good:
                return self._send(401)
            return self._send(200, json.dumps({"token": "t0ken"}).encode())
        if self.headers.get("Authorization") != "Bearer t0ken":
            return self._send(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}', {
                "WWW-Authenticate": f'Bearer realm="http://{host}/token",service="test"'})
        if TokenRegistry.failures > 0:
            TokenRegistry.failures -= 1
            return self._send(503)
        self._send(200, MANIFEST, {"Content-Type": DOCKER_MANIFEST,
                                   "Docker-Content-Digest": sha256_of(MANIFEST)})


@pytest.fixture()
def token_registry() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), TokenRegistry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_bearer_token_is_fetched_with_the_docker_credentials(token_registry: str) -> None:
    TokenRegistry.failures = 2   # and two 503s are retried
    with RegistryClient(Endpoint(token_registry, secure=False, credentials=("user", "secret")),
                        retry_for=10) as client:
        manifest = client.manifest("ml/paddle", "2.6.2")
    assert manifest is not None and manifest.digest == "sha256:" + hashlib.sha256(MANIFEST).hexdigest()
    assert manifest.config_digest == "sha256:" + "3" * 64
    assert any("scope=repository%3Aml%2Fpaddle%3Apull" in s for s in TokenRegistry.seen_scopes)


def test_refused_credentials_are_an_auth_error_at_once(token_registry: str) -> None:
    with RegistryClient(Endpoint(token_registry, secure=False, credentials=("user", "wrong")),
                        retry_for=30) as client:
        with pytest.raises(RegistryAuthError) as caught:
            client.manifest("ml/paddle", "2.6.2")
    assert caught.value.exit_code == 3 and "wrong" not in str(caught.value)


def test_a_refused_connection_fails_at_once_as_unreachable() -> None:
    import time

    from imgkit.errors import EXIT_HOST, RegistryUnreachable
    started = time.monotonic()
    with RegistryClient(Endpoint("127.0.0.1:9", secure=False), retry_for=60) as client:
        with pytest.raises(RegistryUnreachable) as caught:
            client.manifest("ml/paddle", "2.6.2")
    assert "connection refused" in caught.value.message and not caught.value.transient
    assert caught.value.exit_code == EXIT_HOST and time.monotonic() - started < 5


def test_a_registry_that_stays_down_fails_within_the_retry_bound_saying_each_retry(
        capsys: pytest.CaptureFixture[str]) -> None:
    import http.server
    import threading
    import time

    class Unavailable(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Unavailable)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        started = time.monotonic()
        endpoint = Endpoint(f"127.0.0.1:{server.server_address[1]}", secure=False)
        with RegistryClient(endpoint, retry_for=2) as client:
            with pytest.raises(RegistryError) as caught:
                client.manifest("ml/paddle", "2.6.2")
    finally:
        server.shutdown()
    assert caught.value.transient and "503" in caught.value.message
    assert time.monotonic() - started < 10
    said = capsys.readouterr().err
    assert said.count("retrying in ") >= 2 and "503 Service Unavailable" in said


def _image_manifest(config: str) -> Manifest:
    body = json.dumps({"schemaVersion": 2, "mediaType": DOCKER_MANIFEST,
                       "config": {"digest": config}, "layers": []}).encode()
    return Manifest(sha256_of(body), DOCKER_MANIFEST, body)


def test_an_index_names_each_platform_in_a_stable_order_and_is_read_back_by_platform() -> None:
    from imgkit.registry import index
    from imgkit.registry.client import OCI_INDEX
    amd, arm = _image_manifest("sha256:" + "a" * 64), _image_manifest("sha256:" + "b" * 64)
    body = index.make([(arm, "linux/arm64"), (amd, "linux/amd64")])
    assert body == index.make([(amd, "linux/amd64"), (arm, "linux/arm64/v8")])   # one digest
    made = Manifest(sha256_of(body), OCI_INDEX, body)
    document = json.loads(body)
    assert document["mediaType"] == OCI_INDEX and document["schemaVersion"] == 2
    assert [m["platform"] for m in document["manifests"]] == [
        {"architecture": "amd64", "os": "linux"}, {"architecture": "arm64", "os": "linux"}]
    assert document["manifests"][1] == {"mediaType": DOCKER_MANIFEST, "digest": arm.digest,
                                        "size": len(arm.body),
                                        "platform": {"architecture": "arm64", "os": "linux"}}
    assert index.is_index(made) and not index.is_index(amd)
    assert index.pick(made, "linux/arm64", "r/x:1").digest == arm.digest
    with pytest.raises(UsageError) as caught:
        index.pick(made, "linux/s390x", "r/x:1")
    assert "r/x:1 is an index of linux/amd64, linux/arm64: it has no linux/s390x image" in str(caught.value)


def test_an_index_made_elsewhere_is_read_without_its_attestation_entries() -> None:
    """BuildKit's indexes carry attestation manifests as unknown/unknown, and arm64 with
    its variant; Docker's manifest lists have their own media type."""
    from imgkit.registry import index
    from imgkit.registry.client import DOCKER_LIST
    body = json.dumps({"schemaVersion": 2, "mediaType": DOCKER_LIST, "manifests": [
        {"mediaType": DOCKER_MANIFEST, "digest": "sha256:" + "1" * 64, "size": 10,
         "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}},
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + "2" * 64,
         "size": 10, "platform": {"os": "unknown", "architecture": "unknown"}}]}).encode()
    listed = Manifest(sha256_of(body), DOCKER_LIST, body)
    assert index.is_index(listed)
    assert [(e.platform, e.digest[-1]) for e in index.entries(listed)] == [("linux/arm64", "1")]


# -- registry names: REGISTRY/NAMESPACE/REPOSITORY, a namespace never said twice ----------
@pytest.mark.parametrize("to, ref, twice", [
    ("reg.example.com/mlplatform", "mlplatform/x:1", "mlplatform"),
    ("reg.example.com/acme/ml", "ml/team/x:1", "ml"),
    ("reg.example.com/acme/ml", "acme/ml/x:1", "acme/ml"),
    ("reg.example.com/ml", "x:1", ""),
    ("reg.example.com", "ml/x:1", ""),
    ("reg.example.com/ml/staging", "ml/x:1", ""),      # a sub-namespace, not the same one
    ("reg.example.com/ml", "ml:1", ""),                 # an image named as its namespace
])
def test_a_namespace_in_both_the_destination_and_the_repository_is_found(
        to: str, ref: str, twice: str) -> None:
    from imgkit.registry.destination import doubled
    assert doubled(parse_destination(to), ref) == twice


def test_publish_refuses_a_doubled_namespace_before_anything_is_pushed(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from imgkit.cli import app
    result = CliRunner().invoke(app, ["publish", "mlplatform/x:1", "--to", "127.0.0.1:1/mlplatform",
                                      "--images", str(tmp_path / "none")],
                                env={"DOCKER_HOST": "unix:///nonexistent.sock"})
    out = " ".join(result.output.split())
    assert result.exit_code == 2, out                  # not 3: the engine was never asked
    assert "127.0.0.1:1/mlplatform/mlplatform/x" in out
    assert "use --to 127.0.0.1:1 (the repository names 'mlplatform')" in out


@pytest.mark.parametrize("to, ref, said", [
    ("docker.io", "paddle:1", "paddle would be pushed to docker.io/paddle, the Docker Hub account "
                              "called 'paddle'"),
    ("ghcr.io", "x:1", "x would be pushed to ghcr.io/x, the GitHub user or organisation called 'x'"),
    ("ghcr.io/acme", "acme/x:1", "drop 'acme/' from the family's repository: --to ghcr.io/acme "
                                 "names the GitHub user or organisation already"),
])
def test_an_account_hosts_first_path_part_is_an_account_not_a_name_of_ours(
        to: str, ref: str, said: str) -> None:
    """On ghcr.io, Docker Hub, Quay, nvcr.io and gitlab.com an image straight under the host
    goes to the account of its name; and 'use --to ghcr.io' is no way out of a doubled one."""
    from imgkit.registry.destination import check_names
    with pytest.raises(UsageError) as info:
        check_names([parse_destination(to)], [ref])
    assert said in f"{info.value.message} hint: {info.value.hint}", info.value
    check_names([parse_destination("ghcr.io/acme")], ["x:1", "team/x:1"])     # all its own


def test_a_variable_the_shell_left_as_text_is_named() -> None:
    """`--registry '$CI_REGISTRY_IMAGE'` run on a laptop (or quoted in a script)."""
    with pytest.raises(UsageError) as info:
        parse_destination("${CI_REGISTRY_IMAGE}/ml", "--registry")
    assert info.value.hint.startswith("$CI_REGISTRY_IMAGE was not expanded"), info.value.hint


def test_the_engines_own_retry_of_a_layer_stops_the_push_only_past_the_time_allowed() -> None:
    """`publish --retry-for`: the engine retries a failed layer by itself and says when;
    a try that would start past the bound stops the push (the real engine, a registry killed
    mid-push: tests/test_docker_publish.py)."""
    import time

    from imgkit.engine.auth import _stop_if_retrying_late
    now = time.monotonic()
    retry = {"status": "Retrying in 5 seconds", "id": "5f70bf18a086"}
    with pytest.raises(RegistryError, match="layer 5f70bf18a086 failed.*5 s away.*--retry-for") as exc:
        _stop_if_retrying_late(retry, now + 1, "r.example.com")   # type: ignore[arg-type]
    assert exc.value.transient
    _stop_if_retrying_late(retry, now + 60, "r.example.com")       # type: ignore[arg-type]
    _stop_if_retrying_late(retry, None, "r.example.com")           # type: ignore[arg-type]
    _stop_if_retrying_late({"status": "Retrying in 1 second"}, now + 60, "r")
    for status in ("Pushing", "Pushed", "Layer already exists", "Retrying soon"):
        _stop_if_retrying_late({"status": status}, now - 1, "r")


@pytest.mark.parametrize("text, hint", [
    ("https://registry.example.com/ml", "without the scheme: --to registry.example.com/ml"),
    ("oci://127.0.0.1:5000/", "without the scheme: --to 127.0.0.1:5000"),
    ("ml", "name the registry as Docker does"),
])
def test_a_url_given_for_a_registry_is_refused_with_the_name_docker_takes(text: str, hint: str) -> None:
    with pytest.raises(UsageError) as refused:
        parse_destination(text)
    assert refused.value.hint.startswith(hint), refused.value.hint
