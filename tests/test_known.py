"""What builds on which CUDA, visible without reading imgkit's source: docs/known.md is the
shipped compat data as tables (drift fails here), and `imgkit list --known` prints them for
a project, its own compat.yaml merged in."""
from __future__ import annotations

import shutil
from pathlib import Path

from imgkit.matrix.compat import load
from imgkit.matrix.known import known_page

from .helpers.cli import imgkit
from .helpers.images import ROOT


def test_docs_known_md_is_what_the_shipped_data_says() -> None:
    assert (ROOT / "docs" / "known.md").read_text() == known_page(load()), "run `make docs`"


def test_every_framework_build_and_cuda_release_is_in_the_page() -> None:
    data, page = load(), known_page(load())
    for name, builds in data.frameworks.items():
        for version, build in builds.items():
            assert f"| {name} | {version} | {build.cuda} |" in page, (name, version)
    for cuda in data.cuda:
        assert f"\n| {cuda} | " in page, cuda


def test_list_known_shows_a_projects_own_builds_beside_imgkits(tmp_path: Path) -> None:
    images = tmp_path / "images"
    shutil.copytree(ROOT / "images", images, ignore=shutil.ignore_patterns("locks"))
    (images / "compat.yaml").write_text(
        'frameworks:\n  paddle:\n    "3.0.0":\n      pip: "paddlepaddle-gpu==3.0.0"\n'
        '      cuda: "12.6"\n      cudnn: ">=9.5,<10"\n      nccl: ">=2.21,<3"\n'
        '      python: ["3.11", "3.12"]\n      apt: [libgomp1]\n')
    done = imgkit("list", "--known", "--images", "images", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    assert ["paddle", "3.0.0", "12.6", ">=9.5,<10", ">=2.21,<3", "3.11", "3.12", "linux/amd64"] in rows
    assert ["paddle", "2.6.2", "11.8"] in [r[:3] for r in rows]


def test_a_build_or_release_imgkit_does_not_know_points_at_the_table(tmp_path: Path) -> None:
    images = tmp_path / "images"
    images.mkdir()
    (images / "t.yaml").write_text('family: t\nrepository: t\nframework: torch\n'
                                   'tag: "{framework_version}"\naxes:\n'
                                   '  framework_version: ["9.9.9"]\n  cuda: ["12.8"]\n')
    done = imgkit("list", "--images", "images", cwd=tmp_path)
    assert done.returncode == 2 and "imgkit list --known" in done.stderr, done.stderr
    assert "src/imgkit" not in done.stderr
