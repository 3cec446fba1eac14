"""Customisation of the images framework and extension families name: user, entrypoint,
cmd, labels, env, workdir, ports and `run:` steps, checked with file and key, rendered into
the family's own layer only (the shared layers stay as they are). Built and inspected in
tests/test_docker_custom.py."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from imgkit.errors import SpecError
from imgkit.matrix import compat
from imgkit.matrix.plan import make_plan
from imgkit.matrix.spec import load_spec, parse_family
from imgkit.render.contexts import render_plan

from .helpers.families import TEAM, TEAM2

ROOT = Path(__file__).resolve().parent.parent
BASE = "family: base\ncuda_libs: [cudart]\naxes:\n  cuda: ['11.8']\n"


def dockerfiles(tmp_path: Path, **families: str) -> dict[str, str]:
    images = tmp_path / "images"
    images.mkdir(exist_ok=True)
    for name, text in families.items():
        (images / f"{name}.yaml").write_text(text)
    plan = make_plan(load_spec(images), compat.load())
    return {c.target.tag: c.dockerfile for c in render_plan(plan, ROOT / "templates")}


def test_every_key_lands_in_the_familys_own_layer_and_an_extension_keeps_the_user(
        tmp_path: Path) -> None:
    files = dockerfiles(tmp_path, base=BASE, team=TEAM, team2=TEAM2)
    team = files["team/app:11.8-cudart-py3.11-bookworm"]
    for line in ('RUN ["/bin/sh", "-ec", "imgkit-build-env /bin/sh -ec \\"$1\\"\\nimgkit-normalise", '
                 '"imgkit-step", "echo built-by-run > /etc/team-marker"]',
                 "useradd --no-log-init --create-home --uid 1001 --gid 1001 --shell /bin/bash ml",
                 'ENV APP_HOME="/workspace/app"', 'LABEL com.example.team="ml-platform"',
                 "EXPOSE 8080", "WORKDIR /workspace/app", "USER ml",
                 'ENTRYPOINT ["/usr/bin/tini", "--"]', """CMD ["python3", "-c", "print('hi')"]"""):
        assert line in team, line
    # the run steps come before the switch to the user, as root
    assert team.index("USER root") < team.index("built-by-run") < team.index("USER ml")
    assert files["team/app2:11.8-cudart-py3.11-bookworm"].rstrip().splitlines()[-2] == "USER ml"
    shared = files["imgkit/cuda:11.8-cudart-py3.11-bookworm"]
    assert "ml" not in shared.split("FROM", 1)[1] and "USER imgkit" in shared


def test_a_framework_family_takes_them_too(tmp_path: Path) -> None:
    torch = ("family: pt\nframework: torch\nrepository: ml/pytorch\ntag: '{framework_version}'\n"
             "axes: {framework_version: ['2.5.1'], cuda: ['12.4'], cudnn: ['9.1'], nccl: ['2.21']}\n"
             "user: {name: root, reason: the device plugin probes as root}\n"
             "cmd: [python3]\nlabels: {com.example.owner: ml}\n")
    text = dockerfiles(tmp_path, pt=torch)["ml/pytorch:2.5.1"]
    assert 'USER root\nCMD ["python3"]\nLABEL org.imgkit.input-hash=' in text
    assert 'LABEL com.example.owner="ml"' in text and "useradd" not in text


def test_without_them_the_bundled_images_render_as_before() -> None:
    golden = ROOT / "tests" / "golden"
    plan = make_plan(load_spec(ROOT / "images"), compat.load())
    rendered = {c.target.tag: c.dockerfile for c in render_plan(plan, ROOT / "templates")}
    assert rendered["paddle-jupyter:2.6.2-gpu-cuda11.8-cudnn8"] == (
        golden / "paddle-jupyter-2.6.2-gpu-cuda11.8-cudnn8.Dockerfile").read_text()


@pytest.mark.parametrize("change, key, said", [
    ({"user": {"name": "root"}}, "user.reason", "says why"),
    ({"user": {"name": "ml", "uid": 0}}, "user.uid", "uid 0 is root"),
    ({"user": {"name": "Bad User"}}, "user.name", "not a valid user name"),
    ({"user": "ml"}, "user", "must be a mapping"),
    ({"labels": {"org.imgkit.cuda": "13"}}, "labels.org.imgkit.cuda", "verify reads"),
    ({"workdir": "relative/dir"}, "workdir", "absolute path"),
    ({"entrypoint": "tini"}, "entrypoint", "must be a list"),
    ({"run": ["ok", ""]}, "run[1]", "expected shell step"),
    # `- chown ml: /data` unquoted: YAML reads it as a mapping; said so, with what to write
    ({"run": [{"mkdir -p /data && chown ml": "/data"}]}, "run[0]", "YAML read the ': '"),
    ({"cmd": ["jupyter", "lab", "--allow-root"]}, "cmd[2]", "without authentication"),
])
def test_bad_customisation_names_file_and_key(change: dict[str, Any], key: str, said: str) -> None:
    raw = {"family": "team", "extends": {"family": "base"}, "repository": "team/app",
           "apt": ["tini"], **change}
    with pytest.raises(SpecError) as info:
        parse_family("images/team.yaml", raw)
    assert (info.value.key, said in info.value.reason) == (key, True), info.value


def test_a_stack_family_says_where_user_belongs() -> None:
    with pytest.raises(SpecError) as info:
        parse_family("images/cuda.yaml", {"family": "cuda", "axes": {"cuda": ["12.8"]},
                                          "user": {"name": "ml"}})
    assert "not a key of a CUDA stack family" in info.value.reason
    assert "framework family" in info.value.hint and "extension family" in info.value.hint


TORCH_TEAM = """\
family: torch-team
framework: torch
repository: team/torch
tag: "{framework_version}-cuda{cuda}"
pip: ["transformers==4.46.0", "opencv-python-headless==4.10.0.84"]
apt: [libgl1]
axes:
  framework_version: ["2.5.1"]
  cuda: ["12.4"]
  cudnn: ["9.1"]
  nccl: ["2.21"]
"""


def test_a_framework_familys_own_pip_and_apt_go_into_its_layer_and_its_lock(tmp_path: Path) -> None:
    from imgkit.lock.files import apt_requests, requirements
    files = dockerfiles(tmp_path, team=TORCH_TEAM)
    torch = files["team/torch:2.5.1-cuda12.4"]
    assert ('--constraint /opt/imgkit/constraints.txt "torch==2.5.1" transformers==4.46.0 '
            "opencv-python-headless==4.10.0.84") in torch
    assert "apt-get install -y --no-install-recommends" in torch and " libgl1 " in torch
    plan = make_plan(load_spec(tmp_path / "images"), compat.load())
    target = plan.get("team/torch:2.5.1-cuda12.4")
    assert requirements(target) == ("torch==2.5.1", "transformers==4.46.0",
                                    "opencv-python-headless==4.10.0.84")   # what the lock resolves
    assert "libgl1" in apt_requests(target)
    assert ("pip.transformers", "4.46.0") in target.components


@pytest.mark.parametrize("pip, key, said", [
    ('["six==1.16.0", "Six==1.17.0"]', "pip[1]", "six is pinned twice"),
    ('["torch==2.4.0"]', "pip[0]", "torch==2.4.0 would replace torch==2.5.1"),
    ('["nvidia-cublas-cu11==11.11.3.6"]', "pip[0]", "is a CUDA 11 wheel"),
])
def test_a_framework_familys_pins_may_not_break_its_stack(tmp_path: Path, pip: str, key: str,
                                                          said: str) -> None:
    text = TORCH_TEAM.replace('["transformers==4.46.0", "opencv-python-headless==4.10.0.84"]', pip)
    with pytest.raises(SpecError) as caught:
        dockerfiles(tmp_path, team=text)
    assert caught.value.key == key and said in str(caught.value)


def rendered(images: Path, tmp_path: Path, project: str = "") -> dict[str, str]:
    """The Dockerfiles a project renders, its imgkit.toml holding `project` (its [labels])."""
    from imgkit.matrix.load import load_plan
    from imgkit.project import selection_from
    (tmp_path / "imgkit.toml").write_text(f'images = "{images.name}"\n{project}')
    selection = selection_from(start=tmp_path)
    assert selection.images.name == images.name
    plan = load_plan(selection)
    return {c.target.tag: c.dockerfile for c in render_plan(plan, ROOT / "templates")}


def test_the_team_owns_its_oci_labels_and_imgkit_writes_only_what_it_knows(tmp_path: Path) -> None:
    images = tmp_path / "images"
    images.mkdir()
    (images / "base.yaml").write_text(BASE)
    (images / "team.yaml").write_text(TEAM.replace(
        "labels: {com.example.team: ml-platform}",
        "labels: {com.example.team: ml-platform, org.opencontainers.image.title: the team app}"))
    files = rendered(images, tmp_path, '[labels]\n"org.opencontainers.image.vendor" = "Example ML"\n'
                                       '"org.opencontainers.image.title" = "ours"\n')
    team = files["team/app:11.8-cudart-py3.11-bookworm"]
    assert 'org.opencontainers.image.vendor="Example ML"' in team
    assert 'org.opencontainers.image.title="the team app"' in team and '"ours"' not in team
    assert 'org.imgkit.tag="team/app:11.8-cudart-py3.11-bookworm"' in team
    for tag, dockerfile in files.items():        # imgkit's own layers: nothing of the team's
        assert "image.vendor" not in dockerfile or tag.startswith("team/"), tag
        assert "org.opencontainers.image.title" not in dockerfile or tag.startswith("team/"), tag


@pytest.mark.parametrize("label, said", [
    ("org.opencontainers.image.version", "imgkit writes org.opencontainers.image.version"),
    ("org.opencontainers.image.created", "imgkit writes"),
    ("org.imgkit.cuda", "under org.imgkit."),
])
def test_a_label_imgkit_writes_is_refused_in_the_project_file_and_a_family(
        tmp_path: Path, label: str, said: str) -> None:
    images = tmp_path / "images"
    images.mkdir()
    (images / "base.yaml").write_text(BASE)
    with pytest.raises(SpecError) as caught:                  # the file, its line and key
        rendered(images, tmp_path, f'[labels]\n"{label}" = "x"\n')
    assert f"labels.{label}" in caught.value.message and said in caught.value.message
    with pytest.raises(SpecError) as refused:
        parse_family("team.yaml", {**_team(), "labels": {label: "x"}})
    assert refused.value.key == f"labels.{label}" and said in refused.value.reason


def _team() -> dict[str, Any]:
    import yaml
    return dict(yaml.safe_load(TEAM))
