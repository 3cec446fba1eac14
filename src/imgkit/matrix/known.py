"""What imgkit knows builds: every framework build with the CUDA, cuDNN, NCCL, Python and
platforms it needs, every CUDA release with its drivers and the cuDNN and NCCL pins it
offers, and the pip and setuptools each python's venv gets. The same tables two ways:
plain columns for `imgkit list --known` (the compat data as the project merges it),
Markdown for docs/known.md (the shipped data; `make docs` writes it and a test fails on
drift). Pure: the compat data comes in."""
from __future__ import annotations

from ..console import columns
from .compat import Compat, version_key

FRAMEWORK_HEADER = ("framework", "version", "CUDA", "cuDNN", "NCCL", "python", "platforms")
CUDA_HEADER = ("CUDA", "driver (toolkit)", "driver (minor-version compatibility)", "cuDNN",
               "NCCL", "platforms")
VENV_HEADER = ("python", "pip", "setuptools")


def framework_rows(data: Compat) -> list[tuple[str, ...]]:
    return [(name, build.version, build.cuda, build.cudnn, build.nccl, " ".join(build.python),
             " ".join(build.platforms))
            for name in sorted(data.frameworks)
            for build in sorted(data.frameworks[name].values(), key=lambda b: version_key(b.version))]


def cuda_rows(data: Compat) -> list[tuple[str, ...]]:
    return [(cuda, release.driver_toolkit or "?", release.driver_minor_compat,
             " ".join(release.cudnn), " ".join(release.nccl), " ".join(release.platforms))
            for cuda, release in sorted(data.cuda.items(), key=lambda item: version_key(item[0]))]


def venv_rows(data: Compat) -> list[tuple[str, ...]]:
    """From each python on: the pip and setuptools its venv gets."""
    rows: list[tuple[str, ...]] = []
    for rank, python in enumerate(sorted(data.venv, key=version_key, reverse=True)):
        versions = {name: version for name, version, _ in data.venv[python]}
        rows.append((f"{python} and later" if rank == 0 else python, versions["pip"],
                     versions["setuptools"]))
    return rows


def known_listing(data: Compat) -> str:
    """`imgkit list --known`: both tables as aligned plain text."""
    return "\n".join(["framework builds (a family's framework and framework_version):",
                      *columns(FRAMEWORK_HEADER, framework_rows(data)), "",
                      "CUDA releases (a family's cuda axis; cudnn and nccl name series of these):",
                      *columns(CUDA_HEADER, cuda_rows(data)), "",
                      "every venv's pip and setuptools (PyPI's wheels, by hash), by python:",
                      *columns(VENV_HEADER, venv_rows(data))])


def _markdown(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(cell.replace("|", "\\|") or " " for cell in row) + " |"
              for row in rows)]


def known_page(data: Compat) -> str:
    """docs/known.md."""
    return "\n".join([
        "# What builds on which CUDA",
        "",
        "Generated from the compatibility data imgkit ships by `make docs`; "
        "`tests/test_known.py` fails when it drifts. `imgkit list --known` prints the same "
        "tables for your project, with your own `compat.yaml` merged in "
        "([Your matrix](your-matrix.md#your-own-compatibility-data)). "
        "[Back to the README](../README.md).",
        "",
        "## Framework builds",
        "",
        "A framework family names `framework:` and a `framework_version` axis; its `cuda`, "
        "`cudnn` and `nccl` axes must fit the build (the ranges are the versions its wheel "
        "accepts), its python one of the build's.",
        "",
        *_markdown(FRAMEWORK_HEADER, framework_rows(data)),
        "",
        "## CUDA releases",
        "",
        "A family's `cuda` axis names one of these; `cudnn` and `nccl` name a series of the "
        "pins it offers (`9`, `9.10`, or `default`: the newest the framework allows). A "
        "release runs on a driver of its toolkit's, and on the older one of its major's "
        "minor-version compatibility (where newer features and PTX JIT may fail).",
        "",
        *_markdown(CUDA_HEADER, cuda_rows(data)),
        "",
        "## The venv's pip and setuptools",
        "",
        "Every python layer's venv gets PyPI's pip and setuptools, installed by hash, in place "
        "of the distro's (bookworm's are pip 23.0.1 and setuptools 66.1.1, which fail the "
        "default vulnerability gate: [Known vulnerabilities](vulnerabilities.md)). The distro's "
        "copies are removed, so a new venv in an image is made with "
        "`python3 -m venv --without-pip`. A python takes the row at or under it; a `venv:` "
        "entry in your `compat.yaml` moves them.",
        "",
        *_markdown(VENV_HEADER, venv_rows(data)),
        ""])
