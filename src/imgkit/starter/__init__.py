"""`imgkit init`: a starter project that lists, renders and builds as written: the project
file, the family files' JSON Schema, and one commented family of each kind (a small CUDA
stack, a framework, an extension), each with the line that makes editors check its keys."""
from __future__ import annotations

import string
from pathlib import Path

from ..errors import UsageError
from ..matrix.fields import REPOSITORY_PATTERN, prefix_hint
from ..matrix.schema import SCHEMA_FILE, SCHEMA_LINE, schema_text
from ..outputs import output_folder

FILES = Path(__file__).parent / "files"
STARTER = ("imgkit.toml", "images/cuda.yaml", "images/pytorch.yaml", "images/pytorch-extras.yaml")


def starter_files(namespace: str, registry: str | None = None) -> dict[str, str]:
    """Path in the project -> text; `registry`: where its pipeline promotes (else a comment
    that says how to set it)."""
    values = {"namespace": namespace, "schema_line": SCHEMA_LINE, "registry_line":
              f'registry = "{registry}"   # where `imgkit ci` pipelines promote verified images'
              if registry else '# registry = "registry.example.com/ml"   # where `imgkit ci` '
              "pipelines promote verified images"}
    files = {name: string.Template((FILES / name).read_text()).substitute(values)
             for name in STARTER}
    files[SCHEMA_FILE] = schema_text()
    return files


def init_project(folder: Path, namespace: str, registry: str | None = None) -> list[Path]:
    """Write the starter project into `folder` (made if need be); nothing is overwritten."""
    if not REPOSITORY_PATTERN.match(namespace):
        raise UsageError(f"--namespace {namespace!r} is not a valid repository prefix",
                         hint=prefix_hint(namespace))
    files = starter_files(namespace, registry)
    output_folder(folder, "imgkit init")
    there = [name for name in files if (folder / name).exists()]
    if there:
        raise UsageError(f"{folder} already has {', '.join(there)}: nothing was written",
                         hint="run imgkit init in a new or empty folder")
    written = []
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written
