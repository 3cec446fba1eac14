"""SLSA provenance v1 for the images imgkit built (signed with cosign as
`slsaprovenance1`): what they were built from (the matrix files and templates, by digest,
the git commit of that checkout, the input hash the image carries) and by what (imgkit's
version, the docker-py builder). Made only when the image's input-hash label equals what
the checkout renders now: otherwise the files here are not what it was built from, and
no provenance is claimed."""
from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..shipped import version

BUILD_TYPE = "https://imgkit.dev/buildtypes/matrix/v1"
BUILDER = "https://imgkit.dev/builders/docker-py"


@dataclass(frozen=True)
class Source:
    """What a selection's images are built from, read once per publish."""
    matrix: Path
    templates: Path
    files: tuple[tuple[str, str], ...]    # (path as named, sha256) of every input file
    git: tuple[str, str, bool] | None     # (remote URL or "", commit, dirty)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _git(folder: Path) -> tuple[str, str, bool] | None:
    def run(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True,
                                  text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None
    commit = run("rev-parse", "HEAD")
    if not commit:
        return None
    dirty = bool(run("status", "--porcelain", "--", ".", str(folder)))
    return run("config", "--get", "remote.origin.url") or "", commit, dirty


def read_source(matrix: Path, templates: Path) -> Source:
    files = [(f"{matrix.name}/{p.relative_to(matrix)}", _digest(p))
             for p in sorted(matrix.rglob("*")) if p.is_file() and not p.name.startswith(".")]
    files += [(f"{templates.name}/{p.relative_to(templates)}", _digest(p))
              for p in sorted(templates.rglob("*")) if p.is_file()]
    return Source(matrix=matrix, templates=templates, files=tuple(files), git=_git(matrix))


def predicate(source: Source, tag: str, image_id: str, input_hash: str,
              parent: str | None, base: str | None = None) -> bytes:
    """The SLSA v1 provenance predicate of image `tag` (id `image_id`); `base`: the team's
    own base image it stands on, by digest (REPO@sha256:...)."""
    dependencies: list[dict[str, Any]] = [
        {"name": name, "digest": {"sha256": digest}} for name, digest in source.files]
    if base and "@sha256:" in base:
        repository, digest = base.split("@sha256:", 1)
        dependencies.append({"uri": f"oci://{repository}", "name": "base image",
                             "digest": {"sha256": digest}})
    if source.git is not None:
        remote, commit, dirty = source.git
        dependencies.insert(0, {"uri": f"git+{remote}" if remote else "git+file://" + str(
            source.matrix.resolve()), "digest": {"gitCommit": commit},
            "annotations": {"dirty": dirty}})
    document = {
        "buildDefinition": {
            "buildType": BUILD_TYPE,
            "externalParameters": {"image": tag, "matrix": source.matrix.name,
                                   "templates": source.templates.name},
            "internalParameters": {"input_hash": input_hash, "parent": parent or ""},
            "resolvedDependencies": dependencies,
        },
        "runDetails": {
            "builder": {"id": BUILDER, "version": {"imgkit": version()}},
            "metadata": {"invocationId": f"{tag}@{image_id}"},
            "byproducts": [{"name": "image config", "digest": {"sha256": image_id.split(":", 1)[1]}}],
        },
    }
    return json.dumps(document, sort_keys=True).encode()
