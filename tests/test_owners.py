"""Who installed a library (the probe's owners module, pure file reading): each layout as
the tools that make it leave it on disk."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from imgkit.probe import owners


@pytest.fixture(autouse=True)
def fresh_indexes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(owners, "_SITES", {})
    monkeypatch.setattr(owners, "_DPKG", {})


def touch(path: Path, data: str = "ELF") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data)
    return path


@pytest.mark.parametrize("site", ["lib/python3.11/site-packages", "local/lib/python3.11/dist-packages"])
def test_a_wheel_in_any_site_or_dist_packages(tmp_path: Path, site: str) -> None:
    root = tmp_path / site
    lib = touch(root / "nvidia/cuda_runtime/lib/libcudart.so.11.0")
    touch(root / "nvidia_cuda_runtime_cu11-11.8.89.dist-info/RECORD",
          "nvidia/__init__.py,,\nnvidia/cuda_runtime/lib/libcudart.so.11.0,sha256=x,3\n")
    link = tmp_path / "links/libcudart.so.11.0"
    link.parent.mkdir()
    link.symlink_to(lib)
    found = owners.owner_of(str(link), "cudart")
    assert found == {"kind": "wheel", "name": "nvidia_cuda_runtime_cu11", "version": "11.8.89",
                     "component": True}


def test_a_framework_wheel_bundling_a_library_is_no_component(tmp_path: Path) -> None:
    root = tmp_path / "site-packages"
    lib = touch(root / "bundlefw.libs/libcudart-0f1e2d3c.so.11.0")
    touch(root / "bundlefw-1.0.dist-info/RECORD", "bundlefw.libs/libcudart-0f1e2d3c.so.11.0,,\n")
    found = owners.owner_of(str(lib), "cudart")
    assert found is not None and found["name"] == "bundlefw" and not found["component"]


def test_a_debian_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dpkg = tmp_path / "dpkg"
    touch(dpkg / "info/libcudart11.0:amd64.list",
          "/usr/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu/libcudart.so.11.8.89\n")
    touch(dpkg / "status", "Package: zlib1g\nStatus: install ok installed\nVersion: 1:1.2\n\n"
                           "Package: libcudart11.0\nStatus: install ok installed\n"
                           "Version: 11.8.89~11.8.0-5~deb12u1\n")
    monkeypatch.setattr(owners, "DPKG", str(dpkg))
    # usrmerge: the loader finds it under /lib, dpkg lists it under /usr/lib
    found = owners.owner_of("/lib/x86_64-linux-gnu/libcudart.so.11.8.89", "cudart")
    assert found == {"kind": "dpkg", "name": "libcudart11.0", "version": "11.8.89~11.8.0-5~deb12u1",
                     "component": True}


def test_a_conda_prefix(tmp_path: Path) -> None:
    prefix = tmp_path / "conda"
    lib = touch(prefix / "lib/libnccl.so.2.18.3")
    touch(prefix / "conda-meta/nccl-2.18.3.1-h6103f9b_1.json", json.dumps({
        "name": "nccl", "version": "2.18.3.1", "build": "h12f29b5_0_cuda11",
        "files": ["include/nccl.h", "lib/libnccl.so.2.18.3"]}))
    found = owners.owner_of(str(lib), "nccl")
    assert found is not None
    assert (found["kind"], found["name"], found["version"]) == ("conda", "nccl", "2.18.3.1")


def test_a_toolkit_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toolkit = tmp_path / "cuda-11.8"
    lib = touch(toolkit / "targets/x86_64-linux/lib/libcudart.so.11.8.89")
    touch(toolkit / "version.json", json.dumps({"cuda": {"version": "11.8.0"},
                                                "cuda_cudart": {"version": "11.8.89"}}))
    monkeypatch.setattr(owners, "TOOLKIT", re.compile("^(" + re.escape(str(toolkit)) + ")/"))
    found = owners.owner_of(str(lib), "cudart")
    assert found is not None and (found["kind"], found["version"]) == ("toolkit", "11.8.89")
    assert owners.owner_of(str(lib), "cudnn") is None  # the toolkit has no cuDNN


def test_unowned_files_have_no_owner(tmp_path: Path) -> None:
    assert owners.owner_of(str(touch(tmp_path / "libcudart.so.12")), "cudart") is None


@pytest.mark.parametrize("version,upstream", [
    ("11.8.89~11.8.0-5~deb12u1", "11.8.89"), ("1:2.15.5-1+cuda11.8", "2.15.5"),
    ("8.6.0.163-1+cuda11.8", "8.6.0.163"), ("11.8.89", "11.8.89")])
def test_upstream_version(version: str, upstream: str) -> None:
    assert owners.upstream(version) == upstream
