"""`imgkit init FOLDER`: write the starter project and say what to run next."""
from __future__ import annotations

from pathlib import Path

from ..project import selection_from
from . import init_project


def init(folder: Path, given_namespace: str | None) -> None:
    # as every command takes it: the option, IMGKIT_NAMESPACE, an enclosing project's, imgkit
    namespace = selection_from(namespace=given_namespace).namespace
    written = init_project(folder, namespace)
    print(f"imgkit project in {folder}:")
    for path in written:
        print(f"  {path}")
    steps = [("imgkit list", "the images, parents first"),
             (f"imgkit build --only '{namespace}/cuda:12.8-cudart-*'", "the small CUDA image, in minutes"),
             (f"imgkit verify {namespace}/cuda:12.8-cudart-py3.11-bookworm --gpus none",
              "what can be proven without a GPU")]
    width = max(len(command) for command, _ in steps)
    print("\nnext" + ("" if folder.resolve() == Path.cwd().resolve() else f", in {folder}") + ":")
    for command, why in steps:
        print(f"  {command.ljust(width)}  # {why}")
