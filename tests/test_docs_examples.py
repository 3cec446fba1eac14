"""Every YAML example in docs/ and the README is a file a team could copy as it is: a
family example, written beside the bundled matrix (in place of the bundled family of the
same name), lists and renders with no engine; one on its own base (`base:`) is a valid
family, and the rest of the matrix still lists around it with no engine; a check-file
example loads as a check file; the compat overlay plans the family it is for. (The engine
tests build the user/run example: test_docker_custom.py.)"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from imgkit.matrix.checkfile import load_checks

from .helpers.background import gitlab_ci_local
from .helpers.docs import examples, families
from .helpers.images import ROOT

CHECK_KEYS = {"schemaVersion", "commandTests", "fileExistenceTests", "fileContentTests",
              "metadataTest", "serviceTests", "gpuTests", "globalEnvVars"}
NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}






def imgkit(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    import os
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMGKIT_")}
    return subprocess.run([sys.executable, "-m", "imgkit", *args], capture_output=True, text=True,
                          cwd=cwd, env={**env, **NO_ENGINE, "IMGKIT_CACHE_DIR": str(cwd / "cache")},
                          timeout=300)


def beside_the_bundled_matrix(tmp_path: Path, text: str, family: str) -> Path:
    """A copy of the bundled matrix with the example in the file of its family's name."""
    images = tmp_path / "images"
    shutil.copytree(ROOT / "images", images, ignore=shutil.ignore_patterns("locks"))
    for path in images.glob("*.yaml"):
        document = yaml.safe_load(path.read_text())
        if isinstance(document, dict) and document.get("family") == family:
            path.unlink()
    (images / f"{family}.yaml").write_text(text)
    return images


def test_the_pages_hold_family_examples_of_every_kind() -> None:
    kinds = {("extends" in d, "framework" in d, "base" in d) for _, _, d in families()}
    assert (True, False, False) in kinds and (False, True, False) in kinds     # an extension, a framework
    assert any(base for _, _, base in kinds)                                  # on a team's base
    assert any("user" in d and "run" in d for _, _, d in families())         # the user/run example


@pytest.mark.parametrize("where, text, document",
                         [pytest.param(*f, id=f[0]) for f in families() if "base" not in f[2]])
def test_a_family_example_lists_and_renders_as_written(tmp_path: Path, where: str, text: str,
                                                       document: dict[str, Any]) -> None:
    images = beside_the_bundled_matrix(tmp_path, text, document["family"])
    listed = imgkit(tmp_path, "list", "--images", str(images), "--json", str(tmp_path / "plan.json"))
    assert listed.returncode == 0, f"{where}: {listed.stderr}"
    import json
    mine = [i["tag"] for i in json.loads((tmp_path / "plan.json").read_text())["images"]
            if i["family"] == document["family"]]
    assert mine, f"{where}: no image of the example in {tmp_path / 'plan.json'}"
    rendered = imgkit(tmp_path, "render", "--images", str(images), "--only", mine[0],
                      "--out", str(tmp_path / "contexts"))
    assert rendered.returncode == 0, f"{where}: {rendered.stderr}"
    assert list((tmp_path / "contexts").glob("*/Dockerfile")), where


@pytest.mark.parametrize("where, text, document",
                         [pytest.param(*f, id=f[0]) for f in families() if "base" in f[2]])
def test_a_family_on_its_own_base_is_valid_and_the_rest_lists_without_the_engine(
        tmp_path: Path, where: str, text: str, document: dict[str, Any]) -> None:
    from imgkit.matrix.spec import load_spec
    images = beside_the_bundled_matrix(tmp_path, text, document["family"])
    assert any(f.name == document["family"] for f in load_spec(images).families), where
    listed = imgkit(tmp_path, "list", "--images", str(images), "--only", "paddle:*")
    assert listed.returncode == 0, f"{where}: {listed.stderr}"
    selected = imgkit(tmp_path, "list", "--images", str(images))       # it, with no engine
    assert selected.returncode == 3 and "engine" in selected.stderr, f"{where}: {selected.stderr}"


@pytest.mark.parametrize("where, text", [
    pytest.param(w, t, id=w) for w, t, d in examples()
    if isinstance(d, dict) and CHECK_KEYS & set(d)])
def test_a_check_file_example_loads_as_a_check_file(tmp_path: Path, where: str, text: str) -> None:
    path = tmp_path / "checks.yaml"
    path.write_text(text if "schemaVersion" in text else f'schemaVersion: "2.0.0"\n{text}')
    assert load_checks(path).count, where


def test_the_compat_overlay_example_plans_the_family_it_is_for(tmp_path: Path) -> None:
    [(where, text)] = [(w, t) for w, t, _ in examples()
                       if t.startswith("# images/compat.yaml") and "frameworks:" in t]
    images = beside_the_bundled_matrix(tmp_path, (
        'family: paddle3\nrepository: paddle\nframework: paddle\n'
        'tag: "{framework_version}-gpu-cuda{cuda}-cudnn{cudnn_major}"\n'
        'axes:\n  framework_version: ["3.0.0"]\n  cuda: ["12.6"]\n  cudnn: ["9"]\n'
        '  nccl: [default]\n'), "paddle3")
    (images / "compat.yaml").write_text(text)
    listed = imgkit(tmp_path, "list", "--images", str(images), "--only", "paddle:3.0.0-*")
    assert listed.returncode == 0, f"{where}: {listed.stderr}"
    assert "paddle:3.0.0-gpu-cuda12.6-cudnn9" in listed.stdout


def test_the_venv_overlay_example_is_what_the_python_layer_installs(tmp_path: Path) -> None:
    [(where, text, document)] = [(w, t, d) for w, t, d in examples()
                                 if t.startswith("# images/compat.yaml") and "venv:" in t]
    images = tmp_path / "images"
    shutil.copytree(ROOT / "images", images, ignore=shutil.ignore_patterns("locks"))
    (images / "compat.yaml").write_text(text)
    rendered = imgkit(tmp_path, "render", "--images", str(images), "--only", "*/python:3.11-*",
                      "--out", str(tmp_path / "contexts"))
    assert rendered.returncode == 0, f"{where}: {rendered.stderr}"
    [tools] = (tmp_path / "contexts").glob("*python*/imgkit/venv-tools.txt")
    pip = document["venv"]["3.10"]["pip"]
    assert f"pip=={pip['version']} --hash=sha256:{pip['sha256']}" in tools.read_text(), where


def scan_page() -> list[Any]:
    """The YAML examples of docs/vulnerabilities.md: a waivers file and two CI jobs."""
    return [d for w, _, d in examples() if w.startswith("docs/vulnerabilities.md")]


def tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    assert found, f"{name} is a test dependency (pip install -e '.[test]')"
    return found


def test_the_waivers_examples_are_waivers_files(tmp_path: Path) -> None:
    from imgkit.matrix.waivers import load_waivers
    waivers = [d for d in scan_page() if "waivers" in d]
    packages = set()
    for example in waivers:
        (tmp_path / "vulnerabilities.yaml").write_text(yaml.safe_dump(example))
        packages |= {w.package for w in load_waivers(tmp_path / "vulnerabilities.yaml")}
    assert {"py", "setuptools"} <= packages   # py's unfixed advisory; pip's vendored setuptools


def test_the_github_scan_job_passes_zizmor_and_shellcheck(tmp_path: Path) -> None:
    jobs = next(d for d in scan_page() if "runs-on" in d.get("scan", {}))
    workflow = tmp_path / "scan.yml"
    workflow.write_text(yaml.safe_dump({"on": "push", "permissions": {}, "jobs": jobs}))
    done = subprocess.run([tool("zizmor"), "--offline", "--min-severity", "medium", str(workflow)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    for step in jobs["scan"]["steps"]:
        if "run" in step:
            (tmp_path / "s.sh").write_text(step["run"])
            checked = subprocess.run([tool("shellcheck"), "--shell", "bash", str(tmp_path / "s.sh")],
                                     capture_output=True, text=True, timeout=60)
            assert checked.returncode == 0, checked.stdout
    uses = [s["uses"] for s in jobs["scan"]["steps"] if "uses" in s]
    from imgkit.export.actions import pins
    assert all(u.split("@")[1] == pins()[u.split("@")[0]]["commit"] for u in uses), uses


def test_the_gitlab_scan_job_is_read_as_gitlab_reads_it(tmp_path: Path) -> None:
    runner = gitlab_ci_local()
    job = next(d for d in scan_page() if "stage" in d.get("scan", {}))
    (tmp_path / ".gitlab-ci.yml").write_text(yaml.safe_dump(job))
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    done = subprocess.run([runner, "--list"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "scan" in done.stdout, done.stdout + done.stderr
    (tmp_path / "s.sh").write_text("\n".join(job["scan"]["script"]))
    checked = subprocess.run([tool("shellcheck"), "--shell", "bash", str(tmp_path / "s.sh")],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout
