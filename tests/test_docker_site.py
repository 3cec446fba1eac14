"""imgkit site from the verdicts this machine recorded (no --verdicts): each image judged by
the recorded verdict of the image id its tag points at now, as publishing judges it: the
mini stack's CUDA image verified here shows its true verdict, and its python parent what
was recorded for it (none, unless an earlier test verified it)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers.images import MiniStack, build_from_files, mini_project

pytestmark = pytest.mark.docker
IMGKIT = [sys.executable, "-m", "imgkit"]


def test_the_site_of_what_was_verified_here(mini_stack: MiniStack, namespace: str, tmp_path: Path) -> None:
    verified = subprocess.run([*IMGKIT, "verify", mini_stack.mini, "--gpus", "none"],
                              capture_output=True, text=True, timeout=600)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    project = mini_project(tmp_path / "project")
    done = subprocess.run([*IMGKIT, "site", "--images", str(project / "images"),
                           "--namespace", namespace, "--out", str(tmp_path / "site")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    index = (tmp_path / "site" / "index.html").read_text()
    row = index[index.index(mini_stack.mini):]
    assert "passed, GPU not verified" in row[:600]
    # the parent: what this machine recorded for its image id now (an earlier test module
    # may have verified it in this session's namespace), and "no verdict" when nothing
    from imgkit.engine import connect
    from imgkit.verify import tickets
    info = connect().image(mini_stack.python)
    assert info is not None
    record = tickets.document(info.id)
    said = ("no verdict" if record is None else "failed" if not record.passed
            else "passed" if record.gpu_checked else "passed, GPU not verified")
    parent = index[index.index(f">{mini_stack.python}<"):]
    assert said in parent[:600], (said, parent[:600])
    pages = [p.read_text() for p in (tmp_path / "site" / "images").glob("*cuda*.html")]
    assert any("check: " not in p and "cudart.version" in p for p in pages)
    # what the engine holds of it: its size on the grid, its layers drawn on its page
    assert "not here" not in row[:600] and re.search(r'<td class="size">[0-9.]+ [MG]B</td>', row[:600])
    assert any('<figure id="layers">' in p and "pip install" in p for p in pages)


def test_a_rebuilt_image_shows_what_it_is_now_and_what_moved_since(
        engine, mini_stack: MiniStack, namespace: str, tmp_path: Path) -> None:
    """`make build`, a verify, a rebuild, a verify, then `imgkit site` with no --verdicts
    (what this machine kept): the image's verdict is the one of what its tag is now, the
    build before is its history, and the diff names what moved (a package removed, the
    size)."""
    own = f"{namespace}-rebuilt"
    tag = mini_stack.mini.replace(namespace, own, 1)
    engine.tag(engine.image(mini_stack.mini).id, tag)
    project = mini_project(tmp_path / "project")

    def verified() -> None:     # --json: the verdict lists the packages too (the diff's)
        done = subprocess.run([*IMGKIT, "verify", tag, "--gpus", "none", "--json",
                               str(tmp_path / "verdict.json")], capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr

    def site(out: str) -> tuple[str, str]:
        done = subprocess.run([*IMGKIT, "site", "--images", str(project / "images"), "--namespace",
                               own, "--out", str(tmp_path / out)], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        index = (tmp_path / out / "index.html").read_text()
        page = next((tmp_path / out / "images").glob("*cuda*.html")).read_text()
        return index[index.index(f">{tag}<"):][:800], page

    verified()
    build_from_files(engine, tag, {"Dockerfile": (
        f"FROM {mini_stack.mini}\nUSER root\nRUN /opt/venv/bin/pip uninstall -q -y setuptools "
        "&& head -c 20000000 /dev/urandom > /opt/ballast\nUSER imgkit\n").encode()})
    row, page = site("rebuilt")                 # rebuilt, not verified yet: no verdict
    assert "no verdict (rebuilt since it was verified)" in row, row
    assert "rebuilt since its last verdict" in page and '<table class="history">' in page
    verified()
    row, page = site("again")
    assert "passed, GPU not verified" in row and "change(s) since the build before" in row, row
    moved = re.findall(r'<tr data-kind="(\w+)"><td>\w+</td><td>([^<]+)</td><td>([^<]*)</td><td>([^<]*)</td>',
                       page[page.index('<table class="changes">'):])
    assert ("pip", "setuptools") in {(kind, name) for kind, name, _, _ in moved}, moved
    # 20 MB added (the files pip removed still weigh in the layers below)
    assert any(kind == "size" and re.search(r"\(\+2\d\.\d MB\)", after) for kind, _, _, after in moved), moved
