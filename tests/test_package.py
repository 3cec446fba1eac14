"""imgkit as users install it: the sdist and the wheel built with `python -m build` and
checked with `twine check`, the wheel installed into a fresh virtualenv, and the CLI run from
there, outside the checkout: templates, compat data, the probe and the image helpers must
all be inside the wheel, and the pipelines it writes install exactly this distribution."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from imgkit.shipped import DISTRIBUTION

from .helpers.validators import check_jsonschema

ROOT = Path(__file__).resolve().parent.parent


def run(*command: str | Path, cwd: Path | None = None) -> str:
    result = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, f"{command}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the dist folder, the fresh virtualenv's bin folder)."""
    work = tmp_path_factory.mktemp("package")
    source = work / "source"                 # a clean copy: no build/ or egg-info of ours
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "__pycache__", ".hypothesis", "out"))
    run(sys.executable, "-m", "build", "--outdir", work / "dist", source)
    dists = sorted((work / "dist").iterdir())
    run(sys.executable, "-m", "twine", "check", "--strict", *dists)
    # the venv gets the wheel and its dependencies from this interpreter's pip (`--python`),
    # without bytecode: its own copy of pip (ensurepip) and compiling every dependency were
    # three quarters of this module's time, and neither is what the tests look at
    venv.create(work / "venv", with_pip=False)
    bin_dir = work / "venv" / "bin"
    wheel = next(d for d in dists if d.suffix == ".whl")
    run(sys.executable, "-m", "pip", "--python", bin_dir / "python", "install", "-q", "--no-compile",
        "--disable-pip-version-check", wheel)
    return work / "dist", bin_dir


def test_the_distribution_is_named_as_on_pypi_and_both_artifacts_are_built(
        installed: tuple[Path, Path]) -> None:
    dist, bin_dir = installed
    names = sorted(p.name for p in dist.iterdir())
    assert [n.split("-")[0] for n in names] == ["imgkit_gpu", "imgkit_gpu"], names
    assert {Path(n).suffix for n in names} == {".whl", ".gz"}, names
    version = run(bin_dir / "python", "-c",
                  f"import importlib.metadata as m; print(m.version({DISTRIBUTION!r}))").strip()
    assert version and all(f"imgkit_gpu-{version}" in n for n in names)


def test_the_installed_cli_renders_the_bundled_matrix_with_its_own_templates(
        installed: tuple[Path, Path], tmp_path: Path) -> None:
    _, bin_dir = installed
    project = tmp_path / "project"                # a matrix folder and nothing else
    shutil.copytree(ROOT / "images", project / "images")
    run(bin_dir / "imgkit", "render", "--cuda", "11.8", "--out", tmp_path / "out", cwd=project)
    run(sys.executable, "-m", "imgkit", "render", "--cuda", "11.8", "--images", ROOT / "images",
        "--out", tmp_path / "checkout")
    ours = sorted(p.relative_to(tmp_path / "checkout") for p in (tmp_path / "checkout").rglob("*")
                  if p.is_file())
    theirs = sorted(p.relative_to(tmp_path / "out") for p in (tmp_path / "out").rglob("*")
                    if p.is_file())
    assert ours == theirs and len(ours) > 10
    for path in ours:                             # byte for byte, helpers and probe included
        assert (tmp_path / "out" / path).read_bytes() == (tmp_path / "checkout" / path).read_bytes()
    helper = next(p for p in theirs if p.name == "imgkit-build-env")
    assert (tmp_path / "out" / helper).stat().st_mode & 0o111


def test_the_installed_probe_runs_and_the_pipeline_installs_this_very_distribution(
        installed: tuple[Path, Path], tmp_path: Path) -> None:
    dist, bin_dir = installed
    facts = json.loads(run(bin_dir / "imgkit", "probe", "--no-gpu", cwd=tmp_path))
    assert facts["probe_version"]
    shutil.copytree(ROOT / "images", tmp_path / "images")
    run(bin_dir / "imgkit", "ci", "gitlab", "--registry", "registry.example.com/ml", "--cuda", "11.8",
        "--out", ".gitlab-ci.yml", cwd=tmp_path)
    version = next(dist.glob("*.whl")).name.split("-")[1]
    assert f"python3 -m pip install {DISTRIBUTION}=={version}" in (tmp_path / ".gitlab-ci.yml").read_text()


def test_the_release_workflow_is_valid_and_publishes_what_it_built_by_trusted_publishing() -> None:
    import yaml
    path = ROOT / ".github" / "workflows" / "release.yml"
    result = check_jsonschema("vendor.github-workflows", path)
    assert result.returncode == 0, result.output
    workflow = yaml.safe_load(path.read_text())
    publish = workflow["jobs"]["publish"]
    assert publish["permissions"] == {"id-token": "write"} and publish["needs"] == "build"
    assert any(str(s.get("uses", "")).startswith("pypa/gh-action-pypi-publish") for s in publish["steps"])
    assert not any("password" in (s.get("with") or {}) for s in publish["steps"])   # no stored token
    build_steps = " ".join(str(s.get("run", "")) for s in workflow["jobs"]["build"]["steps"])
    assert "python -m build" in build_steps and "twine check --strict" in build_steps
    assert f"pypi.org/p/{DISTRIBUTION}" in publish["environment"]["url"]
