"""The smallest real images the engine tests build: the one-family mini project, an image made
from a few files, and the probe containers a test must not leave behind."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from . import leftovers

ROOT = Path(__file__).resolve().parents[2]


MINI_FAMILY = """\
family: mini
description: smallest real CUDA image (cudart only) for tests
cuda_libs: [cudart]
axes:
  cuda: ["11.8"]
"""


def mini_project(root: Path) -> Path:
    """`root` made a project directory: the bundled templates and a one-image matrix."""
    shutil.copytree(ROOT / "templates", root / "templates")
    (root / "images").mkdir()
    (root / "images" / "mini.yaml").write_text(MINI_FAMILY)
    return root


def tar_of(files: dict[str, bytes]) -> bytes:
    """A tar holding `files` (path -> bytes), as the engine takes a context or saves an image."""
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, data in files.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def build_from_files(engine, ref: str, files: dict[str, bytes]) -> str:
    """Build `ref` from an in-memory context (a Dockerfile and the files it copies)."""
    import io
    engine.client.images.build(fileobj=io.BytesIO(tar_of(files)), custom_context=True, tag=ref,
                               rm=True, forcerm=True)
    return ref


def no_verify_containers(engine) -> list[str]:
    """The verify containers of this session's images still in the engine."""
    return sorted(leftovers.our_containers(engine, label="org.imgkit.role=verify"))


@dataclass(frozen=True)
class MiniStack:
    python: str   # Debian + python3 + a venv, no CUDA: the start of every layout image
    mini: str     # + the CUDA 11.8 runtime wheel in the venv, as imgkit builds it
