"""Podman as an engine, the parts that are pure logic: which socket imgkit connects to, the
GPUs Podman can hand out (CDI only, from 5.5), the CDI names a host's spec files declare,
Podman's build log read as the legacy builder's, and the context it is sent with its
secrets. The real Podman, rootful and rootless, is in tests/test_podman.py."""
from __future__ import annotations

import base64
import json
import tarfile
from pathlib import Path

import pytest

from imgkit.engine.address import engine_address, podman_socket
from imgkit.engine.build import BuildLog
from imgkit.engine.cdi_specs import PODMAN_SPEC_DIRS, device_names, podman_spec_dirs
from imgkit.engine.podman_build import SECRET_PREFIX, context_tar
from imgkit.errors import BuildFailed, HostError
from imgkit.verify.gpu_request import resolve

DIRS = ["/etc/cdi", "/var/run/cdi"]
NVIDIA = ["nvidia.com/gpu=0", "nvidia.com/gpu=1", "nvidia.com/gpu=all"]


@pytest.mark.parametrize("environ, uid, chosen, host", [
    ({}, 0, None, None),                                          # Docker's default socket
    ({"IMGKIT_ENGINE": "podman"}, 0, None, "unix:///run/podman/podman.sock"),
    ({"IMGKIT_ENGINE": "buildx"}, 0, None, None),
    ({}, 0, "podman", "unix:///run/podman/podman.sock"),          # build's own --engine
    ({"IMGKIT_ENGINE": "podman"}, 0, "auto", None),               # the flag said otherwise
    ({"IMGKIT_ENGINE": "podman", "XDG_RUNTIME_DIR": "/run/user/1000"}, 1000, None,
     "unix:///run/user/1000/podman/podman.sock"),
    ({"DOCKER_HOST": "tcp://10.0.0.5:2376", "IMGKIT_ENGINE": "podman"}, 0, None,
     "tcp://10.0.0.5:2376"),                                      # DOCKER_HOST always wins
])
def test_the_engine_address(environ: dict[str, str], uid: int, chosen: str | None,
                            host: str | None) -> None:
    assert engine_address(environ, uid, chosen)[0] == host


def test_a_rootless_users_socket_without_xdg_runtime_dir() -> None:
    assert podman_socket(1001, {}) == "/run/user/1001/podman/podman.sock"


@pytest.mark.parametrize("gpus, asked", [
    ("all", "nvidia.com/gpu=all"), ("0,1", "nvidia.com/gpu=0,nvidia.com/gpu=1"),
    ("nvidia.com/gpu=1", "nvidia.com/gpu=1"),
])
def test_podman_gets_every_gpu_form_as_cdi_names(gpus: str, asked: str) -> None:
    path = resolve(gpus, DIRS, NVIDIA, podman="5.7.0")
    assert (path.gpus, path.way) == (asked, "CDI")


def test_podman_has_no_gpu_count_and_no_hook() -> None:
    with pytest.raises(HostError) as caught:
        resolve("2", DIRS, NVIDIA, podman="5.7.0")
    assert "no count" in str(caught.value) and "--gpus 0,1" in caught.value.hint
    with pytest.raises(HostError) as caught:     # no spec: never NVIDIA's hook, which it lacks
        resolve("all", DIRS, [], podman="5.7.0")
    assert "no CDI spec on this host names nvidia.com/gpu devices" in str(caught.value)


@pytest.mark.parametrize("release", ["4.3.1", "5.4.2"])
def test_a_podman_whose_api_drops_cdi_requests_is_the_hosts_fault(release: str) -> None:
    with pytest.raises(HostError) as caught:
        resolve("nvidia.com/gpu=all", DIRS, NVIDIA, podman=release)
    assert f"Podman {release}'s API drops CDI device requests" in str(caught.value)
    assert "5.5" in caught.value.hint


def test_spec_files_declare_their_kinds_devices(tmp_path: Path) -> None:
    (tmp_path / "nvidia.yaml").write_text(
        'cdiVersion: "0.5.0"\nkind: nvidia.com/gpu\ndevices:\n  - name: "0"\n  - name: all\n')
    (tmp_path / "other.json").write_text(
        '{"cdiVersion": "0.6.0", "kind": "example.com/fpga", "devices": [{"name": "f0"}]}')
    (tmp_path / "broken.yaml").write_text("kind: [unclosed\n")
    (tmp_path / "notes.txt").write_text("kind: nope.com/x\n")
    assert device_names([str(tmp_path), str(tmp_path / "absent")]) == [
        "example.com/fpga=f0", "nvidia.com/gpu=0", "nvidia.com/gpu=all"]


def conf(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_podmans_cdi_folders_are_containers_confs_the_last_file_that_sets_them_wins(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert podman_spec_dirs(None, {}, tmp_path, home) == (list(PODMAN_SPEC_DIRS), True)
    conf(tmp_path / "usr/share/containers/containers.conf",
         '[engine]\ncdi_spec_dirs = ["/vendor/cdi"]\n')
    conf(tmp_path / "etc/containers/containers.conf.d/50-site.conf",
         '[engine]\ncdi_spec_dirs = ["/site/cdi"]\n[containers]\nlog_size_max = 1\n')
    conf(tmp_path / "etc/containers/containers.conf", "[engine]\nevents_logger = 'file'\n")
    conf(home / ".config/containers/containers.conf", '[engine]\ncdi_spec_dirs = ["/mine"]\n')
    rootful = podman_spec_dirs("/run/podman/podman.sock", {}, tmp_path, home)
    assert rootful == (["/site/cdi"], True)          # a user's file is not the root service's
    rootless = podman_spec_dirs("/run/user/1001/podman/podman.sock", {}, tmp_path, home)
    assert rootless == (["/mine"], True)
    conf(tmp_path / "override.conf", '[engine]\ncdi_spec_dirs = ["/override"]\n')
    override = {"CONTAINERS_CONF_OVERRIDE": str(tmp_path / "override.conf")}
    assert podman_spec_dirs(None, override, tmp_path, home)[0] == ["/override"]
    only = {"CONTAINERS_CONF": str(tmp_path / "etc/containers/containers.conf")}
    assert podman_spec_dirs(None, only, tmp_path, home)[0] == list(PODMAN_SPEC_DIRS)


def test_a_containers_conf_that_is_not_toml_leaves_the_folders_unsure(tmp_path: Path) -> None:
    """Unsure: imgkit then names no device as missing and lets Podman say what it lacks."""
    conf(tmp_path / "etc/containers/containers.conf", "[engine\ncdi_spec_dirs = \n")
    assert podman_spec_dirs(None, {}, tmp_path, tmp_path) == (list(PODMAN_SPEC_DIRS), False)


PODMAN_LOG = [
    "STEP 1/9: FROM ns/debian:bookworm",
    "STEP 2/9: RUN apt-get update",
    "--> 301142b38265",
    "STEP 3/9: RUN exit 3",
]


def test_podmans_build_log_names_the_step_and_the_images_it_made() -> None:
    log = BuildLog("ns/python:3.11", on_line=lambda line: None)
    for line in PODMAN_LOG:
        log.take({"stream": line + "\n"}, cancelled=False)
    assert log.step == "step 3/9 (RUN exit 3)"
    assert log.made == ["301142b38265"]
    with pytest.raises(BuildFailed) as caught:
        log.take({"error": "building at STEP \"RUN exit 3\": exit status 3"}, cancelled=False)
    assert caught.value.step == "step 3/9 (RUN exit 3)"


def test_the_context_travels_with_its_secrets_at_the_top(tmp_path: Path) -> None:
    (tmp_path / "imgkit" / "bin").mkdir(parents=True)
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "imgkit" / "bin" / "helper").write_text("#!/bin/sh\n")
    with context_tar(tmp_path, {"imgkit-ca-bundle": b"PEM"}) as spool, \
            tarfile.open(fileobj=spool) as tar:
        names = tar.getnames()
        secret = tar.getmember(SECRET_PREFIX + "imgkit-ca-bundle")
        content = tar.extractfile(secret)
        assert content is not None and content.read() == b"PEM" and secret.mode == 0o600
    assert names == ["Dockerfile", "imgkit", "imgkit/bin", "imgkit/bin/helper",
                     SECRET_PREFIX + "imgkit-ca-bundle"]


def test_a_push_that_says_its_digest_only_in_words_as_podman_does() -> None:
    from imgkit.engine.auth import _pushed_digest
    digest = "sha256:" + "ab" * 32
    assert _pushed_digest({"status": f"id-1234: digest: {digest} size: 1573"}) == digest
    assert _pushed_digest({"aux": {"Digest": digest, "Tag": "1.0", "Size": 1573}}) == digest
    assert _pushed_digest({"status": "Pushed", "id": "301142b38265"}) is None


@pytest.mark.parametrize("instruction, words", [
    ('RUN --mount=type=secret,id=imgkit-ca-bundle,required=false --mount=type=secret,id=x '
     '["/bin/sh", "-ec", "imgkit-build-env /bin/sh -ec \\"$1\\"\\nimgkit-normalise", '
     '"imgkit-step", "pip install six"]', "RUN pip install six"),
    ('RUN ["/bin/sh", "-ec", "x", "imgkit-step", "false"]', "RUN false"),     # the legacy form
    ("RUN --mount=type=bind,target=/mnt mkdir -p /opt/team &&   cp /mnt/a /opt/team/a",
     "RUN mkdir -p /opt/team && cp /mnt/a /opt/team/a"),
    ('RUN ["python3", "-c", "print(1)"]', 'RUN ["python3", "-c", "print(1)"]'),
    ("COPY imgkit/bin/ /usr/local/bin/", "COPY imgkit/bin/ /usr/local/bin/"),
])
def test_a_failed_step_is_named_as_its_author_wrote_it(instruction: str, words: str) -> None:
    from imgkit.stepnames import step_words
    assert step_words(instruction) == words


def test_podman_logins_are_looked_for_where_podman_keeps_them(tmp_path: Path) -> None:
    """containers-auth.json(5)'s order: REGISTRY_AUTH_FILE alone; else the runtime folder's
    file (root's under /run/containers/0 without XDG_RUNTIME_DIR), then the config folder's;
    the first file that holds the registry wins, in Docker's format."""
    from imgkit.engine.auth import podman_auth_files, podman_credentials
    assert podman_auth_files({"REGISTRY_AUTH_FILE": "/etc/ci/auth.json", "HOME": "/root"}, 0) == \
        [Path("/etc/ci/auth.json")]
    assert podman_auth_files({"HOME": "/root"}, 0) == [
        Path("/run/containers/0/auth.json"), Path("/root/.config/containers/auth.json")]
    assert podman_auth_files({"XDG_RUNTIME_DIR": "/run/user/1001", "HOME": "/home/ml",
                              "XDG_CONFIG_HOME": "/home/ml/.cfg"}, 1001) == [
        Path("/run/user/1001/containers/auth.json"), Path("/home/ml/.cfg/containers/auth.json")]
    first, second = tmp_path / "runtime.json", tmp_path / "config.json"
    login = base64.b64encode(b"alice:s3cret").decode()
    second.write_text(json.dumps({"auths": {"registry.example.com": {"auth": login}}}))
    files = [tmp_path / "missing.json", first, second]
    first.write_text(json.dumps({"auths": {"other.example.com": {"auth": login}}}))
    assert podman_credentials("registry.example.com", files) == ("alice", "s3cret")
    assert podman_credentials("nowhere.example.com", files) is None
