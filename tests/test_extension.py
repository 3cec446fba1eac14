"""Extension families: parsed with file/key errors, planned as a child layer of every image
they extend, refused when the pins alone show a second CUDA library, rendered from their
template (golden)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from imgkit.errors import SpecError
from imgkit.matrix.load import load_plan
from imgkit.matrix.plan import Plan
from imgkit.render.contexts import render_plan
from imgkit.selection import Selection

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
JUPYTER = "paddle-jupyter:2.6.2-gpu-cuda11.8-cudnn8"
PADDLE = "paddle:2.6.2-gpu-cuda11.8-cudnn8"


def matrix(tmp_path: Path, extension: dict[str, Any], **files: str) -> Path:
    """The bundled matrix plus one extension family (and files beside it)."""
    images = tmp_path / "images"
    images.mkdir()
    for path in (ROOT / "images").glob("*.yaml"):
        (images / path.name).write_text(path.read_text())
    (images / "paddle-jupyter.yaml").unlink()
    (images / "ext.yaml").write_text(yaml.safe_dump(extension))
    for name, text in files.items():
        (images / name).write_text(text)
    return images


def plan_of(images: Path) -> Plan:
    return load_plan(Selection(images))


EXT = {"family": "ext", "extends": {"family": "paddle"}, "repository": "paddle-ext",
       "pip": ["six==1.16.0"]}


def test_the_bundled_extension_is_a_child_of_the_paddle_image() -> None:
    plan = plan_of(ROOT / "images")
    jupyter = plan.get(JUPYTER)
    assert jupyter.layer == "extension" and jupyter.parent == PADDLE
    assert JUPYTER in plan.finals
    assert jupyter.component_map["pip.jupyterlab"] == "4.2.5"
    assert jupyter.component_map["cudnn"] == plan.get(PADDLE).component_map["cudnn"]
    order = [t.tag for t in plan.targets]
    assert order.index(PADDLE) < order.index(JUPYTER)


def test_the_extension_renders_to_its_golden_file_and_copies_its_files() -> None:
    plan = load_plan(Selection(ROOT / "images", only=("paddle-jupyter:*",)))
    context = next(c for c in render_plan(plan, ROOT / "templates") if c.target.tag == JUPYTER)
    golden = GOLDEN / "paddle-jupyter-2.6.2-gpu-cuda11.8-cudnn8.Dockerfile"
    if os.environ.get("IMGKIT_UPDATE_GOLDEN") == "1":
        golden.write_text(context.dockerfile)
    assert context.dockerfile == golden.read_text()
    files = {path: content for path, content, _ in context.files}
    assert files["files/jupyter/jupyter_server_config.py"] == (
        ROOT / "images" / "jupyter" / "jupyter_server_config.py").read_bytes()
    assert b"paddlepaddle-gpu==2.6.2\n" in files["constraints.txt"]
    assert "--allow-root" not in context.dockerfile and 'CMD ["jupyter", "lab"]' in context.dockerfile


def test_narrowing_tag_placeholders_env_ports_and_an_extension_of_an_extension(tmp_path: Path) -> None:
    images = matrix(tmp_path, {**EXT, "extends": {"family": "cuda", "cuda": ["12.4"], "cudnn": ["9"]},
                               "tag": "{cuda}-cudnn{cudnn}-{parent_tag}", "env": {"A_B": "x y"},
                               "ports": [8080]})
    (images / "ext2.yaml").write_text(yaml.safe_dump(
        {"family": "ext2", "extends": {"family": "ext"}, "repository": "ext2",
         "apt": ["curl"], "cmd": ["bash"]}))
    plan = plan_of(images)
    ext = [t for t in plan.targets if t.family == "ext"]
    assert {t.tag.split(":")[1].split("-")[0] for t in ext} == {"12.4"}
    assert all(t.component_map["cudnn"].startswith("9.") for t in ext)
    second = [t for t in plan.targets if t.family == "ext2"]
    assert len(second) == len(ext) and {t.parent for t in second} == {t.tag for t in ext}
    order = [t.tag for t in plan.targets]
    assert all(order.index(t.parent) < order.index(t.tag) for t in second if t.parent)
    dockerfile = next(c for c in render_plan(plan, ROOT / "templates")
                      if c.target.tag == ext[0].tag).dockerfile
    assert 'ENV A_B="x y"' in dockerfile and "EXPOSE 8080" in dockerfile


def test_an_extension_of_a_two_platform_image_is_one_image_for_both(tmp_path: Path) -> None:
    """The bundled CUDA 12.8 layers are for amd64 and arm64: a family extending them makes
    one image per parent image, for the parent's platforms (not one per platform point)."""
    images = matrix(tmp_path, {**EXT, "extends": {"family": "cuda", "cuda": ["12.8"]},
                               "tag": "{cuda}-{parent_tag}"})
    ext = [t for t in plan_of(images).targets if t.family == "ext"]
    assert len(ext) == len({t.parent for t in ext}) >= 1
    assert all(t.platforms == ("linux/amd64", "linux/arm64") for t in ext)


@pytest.mark.parametrize("change, key, message", [
    ({"extends": {"family": "nope"}}, "extends.family", "unknown family 'nope'"),
    ({"pip": ["six>=1.16"]}, "pip[0]", "not pinned to one version"),
    ({"pip": ["six"]}, "pip[0]", "not pinned to one version"),
    ({"pip": ["six==1.*"]}, "pip[0]", "not pinned to one version"),
    ({"pip": ["nvidia-cudnn-cu12==9.1.0.70"]}, "pip[0]", "second copy"),
    ({"pip": ["nvidia-cublas==13.1.0.3"]}, "pip[0]", "is a CUDA 13 wheel"),   # no -cuXX to tell
    ({"pip": ["nvidia-cudnn-cu11==8.9.2.26"]}, "pip[0]", "would replace nvidia-cudnn-cu11==8.6.0.163"),
    ({"pip": ["paddlepaddle-gpu==2.6.1"]}, "pip[0]", "would replace"),
    ({"extends": {"family": "paddle", "cuda": ["12.4"]}}, "extends", "to no image"),
    ({"extends": {"family": "paddle", "gpu": ["x"]}}, "extends.gpu", "unknown axis"),
    ({"cmd": ["jupyter", "lab", "--allow-root"]}, "cmd[2]", "as root or without authentication"),
    ({"cmd": ["jupyter", "lab", "--ServerApp.token="]}, "cmd[2]", "without authentication"),
    ({"env": {"JUPYTER_TOKEN": ""}}, "env.JUPYTER_TOKEN", "turns authentication off"),
    # a PATH that drops the venv: python3 would be the OS's, without the image's packages
    ({"env": {"PATH": "/opt/tools/bin:/usr/bin:/bin"}}, "env.PATH", "leaves out /opt/venv/bin"),
    ({"files": {"missing.py": "/etc/x.py"}}, "files.missing.py", "is not a file"),
    ({"files": {"../up.py": "/etc/x.py"}}, "files.../up.py", "not a valid relative path"),
    ({"ports": [70000]}, "ports[0]", "not a port"),
    ({"framework": "paddle"}, "framework", "not a key of an extension family"),
    ({"tag": "{framework_version}-{nope}"}, "tag", "unknown placeholder {nope}"),
    ({"pip": ["six==1.16.0", "Six==1.16.0"]}, "pip[1]",
     "six is pinned twice: 'six==1.16.0' (pip[0]) and 'Six==1.16.0'"),
    ({"pip": [], "apt": []}, "(top)", "adds something"),
])
def test_bad_extensions_name_the_file_and_key(tmp_path: Path, change: dict[str, Any], key: str,
                                              message: str) -> None:
    images = matrix(tmp_path, {**EXT, **change})
    with pytest.raises(SpecError) as info:
        plan_of(images)
    assert info.value.file.endswith("ext.yaml"), info.value
    assert info.value.key == key and message in info.value.reason, info.value


@pytest.mark.parametrize("line, reason, hint", [
    ("accelerate==0.34.2 ; python_version >= '3.9'", "has an environment marker",
     "drop the marker: accelerate==0.34.2"),
    ("mypkg @ https://example.com/w/mypkg-1.0-py3-none-any.whl", "names a file by URL",
     "pin mypkg==1.0"),
    ("mypkg @ git+https://example.com/mypkg.git@v1", "names a file by URL", "pin mypkg==VERSION"),
    ("einops===0.8.1", "uses ===", "pin it with ==: einops==0.8.1"),
    ("numpy==1.26.*", "every 1.26 release", "numpy==1.26.N"),
    ("scipy~=1.14.1", "not pinned to one version", "e.g. scipy==1.14.1"),
    ("uvicorn[standard]>=0.30", "not pinned to one version", "e.g. uvicorn[standard]==0.30"),
    ("six", "not pinned to one version", "six==VERSION (`pip index versions six`"),
])
def test_a_requirement_that_is_not_one_version_says_why_and_what_to_write(
        tmp_path: Path, line: str, reason: str, hint: str) -> None:
    """Each way a line misses an exact pin gets its own reason: a hint that repeated the
    pin already written (a marker's line) or offered a series as a version sent teams round."""
    images = matrix(tmp_path, {**EXT, "pip": [line]})
    with pytest.raises(SpecError) as info:
        plan_of(images)
    assert info.value.key == "pip[0]" and reason in info.value.reason, info.value
    assert hint in (info.value.hint or ""), info.value


def test_a_placeholder_the_parent_cannot_fill_is_named(tmp_path: Path) -> None:
    images = matrix(tmp_path, {**EXT, "extends": {"family": "cuda", "cuda": ["11.8"]},
                               "tag": "{framework_version}"})
    with pytest.raises(SpecError, match="{framework_version} has no value"):
        plan_of(images)


def test_extensions_that_extend_each_other_are_refused(tmp_path: Path) -> None:
    images = matrix(tmp_path, {**EXT, "extends": {"family": "ext2"}})
    (images / "ext2.yaml").write_text(yaml.safe_dump({**EXT, "family": "ext2", "repository": "e2",
                                                      "extends": {"family": "ext"}}))
    with pytest.raises(SpecError, match="extend each other"):
        plan_of(images)


def test_a_file_of_files_that_is_elsewhere_under_the_folder_is_named(tmp_path: Path) -> None:
    images = matrix(tmp_path, {**EXT, "files": {"run.sh": "/usr/local/bin/run.sh",
                                                "gone.toml": "/etc/gone.toml"}})
    (images / "scripts").mkdir()
    (images / "scripts" / "run.sh").write_text("#!/bin/sh\n")
    with pytest.raises(SpecError) as info:
        plan_of(images)
    hints = {p.key: p.hint for p in getattr(info.value, "problems", (info.value,))}
    assert hints["files.run.sh"] == f"did you mean 'scripts/run.sh'? (paths are read from {images}/)"
    assert hints["files.gone.toml"].startswith("paths are read from the family file's folder")
