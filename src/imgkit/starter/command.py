"""`imgkit init FOLDER`: write the starter project (and, on request, its CI pipeline) and
say what to run next."""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import ImgkitError, UsageError
from ..export.pipeline_place import PIPELINES, where_read
from ..options import CiSettings
from ..project import selection_from
from . import init_project


def init(folder: Path, given_namespace: str | None, *, ci: str | None = None,
         registry: str | None = None) -> None:
    pipeline = _pipeline_file(folder, ci, registry)            # checked before any file is written
    # as every command takes it: the option, IMGKIT_NAMESPACE, an enclosing project's, imgkit
    namespace = selection_from(namespace=given_namespace).namespace
    # what existed stays, whatever happens
    placed = Path(os.path.normpath(folder / pipeline)) if pipeline else None
    there = {p for p in (folder, *folder.parents, folder / "images",
                         *(placed.parents if placed else ())) if p.exists()}
    # family files already in images/ are read with the starter's from now on
    held = sorted(p.name for p in (folder / "images").glob("*.y*ml")) if folder.is_dir() else []
    try:
        written = init_project(folder, namespace, registry)
    except UsageError as exc:
        if ci is None or not (folder / "imgkit.toml").exists():
            raise
        raise UsageError(exc.message, hint=f"this folder is an imgkit project already: `imgkit "
                         f"ci {ci} --registry {registry}` in it writes its pipeline") from None
    if ci is not None and registry is not None and pipeline is not None:
        try:
            _write_pipeline(folder, ci, registry, pipeline)
        except ImgkitError:
            _remove(written, there)           # nothing half-made: the project goes too
            raise
        written.append(placed or folder / pipeline)
    print(f"imgkit project in {folder}:")
    for path in written:
        print(f"  {path}")
    if held:
        print(f"  (images/ held {', '.join(held)} already: `imgkit list` reads "
              f"{'them' if len(held) > 1 else 'it'} with the starter's families)")
    steps = [("imgkit list", "the images, parents first"),
             (f"imgkit build --only '{namespace}/cuda:12.8-cudart-*'", "the small CUDA image, in minutes"),
             (f"imgkit verify {namespace}/cuda:12.8-cudart-py3.11-bookworm --gpus none",
              "what can be proven without a GPU")]
    width = max(len(command) for command, _ in steps)
    print("\nnext" + ("" if folder.resolve() == Path.cwd().resolve() else f", in {folder}") + ":")
    for command, why in steps:
        print(f"  {command.ljust(width)}  # {why}")


def _remove(written: list[Path], there: set[Path]) -> None:
    """The files init wrote, and the folders it made for them (none that existed before)."""
    for path in written:
        path.unlink(missing_ok=True)
    made = {parent for path in written for parent in path.parents if parent not in there}
    for folder in sorted(made, key=lambda p: len(p.parts), reverse=True):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def _pipeline_file(folder: Path, ci: str | None, registry: str | None) -> Path | None:
    if ci is None and registry is None:
        return None
    if ci is not None and ci not in PIPELINES:
        raise UsageError(f"--ci {ci!r}: imgkit writes pipelines for {' and '.join(PIPELINES)}",
                         hint="on another CI, run the staging commands its jobs run (docs/"
                              "publishing.md, \"Staging\")")
    if ci is None or registry is None:
        missing = "--registry REGISTRY[/NAMESPACE]" if ci else "--ci github|gitlab"
        raise UsageError(f"--ci and --registry go together: add {missing}",
                         hint="e.g. imgkit init --ci github --registry registry.example.com/ml")
    pipeline = where_read(folder, ci)
    placed = Path(os.path.normpath(folder / pipeline))     # through a folder not made yet
    if placed.exists():
        raise UsageError(f"{placed} is there already: nothing was written",
                         hint="run imgkit init in a new or empty folder, or write the pipeline "
                              "with `imgkit ci` into a file of another name")
    return pipeline


def _write_pipeline(folder: Path, ci: str, registry: str, pipeline: Path) -> None:
    """As `imgkit ci` run in the new project writes it (the command in its header too)."""
    from ..export.command import ci as write
    here = Path.cwd()
    os.chdir(folder)
    try:
        write(selection_from(), platform=ci, registry=registry, staging=None,
              gpu_runner=CiSettings.gpu_runner, cpu_runner=CiSettings.cpu_runner,
              install=CiSettings.install, verify_gpus=CiSettings.verify_gpus, out=pipeline)
    finally:
        os.chdir(here)
