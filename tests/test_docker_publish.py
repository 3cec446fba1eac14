"""`imgkit publish` against real registries (Debian's docker-registry on loopback, htpasswd
auth), the real engine, and skopeo as the independent reader."""
from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest
import requests

from imgkit.publish.push import id_tag

from .helpers import leftovers
from .helpers.registry import (
    USER,
    FaultProxy,
    Registry,
    docker_config,
    skopeo_json,
    skopeo_tags,
    start_registry,
)
from .helpers.sbom import valid

pytestmark = pytest.mark.docker
IMGKIT = [sys.executable, "-m", "imgkit"]


@pytest.fixture()
def second(tmp_path: Path) -> Iterator[Registry]:
    running = start_registry(tmp_path / "registry-b")
    yield running
    running.remove()


def image_like(engine, namespace: str, parent: str, name: str) -> str:
    """An image of its own id (a label apart from `parent`): its own ticket, same layers."""
    ref = f"{namespace}/pub-{name}:1.0-cuda11.8"
    dockerfile = f"FROM {parent}\nLABEL org.imgkit.test-run={uuid.uuid4().hex}\n"
    engine.client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=ref, rm=True, forcerm=True)
    return ref


def imgkit(*args: str, config: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DOCKER_CONFIG": str(config)}
    return subprocess.run([*IMGKIT, *args], env=env, capture_output=True, text=True, timeout=timeout)


def verified(ref: str, config: Path) -> None:
    out = imgkit("verify", ref, "--gpus", "none", config=config)
    assert out.returncode == 0, out.stdout + out.stderr


def logins(tmp_path: Path, *registries: Registry, address: str | None = None) -> Path:
    return docker_config(tmp_path / f"docker-{uuid.uuid4().hex[:6]}",
                         {address or r.address: (USER, r.password) for r in registries})


def raw(registry: Registry, ref: str) -> dict:
    return skopeo_json("inspect", "--raw", f"docker://{registry.address}/{ref}", registry=registry)


def test_a_verified_image_reaches_two_registries_under_one_digest(
        engine, mini, namespace, registry, second, tmp_path):
    ref = image_like(engine, namespace, mini, "two")
    config = logins(tmp_path, registry, second)
    verified(ref, config)
    image_id = engine.image(ref).id
    out = imgkit("publish", ref, "--to", f"{registry.address}/team", "--to", second.address,
                 "--allow-gpu-unverified", "--json", str(tmp_path / "p.json"), config=config)
    assert out.returncode == 0, out.stdout + out.stderr
    results = json.loads((tmp_path / "p.json").read_text())["published"]
    digest = results[0]["digest"]
    assert [r["digest"] for r in results] == [digest, digest]

    name, tag = ref.rsplit(":", 1)
    for where, repository in ((registry, f"team/{name}"), (second, name)):
        manifest = raw(where, f"{repository}@{digest}")
        assert manifest["config"]["digest"] == image_id          # the verified image, bit for bit
        tags = skopeo_tags(where, repository)
        verdict_tag = digest.replace(":", "-") + ".verdict"
        sbom_tag = digest.replace(":", "-") + ".sbom"
        assert set(tags) == {tag, id_tag(image_id), verdict_tag, sbom_tag}
        sbom = raw(where, f"{repository}:{sbom_tag}")
        assert sbom["subject"]["digest"] == digest
        assert sbom["artifactType"] == "application/vnd.cyclonedx+json"
        document = requests.get(f"http://{where.address}/v2/{repository}/blobs/"
                                f"{sbom['layers'][0]['digest']}", auth=(USER, where.password),
                                timeout=30).text
        assert valid(document)["metadata"]["component"]["bom-ref"] == image_id
        assert skopeo_json("inspect", f"docker://{where.address}/{repository}:{tag}",
                           registry=where)["Digest"] == digest
        artifact = raw(where, f"{repository}:{verdict_tag}")
        assert artifact["subject"]["digest"] == digest
        assert artifact["annotations"]["dev.imgkit.verdict.image-id"] == image_id
        assert artifact["annotations"]["dev.imgkit.verdict.gpu-unverified-allowed"] == "true"
        layer = artifact["layers"][0]["digest"]
        blob = requests.get(f"http://{where.address}/v2/{repository}/blobs/{layer}",
                            auth=(USER, where.password), timeout=30).json()
        assert blob["image_id"] == image_id and blob["passed"] and blob["subject"] == digest
    assert not [t for i in leftovers.images(engine) for t in i.tags
                if t.startswith((registry.address, second.address))], "a push tag was left behind locally"


def test_unverified_failed_and_moved_images_are_refused_with_nothing_pushed(
        engine, mini, namespace, base_image, registry, tmp_path):
    config = logins(tmp_path, registry)
    never = image_like(engine, namespace, mini, "never")
    failing = f"{namespace}/pub-failing:1.0-cuda11.8"
    engine.tag(engine.image(base_image).id, failing)       # no python: its verify fails
    assert imgkit("verify", failing, "--gpus", "none", config=config).returncode == 1
    moved = image_like(engine, namespace, mini, "moved")
    verified(moved, config)
    engine.tag(engine.image(image_like(engine, namespace, mini, "other")).id, moved)
    gpu_less = image_like(engine, namespace, mini, "gpuless")
    verified(gpu_less, config)

    for ref, why in ((never, "never verified"), (failing, "verification failed"),
                     (moved, "rebuilt or retagged since"), (gpu_less, "without a GPU")):
        out = imgkit("publish", ref, "--to", registry.address, config=config)
        assert out.returncode == 1, out.stdout + out.stderr
        assert why in out.stdout, out.stdout
        assert skopeo_tags(registry, ref.rsplit(":", 1)[0]) == []
    # one refusal holds back the whole publish
    out = imgkit("publish", gpu_less, never, "--to", registry.address, "--allow-gpu-unverified",
                 config=config)
    assert out.returncode == 1 and "held" in out.stdout
    assert skopeo_tags(registry, gpu_less.rsplit(":", 1)[0]) == []


def test_a_wrong_password_is_exit_3_within_seconds(engine, mini, namespace, registry, tmp_path):
    ref = image_like(engine, namespace, mini, "badpass")
    good = logins(tmp_path, registry)
    verified(ref, good)
    bad = docker_config(tmp_path / "bad", {registry.address: (USER, "not-the-password")})
    started = time.monotonic()
    out = imgkit("publish", ref, "--to", registry.address, "--allow-gpu-unverified", config=bad)
    assert out.returncode == 3, out.stdout + out.stderr
    assert time.monotonic() - started < 15
    assert registry.address in out.stderr and "docker login" in out.stderr
    assert "not-the-password" not in out.stdout + out.stderr
    assert skopeo_tags(registry, ref.rsplit(":", 1)[0]) == []


def test_transient_faults_are_retried_to_the_right_digest(
        engine, mini, namespace, registry, tmp_path):
    proxy = FaultProxy(registry.port, faults=["reset", "502", "429", "reset", "502", "429"])
    try:
        ref = image_like(engine, namespace, mini, "faults")
        config = logins(tmp_path, registry, address=proxy.address)
        verified(ref, config)
        out = imgkit("publish", ref, "--to", proxy.address, "--allow-gpu-unverified",
                     "--json", str(tmp_path / "p.json"), config=config)
        assert out.returncode == 0, out.stdout + out.stderr
        assert proxy.faults == [] and len(proxy.served) == 6
        digest = json.loads((tmp_path / "p.json").read_text())["published"][0]["digest"]
        repository, tag = ref.rsplit(":", 1)
        assert skopeo_json("inspect", f"docker://{registry.address}/{repository}:{tag}",
                           registry=registry)["Digest"] == digest
        assert raw(registry, f"{repository}@{digest}")["config"]["digest"] == engine.image(ref).id
    finally:
        proxy.close()


def test_a_registry_killed_mid_push_moves_no_tag_and_a_rerun_completes(
        engine, mini, namespace, registry, tmp_path):
    killed: list[str] = []

    def kill_at_first_upload(method: str, path: str) -> None:
        if method in ("PATCH", "PUT") and "/blobs/uploads/" in path and not killed:
            killed.append(path)
            registry.kill()

    proxy = FaultProxy(registry.port, on_request=kill_at_first_upload)
    try:
        ref = image_like(engine, namespace, mini, "killed")
        config = logins(tmp_path, registry, address=proxy.address)
        verified(ref, config)
        started = time.monotonic()
        out = imgkit("publish", ref, "--to", proxy.address, "--allow-gpu-unverified",
                     "--retry-for", "0", config=config)
        assert killed and out.returncode != 0, out.stdout + out.stderr
        assert "Traceback" not in out.stderr
        # the engine's own tries (5, up to 20 s apart) count against --retry-for: none waited for
        said = out.stdout + out.stderr
        assert "the push was stopped" in said and "--retry-for" in said, said
        assert time.monotonic() - started < 30, "publish waited for the engine's retries"
        registry.start()                                     # same storage, same port
        repository, tag = ref.rsplit(":", 1)
        time.sleep(8)      # past the engine's next try: a push left running would now finish
        assert tag not in skopeo_tags(registry, repository), "the stopped push went on"
        out = imgkit("publish", ref, "--to", proxy.address, "--allow-gpu-unverified", config=config)
        assert out.returncode == 0, out.stdout + out.stderr
        assert tag in skopeo_tags(registry, repository)
    finally:
        proxy.close()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_during_a_push_moves_no_tag_and_leaves_no_local_tag(
        engine, mini, namespace, registry, tmp_path, signum):
    started: list[subprocess.Popen[str]] = []
    interrupted: list[str] = []

    def interrupt_at_first_upload(method: str, path: str) -> None:
        if method in ("PATCH", "PUT") and "/blobs/uploads/" in path and not interrupted:
            interrupted.append(path)
            started[0].send_signal(signum)

    proxy = FaultProxy(registry.port, on_request=interrupt_at_first_upload)
    try:
        ref = image_like(engine, namespace, mini, f"stop{int(signum)}")
        config = logins(tmp_path, registry, address=proxy.address)
        verified(ref, config)
        started.append(subprocess.Popen(
            [*IMGKIT, "publish", ref, "--to", proxy.address, "--allow-gpu-unverified"],
            env={**os.environ, "DOCKER_CONFIG": str(config)}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
        stdout, stderr = started[0].communicate(timeout=120)
        assert interrupted and started[0].returncode == 130, stdout + stderr
        assert "Traceback" not in stderr
        repository, tag = ref.rsplit(":", 1)
        assert tag not in skopeo_tags(registry, repository)
        assert not [t for i in leftovers.images(engine) for t in i.tags
                    if t.startswith(proxy.address)], "a push tag was left behind locally"
    finally:
        proxy.close()


def test_dry_run_touches_no_registry(engine, mini, namespace, registry, tmp_path):
    ref = image_like(engine, namespace, mini, "dry")
    config = logins(tmp_path, registry)
    verified(ref, config)
    out = imgkit("publish", ref, "--to", registry.address, "--allow-gpu-unverified", "--dry-run",
                 config=config)
    assert out.returncode == 0 and "would publish" in out.stdout, out.stdout + out.stderr
    assert skopeo_tags(registry, ref.rsplit(":", 1)[0]) == []


def test_candidate_then_verify_by_digest_then_promote(
        engine, mini, namespace, registry, second, tmp_path):
    """The staging flow: push a candidate (no gate), verify it by digest (pulled, since the
    local copy is gone) and attach the verdict, promote by digest with the verdict along."""
    config = logins(tmp_path, registry, second)
    ref = image_like(engine, namespace, mini, "staged")
    image_id = engine.image(ref).id
    out = imgkit("publish", ref, "--candidate", "--to", registry.address, "--json",
                 str(tmp_path / "c.json"), config=config)
    assert out.returncode == 0, out.stdout + out.stderr
    digest = json.loads((tmp_path / "c.json").read_text())["published"][0]["digest"]
    repository, tag = ref.rsplit(":", 1)
    assert skopeo_tags(registry, repository) == [id_tag(image_id)]   # no human tag, no verdict
    engine.remove_image(ref)                                        # verify must pull it
    candidate = f"{registry.address}/{repository}@{digest}"
    production = f"{second.address}/ml/promoted"

    subprocess.run(["cosign", "generate-key-pair", "--output-key-prefix", str(tmp_path / "cosign")],
                   env={**os.environ, "COSIGN_PASSWORD": "pw"}, check=True, capture_output=True)
    trusted = ("--trusted-key", str(tmp_path / "cosign.pub"))
    out = imgkit("promote", candidate, "--to", production, *trusted, config=config)
    assert out.returncode == 1 and "unsigned" in out.stdout, out.stdout + out.stderr
    assert skopeo_tags(second, "ml/promoted") == []

    os.environ["COSIGN_PASSWORD"] = "pw"      # how CI hands cosign the key's passphrase
    try:
        out = imgkit("attest", candidate, "--gpus", "none", "--signing-key",
                     str(tmp_path / "cosign.key"), config=config)
    finally:
        del os.environ["COSIGN_PASSWORD"]
    assert out.returncode == 0, out.stdout + out.stderr
    assert engine.image(candidate).id == image_id
    staged_tags = skopeo_tags(registry, repository)
    signed = digest.replace(":", "-") + ".att"
    assert {digest.replace(":", "-") + ".verdict", digest.replace(":", "-") + ".sbom",
            signed} <= set(staged_tags)

    out = imgkit("promote", candidate, "--to", production, "--tag", tag, *trusted, config=config)
    assert out.returncode == 1 and "without a GPU" in out.stdout, out.stdout + out.stderr
    out = imgkit("promote", candidate, "--to", production, "--tag", tag, "--tag", "stable",
                 "--allow-gpu-unverified", *trusted, config=config)
    assert out.returncode == 0, out.stdout + out.stderr
    for name in (tag, "stable"):
        assert skopeo_json("inspect", f"docker://{production}:{name}", registry=second)["Digest"] == digest
    assert raw(second, f"ml/promoted@{digest}")["config"]["digest"] == image_id
    promoted = skopeo_tags(second, "ml/promoted")
    assert {digest.replace(":", "-") + ".verdict", digest.replace(":", "-") + ".sbom",
            signed} <= set(promoted)


def test_promotion_and_attestation_take_digests_only(engine, registry, tmp_path):
    config = logins(tmp_path, registry)
    out = imgkit("promote", f"{registry.address}/ml/x:1.0", "--to", f"{registry.address}/y",
                 config=config)
    assert out.returncode == 2 and "by digest" in out.stderr
    out = imgkit("attest", "paddle:2.6.2", "--gpus", "none", config=config)
    assert out.returncode == 2 and "attest needs a registry reference" in out.stderr


def test_a_tls_registry_is_trusted_through_its_ca_in_certs_d_as_the_engine_trusts_it(
        engine, mini, namespace, registry, tmp_path):
    """On an address the engine does not treat as insecure (the bridge gateway, not
    loopback), a registry with a CA made here: refused without the CA, with the hint where
    it goes; with it in /etc/docker/certs.d/HOST:PORT/ (where the engine looks) the engine's
    push, imgkit's own client and skopeo's copy all verify it."""
    from imgkit.registry.client import CERTS_D

    from .helpers.registry import make_ca_and_certificate, start_registry
    gateway = engine.bridge_gateway()
    ca, cert, key = make_ca_and_certificate(tmp_path / "pki", gateway)
    secure = start_registry(tmp_path / "registry-tls", tls=(cert, key), host=gateway)
    certs = CERTS_D / secure.address
    try:
        try:
            certs.mkdir(parents=True)
        except PermissionError:
            pytest.skip(f"cannot write {CERTS_D} (the engine reads registry CAs there)")
        certs.rmdir()
        assert engine.registry_is_secure(secure.address)
        config = logins(tmp_path, registry, secure)
        first, second_ref = (image_like(engine, namespace, mini, n) for n in ("tls-a", "tls-b"))
        for ref in (first, second_ref):
            verified(ref, config)

        out = imgkit("publish", first, "--to", secure.address, "--allow-gpu-unverified",
                     config=config)
        assert out.returncode != 0 and f"{CERTS_D}/{secure.address}/ca.crt" in out.stderr, \
            out.stdout + out.stderr
        assert skopeo_tags(secure, first.rsplit(":", 1)[0]) == []

        certs.mkdir(parents=True)
        shutil.copy(ca, certs / "ca.crt")
        # pushed by the engine to the plain registry, copied by skopeo to the TLS one
        out = imgkit("publish", first, "--to", registry.address, "--to", secure.address,
                     "--allow-gpu-unverified", "--json", str(tmp_path / "a.json"), config=config)
        assert out.returncode == 0, out.stdout + out.stderr
        results = json.loads((tmp_path / "a.json").read_text())["published"]
        assert results[0]["digest"] == results[1]["digest"]
        # pushed by the engine itself over verified TLS
        out = imgkit("publish", second_ref, "--to", secure.address, "--allow-gpu-unverified",
                     config=config)
        assert out.returncode == 0, out.stdout + out.stderr
        name, tag = second_ref.rsplit(":", 1)
        assert raw(secure, f"{name}:{tag}")["config"]["digest"] == engine.image(second_ref).id
    finally:
        shutil.rmtree(certs, ignore_errors=True)
        secure.remove()


def test_the_push_reports_each_layer_until_it_is_all_sent(engine, mini, namespace, registry):
    """What the progress bars show: every layer the registry lacked, sent to its full size."""
    from imgkit.publish.report import PushBars
    ref = f"{registry.address}/progress/mini:1"
    engine.tag(engine.image(mini).id, ref)
    bars = PushBars()                       # not a terminal here: it only counts
    try:
        digest = engine.push(ref, (USER, registry.password),
                             lambda layer, sent, size: bars.update(ref, layer, sent, size))
    finally:
        engine.untag(ref)
    assert digest.startswith("sha256:")
    layers = bars.layers[ref]
    assert 2 <= len(layers) <= len(set(engine.image(mini).layers))  # a fresh registry lacks them
    assert all(sent == size > 0 for sent, size in layers.values())
    sent, size = bars.sent(ref)
    assert sent == size > 10 << 20                            # python + the CUDA runtime wheel


def test_zstd_layers_carry_the_verified_image_bit_for_bit_and_an_engine_pulls_it(
        engine, mini, namespace, registry, second, tmp_path):
    """`publish --compression zstd`: the same verified image (its config, so its id), zstd
    layers under an OCI manifest in both registries with the verdict beside it; an engine
    pulls it back, decoding a layer it had nowhere else, to the very same id."""
    ref = f"{namespace}/pub-zstd:1.0-cuda11.8"
    dockerfile = f"FROM {mini}\nRUN head -c 300000 /dev/urandom > /tmp/own.bin\n"  # its own layer
    engine.client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=ref, rm=True, forcerm=True)
    config = logins(tmp_path, registry, second)
    verified(ref, config)
    image_id = engine.image(ref).id
    bad = imgkit("publish", ref, "--to", registry.address, "--compression", "brotli", config=config)
    assert bad.returncode == 2 and "--compression 'brotli'" in bad.stderr, bad.stderr
    out = imgkit("publish", ref, "--to", registry.address, "--to", second.address, "--compression",
                 "zstd", "--allow-gpu-unverified", "--json", str(tmp_path / "p.json"), config=config)
    assert out.returncode == 0, out.stdout + out.stderr
    layers = len(set(engine.image(ref).layers))
    assert f"{layers} of its {layers} layers compressed with zstd" in out.stdout + out.stderr
    results = json.loads((tmp_path / "p.json").read_text())["published"]
    digest = results[0]["digest"]
    assert [r["digest"] for r in results] == [digest, digest]
    name, tag = ref.rsplit(":", 1)
    for where in (registry, second):
        manifest = raw(where, f"{name}@{digest}")
        assert manifest["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
        assert manifest["config"]["digest"] == image_id                  # the verified image
        assert {layer["mediaType"] for layer in manifest["layers"]} == {
            "application/vnd.oci.image.layer.v1.tar+zstd"}
        assert {tag, digest.replace(":", "-") + ".verdict"} <= set(skopeo_tags(where, name))
    # an image of the same layers: nothing compressed or sent again, the same blobs named
    sibling = image_like(engine, namespace, ref, "zstd-sibling")
    verified(sibling, config)
    again = imgkit("publish", sibling, "--to", registry.address, "--compression", "zstd",
                   "--allow-gpu-unverified", "--json", str(tmp_path / "s.json"), config=config)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"0 of its {layers} layers compressed with zstd" in again.stdout + again.stderr
    [entry] = json.loads((tmp_path / "s.json").read_text())["published"]
    theirs = raw(registry, f"{sibling.rsplit(':', 1)[0]}@{entry['digest']}")
    assert theirs["layers"] == raw(registry, f"{name}@{digest}")["layers"]
    assert theirs["config"]["digest"] == engine.image(sibling).id

    engine.remove_image(sibling)
    engine.remove_image(ref)
    assert engine.image(image_id) is None
    pulled = f"{registry.address}/{name}@{digest}"
    engine.pull_checked(pulled, (USER, registry.password))
    assert engine.image(pulled).id == image_id
    size = engine.client.containers.run(image_id, ["stat", "-c", "%s", "/tmp/own.bin"], remove=True)
    assert size.decode().strip() == "300000"
