"""The command line: the only module that imports typer. Thin: parse, call one core
function, map ImgkitError to its exit code."""
from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

import typer
from rich.console import Console

from . import workflows
from .errors import EXIT_INTERRUPTED, ImgkitError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Build and verify GPU container images from a declared matrix.")
err = Console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])

IMAGES = typer.Option(Path("images"), "--images", help="Directory of matrix files (*.yaml).")
TEMPLATES = typer.Option(None, "--templates",
                         help="Template directory [default: templates/ beside --images].")
NAMESPACE = typer.Option("imgkit", "--namespace", help="Repository prefix of shared layers.")
CUDA = typer.Option(None, "--cuda", help="Only images of this CUDA version, e.g. 11.8.")
ONLY = typer.Option(None, "--only", help="Only tags matching this glob (plus their parents).")


def reports_errors(func: F) -> F:
    """Turn ImgkitError into a one-paragraph message and its exit code; never a traceback."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ImgkitError as exc:
            err.print(f"[bold red]error:[/] {exc.message}", highlight=False, markup=True)
            if exc.hint:
                err.print(f"  hint: {exc.hint}", highlight=False)
            raise typer.Exit(exc.exit_code)
        except KeyboardInterrupt:
            err.print("interrupted: stopped cleanly")
            raise typer.Exit(EXIT_INTERRUPTED)
    return wrapper  # type: ignore[return-value]


@app.command()
@reports_errors
def build(
    cuda: Optional[str] = CUDA,
    only: Optional[str] = ONLY,
    jobs: int = typer.Option(2, "--jobs", "-j", min=1, help="Images built at once."),
    force: bool = typer.Option(False, "--force", help="Rebuild even what is up to date."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what would be built; build nothing."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Stream full build logs."),
    images: Path = IMAGES,
    templates: Optional[Path] = TEMPLATES,
    namespace: str = NAMESPACE,
    ca_bundle: Optional[str] = typer.Option(
        None, "--ca-bundle", envvar="IMGKIT_CA_BUNDLE",
        help="Extra CA bundle trusted by pip during builds only [default: the host's "
             "/etc/ssl/certs/ca-certificates.crt when present; 'none' to disable]."),
    index_url: Optional[str] = typer.Option(None, "--index-url", envvar="IMGKIT_INDEX_URL",
                                            help="Package index for pip during builds."),
    base_source: str = typer.Option("auto", "--base-source",
                                    help="Base OS image: auto, pull or debootstrap."),
    mirror: Optional[str] = typer.Option(None, "--mirror", envvar="IMGKIT_MIRROR",
                                         help="Debian mirror for debootstrap [default: the host's]."),
) -> None:
    """Render and build the matrix (or a slice of it); skip what is up to date."""
    code = workflows.build(cuda=cuda, only=only, jobs=jobs, force=force, dry_run=dry_run,
                           verbose=verbose, images=images, templates=templates,
                           namespace=namespace, ca_bundle=ca_bundle, index_url=index_url,
                           base_source=base_source, mirror=mirror)
    raise typer.Exit(code)


@app.command()
@reports_errors
def render(
    out: Path = typer.Option(..., "--out", help="Directory to write one build context per image."),
    cuda: Optional[str] = CUDA,
    only: Optional[str] = ONLY,
    images: Path = IMAGES,
    templates: Optional[Path] = TEMPLATES,
    namespace: str = NAMESPACE,
) -> None:
    """Write each image's self-contained build context (Dockerfile and files)."""
    workflows.render(out=out, cuda=cuda, only=only, images=images, templates=templates,
                     namespace=namespace)


@app.command("list")
@reports_errors
def list_(
    cuda: Optional[str] = CUDA,
    only: Optional[str] = ONLY,
    images: Path = IMAGES,
    namespace: str = NAMESPACE,
) -> None:
    """Validate the matrix and list its images, parents first."""
    workflows.list_plan(cuda=cuda, only=only, images=images, namespace=namespace)


def main() -> None:  # pragma: no cover - console entry
    sys.exit(app())
