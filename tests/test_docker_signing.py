"""Signed verdicts with the real tools: cosign 2.5 signs and verifies, Debian's
docker-registry holds the images and attestations, skopeo reads what was promoted.

Verdicts are made here the way an attacker or another tool would make them: signed by cosign
directly (`cosign attest --type https://imgkit.dev/attestations/verdict/v1`), with another
key, moved, tampered with, or not signed at all. Each is refused with its reason and
nothing reaches production; the genuine one is promoted and still verifies there with
`cosign verify-attestation`."""
from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from imgkit.registry.cosign import VERDICT_TYPE

from .helpers.images import mini_project
from .helpers.registry import USER, Registry, docker_config, skopeo_json, skopeo_tags, start_registry

pytestmark = pytest.mark.docker
IMGKIT = [sys.executable, "-m", "imgkit"]
PASSWORD = "correct horse battery staple"     # the key's passphrase: must never leak

if shutil.which("cosign") is None and not os.environ.get("CI"):
    pytest.skip("cosign is not installed (.ci/setup-host.sh installs it)", allow_module_level=True)


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two cosign key pairs: the trusted one and another."""
    found = {}
    for name in ("trusted", "other"):
        folder = tmp_path_factory.mktemp(f"keys-{name}")
        subprocess.run(["cosign", "generate-key-pair", "--output-key-prefix", str(folder / "cosign")],
                       env={**os.environ, "COSIGN_PASSWORD": PASSWORD}, check=True,
                       capture_output=True)
        found[name] = folder / "cosign.key"
        found[f"{name}.pub"] = folder / "cosign.pub"
    return found


@pytest.fixture(scope="module")
def staging(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    running = start_registry(tmp_path_factory.mktemp("staging") / "registry")
    yield running
    running.remove()


@pytest.fixture()
def production(tmp_path: Path) -> Iterator[Registry]:
    running = start_registry(tmp_path / "production")
    yield running
    running.remove()


def config_for(tmp_path: Path, *registries: Registry) -> Path:
    return docker_config(tmp_path / f"docker-{uuid.uuid4().hex[:6]}",
                         {r.address: (USER, r.password) for r in registries})


def tiny(engine, registry: Registry, config: Path, name: str) -> tuple[str, str, str]:
    """A one-file image of its own, pushed: (repository, digest, image id)."""
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, data in (("Dockerfile", b"FROM scratch\nCOPY id /id\n"),
                           ("id", uuid.uuid4().hex.encode())):
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    repository = f"ml/{name}"
    ref = f"{registry.address}/{repository}:1"
    image, _ = engine.client.images.build(fileobj=buf, custom_context=True, tag=ref, rm=True, forcerm=True)
    subprocess.run(["docker", "--config", str(config), "push", ref], check=True, capture_output=True)
    digest = skopeo_json("inspect", f"docker://{ref}", registry=registry)["Digest"]
    engine.remove_image(ref)
    return repository, digest, image.id


def predicate(image_id: str, **changes: Any) -> dict[str, Any]:
    body = {"predicate_version": 1, "imgkit_version": "0.1.0", "format": 1, "image_id": image_id,
            "image": "staging/ml/x:1", "passed": True, "gpu_checked": True, "failed": [],
            "host_failure": False, "recorded_at": time.time(), "overrides": [],
            "checks": [{"name": "gpu.visible", "verdict": "pass", "required": True}],
            "libraries": None}
    body.update(changes)
    return body


def cosign_attest(reference: str, body: dict[str, Any], key: Path, config: Path,
                  tmp_path: Path) -> None:
    """An attestation made by cosign itself, as another tool would make one."""
    path = tmp_path / f"predicate-{uuid.uuid4().hex[:6]}.json"
    path.write_text(json.dumps(body))
    done = subprocess.run(["cosign", "attest", "--yes", "--key", str(key), "--type", VERDICT_TYPE,
                           "--predicate", str(path), "--tlog-upload=false",
                           "--allow-http-registry", reference],
                          env={**os.environ, "COSIGN_PASSWORD": PASSWORD,
                               "DOCKER_CONFIG": str(config)}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def imgkit(*args: str, config: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DOCKER_CONFIG": str(config)}
    env.pop("COSIGN_PASSWORD", None)
    return subprocess.run([*IMGKIT, *args], env=env, capture_output=True, text=True, timeout=300)


def promote(source: str, production: Registry, key: Path, config: Path,
            *extra: str) -> subprocess.CompletedProcess[str]:
    return imgkit("promote", source, "--to", f"{production.address}/prod/app", "--tag", "stable",
                  "--trusted-key", str(key), *extra, config=config)


def refused(out: subprocess.CompletedProcess[str], words: str, production: Registry) -> None:
    assert out.returncode == 1, out.stdout + out.stderr
    assert words in out.stdout, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    assert skopeo_tags(production, "prod/app") == []          # nothing copied, no tag moved


def test_a_verdict_cosign_signed_with_the_trusted_key_is_promoted_and_verifies_there(
        engine, staging, production, keys, tmp_path):
    config = config_for(tmp_path, staging, production)
    repository, digest, image_id = tiny(engine, staging, config, "good")
    source = f"{staging.address}/{repository}@{digest}"
    cosign_attest(source, predicate(image_id), keys["trusted"], config, tmp_path)
    out = promote(source, production, keys["trusted.pub"], config)
    assert out.returncode == 0, out.stdout + out.stderr
    assert skopeo_json("inspect", f"docker://{production.address}/prod/app:stable",
                       registry=production)["Digest"] == digest
    # the signed attestation travelled: cosign verifies the production copy on its own
    done = subprocess.run(["cosign", "verify-attestation", "--key", str(keys["trusted.pub"]),
                           "--type", VERDICT_TYPE, "--insecure-ignore-tlog=true",
                           "--allow-http-registry", f"{production.address}/prod/app@{digest}"],
                          env={**os.environ, "DOCKER_CONFIG": str(config)},
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    statement = json.loads(base64.b64decode(json.loads(done.stdout.splitlines()[0])["payload"]))
    assert statement["subject"][0]["digest"]["sha256"] == digest.split(":")[1]
    out = imgkit("check-signed", f"{production.address}/prod/app@{digest}",
                 "--trusted-key", str(keys["trusted.pub"]), config=config)
    assert out.returncode == 0 and "signed, passing verdict" in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize("case,words", [
    ("unsigned", "unsigned"),
    ("other key", "does not verify"),
    ("failed", "its verification failed"),
    ("gpu unverified", "without a GPU"),
    ("stale", "too old"),
    ("replayed", "replayed from another image"),
    ("not a verdict", "not an imgkit verdict v1"),
])
def test_a_forged_or_unfit_verdict_is_refused_with_its_reason(
        engine, staging, production, keys, tmp_path, case, words):
    config = config_for(tmp_path, staging, production)
    repository, digest, image_id = tiny(engine, staging, config, case.replace(" ", "-"))
    source = f"{staging.address}/{repository}@{digest}"
    extra: tuple[str, ...] = ()
    if case == "unsigned":        # shaped like a genuine verdict, pushed by hand, no signature
        from imgkit.registry import artifacts
        from imgkit.registry.client import Endpoint, RegistryClient
        with RegistryClient(Endpoint(staging.address, False, (USER, staging.password))) as client:
            manifest = client.manifest(repository, digest)
            assert manifest is not None
            document = {**predicate(image_id), "format": 1}
            artifacts.attach(client, repository, artifacts.make_verdict(document, manifest))
    else:
        body, key = {
            "other key": (predicate(image_id), keys["other"]),
            "failed": (predicate(image_id, passed=False, failed=["gpu.visible"]), keys["trusted"]),
            "gpu unverified": (predicate(image_id, gpu_checked=False), keys["trusted"]),
            "stale": (predicate(image_id, recorded_at=time.time() - 3 * 86400), keys["trusted"]),
            "replayed": (predicate("sha256:" + hashlib.sha256(b"older").hexdigest()), keys["trusted"]),
            "not a verdict": ({"passed": True}, keys["trusted"]),
        }[case]
        cosign_attest(source, body, key, config, tmp_path)
        extra = ("--max-age", "1d") if case == "stale" else ()
    refused(promote(source, production, keys["trusted.pub"], config, *extra), words, production)
    if case == "unsigned":
        out = promote(source, production, keys["trusted.pub"], config)
        assert "an unsigned verdict is attached" in out.stdout
    if case == "gpu unverified":   # the user may accept it, and then it goes through
        out = promote(source, production, keys["trusted.pub"], config, "--allow-gpu-unverified")
        assert out.returncode == 0, out.stdout + out.stderr


def test_a_signed_verdict_moved_to_another_digest_or_tampered_with_is_refused(
        engine, staging, production, keys, tmp_path):
    from imgkit.registry.client import Endpoint, RegistryClient
    config = config_for(tmp_path, staging, production)
    repository, digest, image_id = tiny(engine, staging, config, "signed-once")
    cosign_attest(f"{staging.address}/{repository}@{digest}", predicate(image_id),
                  keys["trusted"], config, tmp_path)
    other_repository, other_digest, other_id = tiny(engine, staging, config, "unverified")
    with RegistryClient(Endpoint(staging.address, False, (USER, staging.password))) as client:
        att = client.manifest(repository, digest.replace(":", "-") + ".att")
        assert att is not None
        document = json.loads(att.body)
        layer = document["layers"][0]
        envelope = json.loads(client.blob(repository, layer["digest"]))
        # moved: the very signed attestation, next to an image that was never verified
        for blob in [document["config"], layer]:
            client.put_blob(other_repository, client.blob(repository, blob["digest"]))
        client.put_manifest(other_repository, other_digest.replace(":", "-") + ".att", att.body,
                            att.media_type)
        # tampered: its payload now claims the GPU was checked; the signature stays as it was
        statement = json.loads(base64.b64decode(envelope["payload"]))
        statement["predicate"]["gpu_checked"] = True
        statement["predicate"]["recorded_at"] = time.time() + 1
        envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
        changed = json.dumps(envelope).encode()
        new_layer = {**layer, "digest": client.put_blob(repository, changed), "size": len(changed)}
        body = json.dumps({**document, "layers": [new_layer]}).encode()
        client.put_manifest(repository, digest.replace(":", "-") + ".att", body, att.media_type)
    moved = promote(f"{staging.address}/{other_repository}@{other_digest}", production,
                    keys["trusted.pub"], config)
    refused(moved, "about another image", production)
    tampered = promote(f"{staging.address}/{repository}@{digest}", production,
                       keys["trusted.pub"], config)
    refused(tampered, "does not verify", production)


def pushed_and_attested(engine, image: str, ref: str, registry: Registry, config: Path,
                        key: Path, *extra: str) -> tuple[str, subprocess.CompletedProcess[str]]:
    """`image` pushed as `ref`, then `imgkit attest REPO@DIGEST --signing-key key`: the
    reference by digest, and attest's run (which passed)."""
    engine.tag(engine.image(image).id, ref)
    subprocess.run(["docker", "--config", str(config), "push", ref], check=True, capture_output=True)
    digest = skopeo_json("inspect", f"docker://{ref}", registry=registry)["Digest"]
    by_digest = f"{ref.rsplit(':', 1)[0]}@{digest}"
    env = {**os.environ, "DOCKER_CONFIG": str(config), "COSIGN_PASSWORD": PASSWORD}
    out = subprocess.run([*IMGKIT, "attest", by_digest, "--gpus", "none", "--signing-key", str(key),
                          *extra], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return by_digest, out


def test_imgkit_signs_what_verify_attaches_and_cosign_accepts_it_with_no_secret_leaked(
        engine, mini, namespace, staging, production, keys, tmp_path):
    config = config_for(tmp_path, staging, production)
    ref = f"{staging.address}/{namespace}/signed-mini:1"
    source, out = pushed_and_attested(engine, mini, ref, staging, config, keys["trusted"],
                                      "--json", str(tmp_path / "v.json"))
    assert "signed the verdict and the SBOM" in out.stderr
    for kind, wanted in ((VERDICT_TYPE, "image_id"), ("cyclonedx", "bomFormat")):
        done = subprocess.run(["cosign", "verify-attestation", "--key", str(keys["trusted.pub"]),
                               "--type", kind, "--insecure-ignore-tlog=true",
                               "--allow-http-registry", source],
                              env={**os.environ, "DOCKER_CONFIG": str(config)},
                              capture_output=True, text=True)
        assert done.returncode == 0, (kind, done.stderr)
        payloads = [json.loads(base64.b64decode(json.loads(line)["payload"]))
                    for line in done.stdout.splitlines() if line.startswith("{")]
        assert any(wanted in p["predicate"] for p in payloads), payloads
    # verified without a GPU: promotion refuses unless told, and then it verifies the key
    refused(promote(source, production, keys["trusted.pub"], config), "without a GPU", production)
    out = promote(source, production, keys["trusted.pub"], config, "--allow-gpu-unverified")
    assert out.returncode == 0, out.stdout + out.stderr
    wrong = promote(source, production, keys["other.pub"], config, "--allow-gpu-unverified")
    assert wrong.returncode == 1 and "does not verify" in wrong.stdout
    # the passphrase reached cosign through the environment only
    for text in (out.stdout, out.stderr, (tmp_path / "v.json").read_text()):
        assert PASSWORD not in text
    engine.remove_image(ref)


def containers_made_since(since: float, image_id: str) -> list[str]:
    """The containers of image `image_id` the engine made since `since` (verify makes its
    probe's by the image's id; the id is this session's alone: its labels name its namespace)."""
    done = subprocess.run(["docker", "events", "--since", f"{since:.6f}", "--until",
                           f"{time.time():.6f}", "--filter", "type=container", "--filter",
                           "event=create", "--filter", f"image={image_id}", "--format", "{{.Actor.ID}}"],
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.split()


def test_attest_keeps_a_fresh_signed_verdict_judged_as_it_would_judge_and_runs_nothing(
        engine, mini, namespace, staging, keys, tmp_path):
    """A verify job of an image production holds unchanged: `imgkit attest --max-age` with
    the trusted key reports the signed verdict its digest carries (this imgkit's, made with
    the same claims, bars and checks, young enough), and no container of it is made; a
    verdict it cannot trust, or one judged by other bars, sends it to judge the image again."""
    config = config_for(tmp_path, staging)
    ref = f"{staging.address}/{namespace}/signed-kept:1"
    by_digest, _ = pushed_and_attested(engine, mini, ref, staging, config, keys["trusted"])
    env = {**os.environ, "DOCKER_CONFIG": str(config), "COSIGN_PASSWORD": PASSWORD}
    trusted = ("--max-age", "1h", "--trusted-key", str(keys["trusted.pub"]))
    image_id = engine.image(mini).id

    def attest(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*IMGKIT, "attest", by_digest, "--gpus", "none", "--signing-key",
                               str(keys["trusted"]), *extra], env=env, capture_output=True,
                              text=True, timeout=300)

    since = time.time()
    (tmp_path / "verdicts").mkdir()
    kept = attest(*trusted, "--json", str(tmp_path / "verdicts" / "k.json"),
                  "--junit", str(tmp_path / "k.xml"))
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert f"kept the signed verdict {by_digest} carries" in kept.stderr, kept.stderr
    assert containers_made_since(since, image_id) == []           # no probe ran
    verdict = json.loads((tmp_path / "verdicts" / "k.json").read_text())
    names = [c["name"] for c in verdict["checks"]]
    assert names[0] == "verdict.kept" and "cudart.version" in names and verdict["passed"], names
    assert 'name="verdict.kept"' in (tmp_path / "k.xml").read_text()
    # the pipeline's site shows it as the image's verdict, saying it was kept
    project = mini_project(tmp_path / "project")
    site = imgkit("site", "--images", str(project / "images"), "--namespace", namespace,
                  "--verdicts", str(tmp_path / "verdicts"), "--out", str(tmp_path / "site"),
                  config=config)
    assert site.returncode == 0 and "skipped" not in site.stderr, site.stdout + site.stderr
    page = next((tmp_path / "site" / "images").glob("*cuda*.html")).read_text()
    assert "verdict.kept" in page and "not judged again" in page

    other = attest("--max-age", "1h", "--trusted-key", str(keys["other.pub"]))
    assert other.returncode == 0 and "judging it now" in other.stderr, other.stderr
    assert "does not verify" in other.stderr and "signed the verdict" in other.stderr
    since = time.time()
    bars = attest(*trusted, "--min", "gemm=0.6")
    assert bars.returncode == 0 and "judging it now" in bars.stderr, bars.stderr
    assert containers_made_since(since, image_id) != []           # judged: the probe ran
    assert "other --expect, --min or --checks" in bars.stderr
    again = attest(*trusted, "--min", "gemm=0.6")
    assert "kept the signed verdict" in again.stderr, again.stderr
    missing = attest("--max-age", "1h")
    assert missing.returncode == 2 and "needs a public key" in missing.stderr, missing.stderr
    engine.remove_image(ref)


def test_the_site_says_which_promoted_images_carry_a_signed_verdict(
        engine, mini, namespace, production, keys, tmp_path):
    """`imgkit site --registry`: the matrix's final image, promoted where a pipeline puts it
    and attested with the trusted key, is shown signed with its digest and the commands to
    check it; against another key, or where it was never promoted, it is not."""
    config = config_for(tmp_path, production)
    name, version = mini.rsplit(":", 1)
    ref = f"{production.address}/prod/{name}:{version}"
    by_digest, _ = pushed_and_attested(engine, mini, ref, production, config, keys["trusted"])
    project = mini_project(tmp_path / "project")

    def site(out: str, registry: str, *trust: str) -> tuple[str, str]:
        done = imgkit("site", "--images", str(project / "images"), "--namespace", namespace,
                      "--out", str(tmp_path / out), "--registry", registry, *trust, config=config)
        assert done.returncode == 0, done.stdout + done.stderr
        page = next((tmp_path / out / "images").glob("*cuda*.html")).read_text()
        return (tmp_path / out / "index.html").read_text(), page

    index, page = site("trusted", f"{production.address}/prod", "--trusted-key", str(keys["trusted.pub"]))
    assert "1 of the 1 promoted image(s) carry a signed, passing verdict" in index
    assert index.count("registry: signed verdict") == 1 and "registry: no signed verdict" not in index
    assert f"<code>{by_digest}</code>: a signed, passing verdict about this digest" in page
    assert f"imgkit check-signed {by_digest} --trusted-key cosign.pub" in page
    index, page = site("other", f"{production.address}/prod", "--trusted-key", str(keys["other.pub"]))
    assert "0 of the 1 promoted" in index and "registry: no signed verdict" in index
    assert "does not verify" in page, page
    index, page = site("elsewhere", f"{production.address}/elsewhere", "--trusted-key",
                       str(keys["trusted.pub"]))
    assert "not in the registry (not promoted)" in page
    untrusted = imgkit("site", "--images", str(project / "images"), "--namespace", namespace, "--out",
                       str(tmp_path / "none"), "--registry", f"{production.address}/prod", config=config)
    assert untrusted.returncode == 2 and "needs the signer to trust" in untrusted.stderr
    engine.remove_image(ref)


def test_promotion_without_a_key_refuses_unsigned_verdicts_with_a_hint(
        engine, staging, production, tmp_path):
    config = config_for(tmp_path, staging, production)
    repository, digest, _ = tiny(engine, staging, config, "no-key")
    out = imgkit("promote", f"{staging.address}/{repository}@{digest}", "--to",
                 f"{production.address}/prod/app", config=config)
    refused(out, "no trusted key", production)
    assert "--allow-unsigned" in out.stdout
    bad = imgkit("promote", f"{staging.address}/{repository}@{digest}", "--to",
                 f"{production.address}/prod/app", "--trusted-key", str(tmp_path / "missing.pub"),
                 config=config)
    assert bad.returncode == 2 and "no such key file" in bad.stderr


def test_the_exported_policy_runs_in_cosign_and_admits_only_passing_gpu_verdicts(
        engine, staging, keys, tmp_path):
    """The rule `imgkit export policy` writes, run for real by `cosign verify-attestation
    --policy` against images it has never seen: a passing GPU verdict is admitted, a failed
    one and a GPU-unverified one are not (unless the policy was written to allow that)."""
    config = config_for(tmp_path, staging)
    strict, lax = tmp_path / "strict", tmp_path / "lax"
    for out, extra in ((strict, ()), (lax, ("--allow-gpu-unverified",))):
        done = imgkit("export", "policy", "--out", str(out), "--registry", staging.address,
                      "--trusted-key", str(keys["trusted.pub"]), *extra, config=config)
        assert done.returncode == 0, done.stderr
    images = {}
    for name, body in (("admitted", {}), ("failed", {"passed": False, "failed": ["gemm.fp32"]}),
                       ("cpu-only", {"gpu_checked": False})):
        repository, digest, image_id = tiny(engine, staging, config, f"policy-{name}")
        images[name] = f"{staging.address}/{repository}@{digest}"
        cosign_attest(images[name], predicate(image_id, **body), keys["trusted"], config, tmp_path)

    def admitted(name: str, policy: Path) -> bool:
        done = subprocess.run(["cosign", "verify-attestation", "--key", str(keys["trusted.pub"]),
                               "--type", VERDICT_TYPE, "--insecure-ignore-tlog=true",
                               "--allow-http-registry", "--policy", str(policy / "imgkit-verdict.cue"),
                               images[name]], env={**os.environ, "DOCKER_CONFIG": str(config)},
                              capture_output=True, text=True)
        return done.returncode == 0
    assert admitted("admitted", strict)
    assert not admitted("failed", strict) and not admitted("cpu-only", strict)
    assert admitted("cpu-only", lax) and not admitted("failed", lax)


def test_publish_signs_the_build_provenance_of_what_this_checkout_built(
        engine, project, namespace, staging, keys, tmp_path):
    """SLSA provenance v1, signed with cosign: the matrix and template files by digest and
    the input hash the image carries, for an image built from exactly these files."""
    import hashlib as digests

    from imgkit.builder.buildenv import BuildEnv, SecretServer, default_ca_bundle
    from imgkit.builder.hostlock import one_build_at_a_time
    from imgkit.builder.scheduler import Builder
    from imgkit.labels import INPUT_HASH
    from imgkit.options import BuildOptions
    from imgkit.render.command import render_contexts
    from imgkit.selection import Selection
    config = config_for(tmp_path, staging)
    contexts = render_contexts(Selection(project / "images", namespace, templates=project / "templates"))
    with one_build_at_a_time(lambda _: None), \
            SecretServer(BuildEnv(ca_bundle=default_ca_bundle(None)), engine.bridge_gateway()) as s:
        Builder(engine, BuildOptions(), s.extra_hosts, lambda *a: None).run(contexts)
    tag = contexts[-1].target.tag
    assert imgkit("verify", tag, "--gpus", "none", config=config).returncode == 0
    env = {**os.environ, "DOCKER_CONFIG": str(config), "COSIGN_PASSWORD": PASSWORD}
    out = subprocess.run([*IMGKIT, "publish", tag, "--images", str(project / "images"),
                          "--namespace", namespace, "--to", staging.address,
                          "--allow-gpu-unverified", "--signing-key", str(keys["trusted"])],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "signed its build provenance" in out.stderr
    repository, name = tag.rsplit(":", 1)
    digest = skopeo_json("inspect", f"docker://{staging.address}/{repository}:{name}",
                         registry=staging)["Digest"]
    done = subprocess.run(["cosign", "verify-attestation", "--key", str(keys["trusted.pub"]),
                           "--type", "slsaprovenance1", "--insecure-ignore-tlog=true",
                           "--allow-http-registry", f"{staging.address}/{repository}@{digest}"],
                          env={**os.environ, "DOCKER_CONFIG": str(config)}, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    statement = json.loads(base64.b64decode(json.loads(done.stdout.splitlines()[0])["payload"]))
    assert statement["predicateType"] == "https://slsa.dev/provenance/v1"
    build = statement["predicate"]["buildDefinition"]
    assert build["internalParameters"]["input_hash"] == engine.image(tag).labels[INPUT_HASH]
    files = {d["name"]: d["digest"]["sha256"] for d in build["resolvedDependencies"] if "name" in d}
    family = (project / "images" / "mini.yaml").read_bytes()
    assert files["images/mini.yaml"] == digests.sha256(family).hexdigest()
    assert files["templates/pip-layer.Dockerfile.j2"] == digests.sha256(
        (project / "templates" / "pip-layer.Dockerfile.j2").read_bytes()).hexdigest()
    assert statement["predicate"]["runDetails"]["builder"]["id"] == "https://imgkit.dev/builders/docker-py"
