"""BuildKit as the tests drive it: the engine and Docker config it runs on, a two-image
project, and a build's JSON summary."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import leftovers
from .images import ROOT

SOCKET = os.environ.get("IMGKIT_BUILDKIT_HOST")          # default: the host's engine


CONFIG = os.environ.get("IMGKIT_BUILDKIT_CONFIG")


TWO_CUDAS = """\
family: mini
description: two small CUDA images on one shared python parent
cuda_libs: [cudart]
axes:
  cuda: ["11.8", "12.4"]
"""


@dataclass(frozen=True)
class BuildKit:
    env: dict[str, str]          # DOCKER_HOST and DOCKER_CONFIG of the BuildKit engine
    namespace: str

    def run(self, *args: str, check: bool = True, **kw) -> subprocess.CompletedProcess[str]:
        kw.setdefault("text", True)
        done = subprocess.run(list(args), env=self.env, capture_output=True, **kw)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(args)}: {done.returncode}\n{done.stdout}\n{done.stderr}")
        return done

    def imgkit(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(sys.executable, "-m", "imgkit", *args, check=check)

    def inspect(self, ref: str) -> dict | None:
        done = self.run("docker", "image", "inspect", ref, check=False)
        return json.loads(done.stdout)[0] if done.returncode == 0 else None

    def dangling(self) -> set[str]:
        """Untagged images of this session's namespaces (their labels name one)."""
        ids = self.run("docker", "images", "-q", "--no-trunc", "-f", "dangling=true").stdout.split()
        if not ids:
            return set()
        found = self.run("docker", "image", "inspect", "--format", "{{.Id}} {{json .Config.Labels}}",
                         *ids, check=False).stdout.splitlines()
        return {line.split(" ", 1)[0] for line in found if leftovers.ours(line)}

    def containers(self) -> set[str]:
        """Containers of this session's namespaces (their image or labels name one)."""
        found = self.run("docker", "ps", "-a", "--no-trunc", "--format",
                         "{{.ID}}\t{{.Image}}\t{{.Labels}}").stdout.splitlines()
        return {line.split("\t", 1)[0] for line in found if leftovers.ours(line)}

    def own(self, suffix: str) -> str:
        """A namespace of the test's own, on the session's Debian base (tagged, as the
        session's namespace has it): its builds make no base of their own (debootstrap), and
        BuildKit's cache answers for the python layer's steps another test ran on that base."""
        ns = f"{self.namespace}-{suffix}"
        self.run("docker", "tag", f"{self.namespace}/debian:bookworm", f"{ns}/debian:bookworm")
        return ns


def project(tmp_path: Path, family: str = TWO_CUDAS) -> Path:
    shutil.copytree(ROOT / "templates", tmp_path / "templates")
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "mini.yaml").write_text(family)
    return tmp_path


def layers(kit: BuildKit, ref: str) -> list[str]:
    info = kit.inspect(ref)
    assert info is not None, ref
    return list(info["RootFS"]["Layers"])


def build_json(kit: BuildKit, proj: Path, ns: str, out: Path, *extra: str,
               code: int = 0) -> dict[str, str]:
    done = kit.imgkit("build", "--images", str(proj / "images"), "--templates",
                      str(proj / "templates"), "--namespace", ns, "--json", str(out), *extra,
                      check=False)
    assert done.returncode == code, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    return {row["tag"]: row["status"] for row in json.loads(out.read_text())["images"]}
