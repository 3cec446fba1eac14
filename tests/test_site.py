"""imgkit site, pure: the grid from a plan and verify --json files (the newest verdict of
each image and platform, an image without one shown as such, a broken file named and left
out), the pages self-contained, and a matrix of 500 images under 1 MB. The browser tests
(tests/test_site_browser.py) open these pages in Chromium."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from imgkit.site.grid import ABSENT, FAILED, NONE, PASSED, UNVERIFIED, rows
from imgkit.site.inputs import read_outdated, read_verdicts
from imgkit.site.pages import write_site
from imgkit.verify.report import verdict_json

from .helpers.reports import GOOD, run
from .helpers.site import FAMILIES, plan_of, three_builds, verdicts, write_verdict


def test_the_grid_shows_each_images_newest_verdict_and_never_passes_a_missing_one(tmp_path: Path) -> None:
    found, skipped = read_verdicts(verdicts(tmp_path / "v"))
    assert len(found) == 4 and len(skipped) == 2
    assert any("broken.json: not a verdict" in s for s in skipped)
    grid = {r.tag: r for r in rows(plan_of(), found)}
    cuda, torch, notebook, jax, python = (grid[t[0]] for t in FAMILIES)
    assert [c.platform for c in cuda.cells] == ["linux/amd64", "linux/arm64"]
    first = cuda.cells[0]
    assert (first.state, first.tf32, first.gpu) == (PASSED, "71%", "NVIDIA H100 80GB HBM3")
    assert (cuda.cells[1].state, cuda.cells[1].said) == (ABSENT, "not built")
    failed = torch.cells[0]
    assert (failed.state, failed.said, failed.fault) == (FAILED, "failed: gemm.bf16", "image")
    assert (torch.cells[1].state, torch.cells[1].said) == (NONE, "no verdict")     # arm64: none
    assert notebook.cells[0].state == UNVERIFIED and notebook.cells[0].said == "passed, GPU not verified"
    assert jax.cells[0].state == NONE and python.cells[0].state == NONE


def test_the_pages_are_self_contained_and_say_the_state_in_words(tmp_path: Path) -> None:
    found, skipped = read_verdicts(verdicts(tmp_path / "v"))
    written = write_site(tmp_path / "site", rows(plan_of(), found), verdicts=len(found), skipped=skipped)
    assert len(written) == 1 + len(FAMILIES)
    index = (tmp_path / "site" / "index.html").read_text()
    assert "5 images on 2 platform(s): 1 passed, 1 passed without a GPU, 1 failed, 3 with no verdict" in index
    assert "[X]</span> failed: gemm.bf16" in index and "(fix the image)" in index
    assert "broken.json: not a verdict" in index
    for page in written:
        text = page.read_text()
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", text), page    # nothing fetched
        assert "<link" not in text and "@import" not in text
    torch = (tmp_path / "site" / "images" / "torch_2.5.1-cuda12.4.html").read_text()
    assert "failed: gemm.bf16" in torch and "imgkit check-signed REGISTRY/torch@sha256:DIGEST" in torch
    # its history: both verdicts of it, newest first, with the image each judged
    history = re.findall(r"<tr><td>[0-9-]+ [0-9:]+</td><td><code>([0-9a-f]+)</code></td><td>([^<]+)</td>",
                         torch[torch.index('<table class="history">'):])
    assert [said for _, said in history] == ["failed: gemm.bf16", "passed"], history
    assert history[1][0] == "1" * 12
    jax = (tmp_path / "site" / "images" / "jax_0.4-cuda12.4.html").read_text()
    assert '<table class="history">' not in jax                # one verdict or none: no history


def test_five_hundred_images_make_a_grid_under_a_megabyte(tmp_path: Path) -> None:
    plan = plan_of(500)
    folder = tmp_path / "v"
    folder.mkdir()
    slow_tf32 = copy.deepcopy(GOOD)
    slow_tf32["gpu"]["work"]["gemm"]["tf32"]["tflops"] = 100.0
    for i, target in enumerate(plan.targets):
        write_verdict(folder, f"v{i}", target.tag, run(GOOD if i % 7 else slow_tf32))
    found, skipped = read_verdicts(folder)
    write_site(tmp_path / "site", rows(plan, found), verdicts=len(found), skipped=skipped)
    index = tmp_path / "site" / "index.html"
    assert index.stat().st_size < 1 << 20, index.stat().st_size
    # the chart draws the 40 lowest: slow builds (every 7th) only
    text = index.read_text()
    chart = text[text.index('<figure id="throughput">'):]
    assert "the 40 lowest of 500" in chart
    drawn = [i for i, t in enumerate(plan.targets) if f">{t.tag} (linux/amd64" in chart]
    assert len(drawn) == 40 and all(i % 7 == 0 for i in drawn), drawn


def test_what_changed_since_the_build_before(tmp_path: Path) -> None:
    found, _ = read_verdicts(verdicts(tmp_path / "v"))
    grid = {r.tag: r for r in rows(plan_of(), found)}
    changed = grid[FAMILIES[1][0]].cells[0].changes
    assert changed is not None and changed.packages_compared
    assert changed.before.image_id == "sha256:" + "1" * 64
    moved = {(m.kind, m.name): (m.before, m.after) for m in changed.moved}
    assert moved[("pip", "numpy")] == ("1.26.4", "2.0.1")
    assert moved[("pip", "requests")] == ("", "1.0")                  # added
    assert moved[("apt", "libssl3")] == ("3.0.11", "3.0.13")
    assert moved[("throughput", "GEMM BF16 of peak")] == ("71%", "10%")    # BF16 fell
    assert ("throughput", "GEMM TF32 of peak") not in moved                # TF32 did not
    assert ("library", "cudart") not in moved                          # the stack stayed
    assert grid[FAMILIES[0][0]].cells[0].changes is None               # one build: nothing to compare




def test_any_two_verdicts_of_an_image_are_compared_with_the_size_delta(tmp_path: Path) -> None:
    """Two builds or two digests chosen by hand: every two of the newest verdicts are
    compared (older first), each with what moved and how the unpacked size moved."""
    found, _ = read_verdicts(three_builds(tmp_path / "v"))
    grid = {r.tag: r for r in rows(plan_of(), found)}
    torch = grid[FAMILIES[1][0]]
    first = torch.cells[0]
    assert [p.image_id for p in first.history][1:] == ["sha256:" + "1" * 64, "sha256:" + "2" * 64]
    assert [p.size for p in first.history] == ["6.6 GB", "6.5 GB", "6.4 GB"]
    pairs = {(c.older, c.newer): c.changes for c in first.comparisons}
    assert set(pairs) == {(1, 0), (2, 0), (2, 1)}
    oldest_to_newest = {(m.kind, m.name): (m.before, m.after) for m in pairs[(2, 0)].moved}
    assert oldest_to_newest[("pip", "numpy")] == ("1.25.0", "2.0.1")
    assert oldest_to_newest[("apt", "libssl3")] == ("3.0.9", "3.0.13")
    assert oldest_to_newest[("size", "image, unpacked")] == ("6.4 GB", "6.6 GB (+220.0 MB)")
    older = {(m.kind, m.name): (m.before, m.after) for m in pairs[(2, 1)].moved}
    assert older[("size", "image, unpacked")] == ("6.4 GB", "6.5 GB (+100.0 MB)")
    assert ("throughput", "GEMM BF16 of peak") not in older       # both of those were fast
    assert torch.size == "6.6 GB"     # no engine holds it here: its newest verdict's size
    assert grid[FAMILIES[0][0]].size == "" and grid[FAMILIES[0][0]].cells[0].comparisons == ()
    written = write_site(tmp_path / "site", rows(plan_of(), found), verdicts=len(found), skipped=[])
    page = next(p for p in written if p.name == "torch_2.5.1-cuda12.4.html").read_text()
    shown = re.findall(r'<div class="comparison" data-older="(\d)" data-newer="(\d)"( hidden)?>', page)
    assert shown == [("1", "0", ""), ("2", "0", " hidden"), ("2", "1", " hidden")], shown
    assert page.count("<script>") == 1         # its listeners added once


def test_a_verdict_that_says_no_size_shows_no_size_move(tmp_path: Path) -> None:
    """A verdict judged from its registry's description (no engine: no unpacked size) or
    written before verify recorded sizes: nothing is said of the size, never a made-up one."""
    found, _ = read_verdicts(verdicts(tmp_path / "v"))
    grid = {r.tag: r for r in rows(plan_of(), found)}
    changed = grid[FAMILIES[1][0]].cells[0].changes
    assert changed is not None and all(m.kind != "size" for m in changed.moved)
    assert grid[FAMILIES[1][0]].size == ""


def test_throughput_and_layers_are_drawn_as_inline_svg(tmp_path: Path) -> None:
    """pygal's charts: a bar per image and GEMM precision against the GPU's peak on the
    grid, and on an image page its size layer by layer (from the engine's facts)."""
    from imgkit.site.images import ImageFacts, Layer
    found, skipped = read_verdicts(verdicts(tmp_path / "v"))
    held = {FAMILIES[1][0]: ImageFacts(7_300_000_000, 1_764_028_800, (
        Layer("FROM debian:bookworm", 74_000_000), Layer("RUN pip install torch==2.5.1", 6_900_000_000)))}
    laid_out = rows(plan_of(), found, held)
    torch_row = next(r for r in laid_out if r.tag == FAMILIES[1][0])
    assert torch_row.size == "7.3 GB" and torch_row.built == "2025-11-25" and len(torch_row.layers) == 2
    write_site(tmp_path / "site", laid_out, verdicts=len(found), skipped=skipped)
    index = (tmp_path / "site" / "index.html").read_text()
    chart = index[index.index('<figure id="throughput">'):index.index("</figure>")]
    assert "<svg" in chart and "<script src" not in chart and 'id="chart-imgkit-throughput"' in chart
    assert f"{FAMILIES[0][0]} (linux/amd64, NVIDIA H100 80GB HBM3)" in chart   # the GPU pass
    assert f"{FAMILIES[1][0]} (linux/amd64, NVIDIA H100 80GB HBM3)" in chart   # the slow one
    assert ">71%<" in chart                                                 # TF32's share, printed
    write_site(tmp_path / "again", laid_out, verdicts=len(found), skipped=skipped)
    assert (tmp_path / "again" / "index.html").read_text() == index          # the same page
    assert "not here" in index                                              # no engine facts
    page = (tmp_path / "site" / "images" / "torch_2.5.1-cuda12.4.html").read_text()
    assert '<figure id="layers">' in page and "RUN pip install torch==2.5.1" in page
    assert "6900.0 MB" in page
    jax = (tmp_path / "site" / "images" / "jax_0.4-cuda12.4.html").read_text()
    assert "its layers are not shown" in jax and '<figure id="layers">' not in jax


def outdated_file(path: Path) -> Path:
    """`imgkit outdated --json` as it writes it: torch with two security updates waiting
    (one under a registry's name), the CUDA image with none, an entry that is no image."""

    from imgkit.lock.outdated import AptUpdate, Outdated, PipRelease, outdated_json
    torch = Outdated("registry.example.com/ml/" + FAMILIES[1][0], apt=[
        AptUpdate("libssl3", "bookworm-security", "3.0.13-1~deb12u1", "3.0.17-1~deb12u2"),
        AptUpdate("libc6", "bookworm-security", "2.36-9+deb12u7", "2.36-9+deb12u10"),
        AptUpdate("tzdata", "bookworm-updates", "2024a-0+deb12u1", "2025b-0+deb12u1")],
        pip=[PipRelease("numpy", "2.0.1", "2.0.2")], base_days=41)
    cuda = Outdated(FAMILIES[0][0], base_days=3)
    document = json.loads(outdated_json([torch, cuda]))
    path.write_text(json.dumps([*document, {"apt": []}]))
    return path


def test_pending_security_updates_show_in_the_grid_and_on_the_page(tmp_path: Path) -> None:
    waiting, unread = read_outdated(outdated_file(tmp_path / "outdated.json"))
    assert [r.image for r in waiting] == ["registry.example.com/ml/" + FAMILIES[1][0], FAMILIES[0][0]]
    assert unread == [f"{tmp_path / 'outdated.json'}: image 3: image: Field required"]
    found, skipped = read_verdicts(verdicts(tmp_path / "v"))
    grid = {r.tag: r for r in rows(plan_of(), found, outdated=waiting)}
    torch = grid[FAMILIES[1][0]].updates
    assert torch is not None and torch.said == "2 security updates" and torch.other == 1
    assert torch.security[0] == "libssl3 3.0.13-1~deb12u1 -> 3.0.17-1~deb12u2"
    assert grid[FAMILIES[0][0]].updates.said == "no security updates"       # type: ignore[union-attr]
    assert grid[FAMILIES[3][0]].updates is None                              # not asked of jax
    write_site(tmp_path / "site", list(grid.values()), verdicts=len(found), skipped=unread,
               outdated=True)
    index = (tmp_path / "site" / "index.html").read_text()
    assert '<td class="updates pending">2 security updates</td>' in index
    assert '<td class="updates">not checked</td>' in index and "image 3: image: Field required" in index
    page = (tmp_path / "site" / "images" / "torch_2.5.1-cuda12.4.html").read_text()
    assert "Updates waiting: 2 security updates" in page and "numpy 2.0.1 -&gt; 2.0.2" in page
    assert "Its base is 41 days old." in page
    # without the file, no column: nothing is said that was not asked
    write_site(tmp_path / "plain", list(rows(plan_of(), found)), verdicts=len(found), skipped=[])
    assert "not checked" not in (tmp_path / "plain" / "index.html").read_text()


def test_an_outdated_file_that_is_not_one_is_named(tmp_path: Path) -> None:
    (tmp_path / "o.json").write_text('{"image": "x"}')
    assert read_outdated(tmp_path / "o.json") == (
        [], [f"{tmp_path / 'o.json'}: not the JSON of `imgkit outdated --json` (a list of images)"])
    missing = tmp_path / "missing.json"
    assert read_outdated(missing)[1] == [f"{missing}: No such file or directory"]


def test_each_images_lock_shows_its_pins_or_why_not(tmp_path: Path) -> None:
    from imgkit.lock.files import Pinned, lock_path
    from imgkit.site.locks import lock_views

    from .helpers.locks import cuda_target
    from .helpers.locks import plan_of as locked_plan
    from .helpers.locks import write as write_lock
    plan = locked_plan()
    write_lock(tmp_path, plan, [Pinned("nvidia-cuda-runtime-cu12", "12.8.90", ("1" * 64,)),
                                Pinned("extra", "1.0", ("2" * 64,), 'platform_machine == "x86_64"')])
    views, unread = lock_views(tmp_path, plan)
    cuda, python = cuda_target(plan).tag, next(t.tag for t in plan.targets if t.layer == "python")
    assert unread == [] and views[cuda].current
    assert views[cuda].pip == ("extra==1.0 ; platform_machine == \"x86_64\"",
                               "nvidia-cuda-runtime-cu12==12.8.90")
    assert views[python].state == "no lock" and not views[python].pip
    laid_out = rows(plan, [], locks=views)
    write_site(tmp_path / "site", laid_out, verdicts=0, skipped=unread, locked=True)
    index = (tmp_path / "site" / "index.html").read_text()
    assert '<td class="lock">locked: 2 pip, 0 apt</td>' in index
    assert '<td class="lock stale">no lock</td>' in index
    page = next((tmp_path / "site" / "images").glob("*cuda_12.8*")).read_text()
    assert "Lock: matches the matrix" in page and "<code>nvidia-cuda-runtime-cu12==12.8.90</code>" in page
    # the matrix moved since: the lock is shown stale, not as what the image installs
    moved = locked_plan(platforms=["linux/amd64", "linux/arm64"])
    assert lock_views(tmp_path, moved)[0][cuda].state == "stale: the matrix changed since it was locked"
    # a file in the locks folder that is no lock is named, and the site goes on without locks
    lock_path(tmp_path, python).write_text("requests==2.32.3\n")
    assert lock_views(tmp_path, plan) == ({}, [f"{lock_path(tmp_path, python)}: not an imgkit lock "
                                               "(no `# inputs:` line)"])


def test_a_verdict_of_a_digest_a_pipeline_staged_is_its_images_by_title(tmp_path: Path) -> None:
    """A verify job judges the staged digest (HOST/staging/REPO@sha256:...), which names no
    tag: the verdict's title (the image's image.title label) says which image it was."""
    from dataclasses import replace
    folder = tmp_path / "v"
    folder.mkdir()
    staged = "registry.example.com/ml/staging/jax@sha256:" + "d" * 64
    path = write_verdict(folder, "jax", staged, run(GOOD))
    path.write_text(verdict_json(replace(run(GOOD), image=staged, title=FAMILIES[3][0])))
    found, _ = read_verdicts(folder)
    jax = {r.tag: r for r in rows(plan_of(), found)}[FAMILIES[3][0]]
    assert jax.cells[0].state == PASSED
    # without the title, the digest is no image of the matrix: no verdict, never a pass
    path.write_text(verdict_json(replace(run(GOOD), image=staged)))
    found, _ = read_verdicts(folder)
    assert {r.tag: r for r in rows(plan_of(), found)}[FAMILIES[3][0]].cells[0].state == NONE


def test_a_matrix_without_locks_says_nothing_of_locks(tmp_path: Path) -> None:
    """`imgkit site` itself (no engine reachable: sizes are left out): no lock column or
    section until the matrix has a lock; then each image with steps of its own says."""
    import yaml
    from typer.testing import CliRunner

    from imgkit.cli import app
    from imgkit.lock.files import Pinned

    from .helpers.locks import plan_of as locked_plan
    from .helpers.locks import write as write_lock
    images = tmp_path / "images"
    images.mkdir()
    (images / "mini.yaml").write_text(yaml.safe_dump(
        {"family": "mini", "cuda_libs": ["cudart"], "axes": {"cuda": ["12.8"]}}))
    (tmp_path / "v").mkdir()
    env = {"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}

    def site(out: str) -> str:
        done = CliRunner().invoke(app, ["site", "--images", str(images), "--verdicts",
                                        str(tmp_path / "v"), "--out", str(tmp_path / out)], env=env)
        assert done.exit_code == 0, done.output
        return (tmp_path / out / "index.html").read_text() + "".join(
            p.read_text() for p in (tmp_path / out / "images").iterdir())

    plain = site("plain")
    assert "<th>lock</th>" not in plain and "Lock:" not in plain
    write_lock(images, locked_plan(), [Pinned("nvidia-cuda-runtime-cu12", "12.8.90", ("1" * 64,))])
    locked = site("locked")
    assert "<th>lock</th>" in locked and "Lock: matches the matrix" in locked
    assert '<td class="lock stale">no lock</td>' in locked        # the python layer's


def test_what_the_registry_holds_shows_in_the_cell_and_on_the_page(tmp_path: Path) -> None:
    """signatures.read's findings (a real registry and cosign: test_docker_signing.py) laid
    out: a signed cell and an unsigned one with why, the real digest in the commands."""
    from imgkit.site.signatures import Signed
    found, _ = read_verdicts(verdicts(tmp_path / "v"))
    digest = "sha256:" + "ab" * 32
    signed = {(FAMILIES[1][0], "linux/amd64"): Signed(f"r.example/torch@{digest}", True, ""),
              (FAMILIES[2][0], "linux/amd64"): Signed("r.example/torch-notebook:2.5.1-cuda12.4", False,
                                                      "not in the registry (not promoted)")}
    laid_out = rows(plan_of(), found, signed=signed)
    torch = next(r for r in laid_out if r.tag == FAMILIES[1][0])
    assert torch.cells[0].signed is not None and torch.cells[0].signed.digest == digest
    assert torch.cells[1].signed is None                   # arm64: nothing was read for it
    write_site(tmp_path / "site", laid_out, verdicts=len(found), skipped=[], signer="the key cosign.pub")
    index = (tmp_path / "site" / "index.html").read_text()
    assert "1 of the 2 promoted image(s) carry a signed, passing verdict that verifies against " \
           "the key cosign.pub" in index
    page = (tmp_path / "site" / "images" / "torch_2.5.1-cuda12.4.html").read_text()
    assert f"imgkit check-signed r.example/torch@{digest} --trusted-key cosign.pub" in page
    notebook = (tmp_path / "site" / "images" / "torch-notebook_2.5.1-cuda12.4.html").read_text()
    assert "<b>no signed, passing verdict</b>: not in the registry (not promoted)" in notebook
    assert "REGISTRY/torch-notebook@sha256:DIGEST" in notebook       # no digest to fill in


def test_trust_and_a_registry_come_together(tmp_path: Path) -> None:
    from .helpers.cli import imgkit
    alone = imgkit("site", "--out", str(tmp_path / "s"), "--registry", "r.example/ml")
    assert alone.returncode == 2 and "needs the signer to trust" in alone.stderr
    (tmp_path / "k.pub").write_text("-----BEGIN PUBLIC KEY-----\n")
    key = imgkit("site", "--out", str(tmp_path / "s"), "--trusted-key", str(tmp_path / "k.pub"))
    assert key.returncode == 2 and "give the registry with --registry" in key.stderr, key.stderr


def test_verdicts_of_ids_a_tag_moved_from_are_history_never_its_verdict(tmp_path: Path) -> None:
    """What `imgkit site` reads from this machine's records: a tag's verdict is the one of
    the id it points at now; those of the ids before are its history (and compared), even
    when newer; with only those, the image has no verdict."""
    from dataclasses import replace as changed

    found, _ = read_verdicts(three_builds(tmp_path / "v"))
    torch = [f for f in found if f.verdict.image == FAMILIES[1][0]]
    assert len(torch) == 3
    now = next(f for f in torch if f.verdict.image_id == "sha256:" + "1" * 64)   # the middle one
    marked = [changed(f, stale=f is not now) for f in torch]
    cell = {r.tag: r for r in rows(plan_of(), marked)}[FAMILIES[1][0]].cells[0]
    assert cell.state == PASSED and cell.verdict is not None and cell.verdict.image_id == now.verdict.image_id
    assert len(cell.history) == 3 and len(cell.comparisons) == 3
    assert cell.changes is not None and cell.changes.before.image_id == "sha256:" + "2" * 64
    none = {r.tag: r for r in rows(plan_of(), [changed(f, stale=True) for f in torch])}[FAMILIES[1][0]]
    assert none.cells[0].state == NONE and none.cells[0].said == "no verdict (rebuilt since it was verified)"
    assert len(none.cells[0].history) == 3
    written = write_site(tmp_path / "site", rows(plan_of(), [changed(f, stale=True) for f in torch]),
                         verdicts=3, skipped=[])
    page = next(p for p in written if p.name == "torch_2.5.1-cuda12.4.html").read_text()
    assert "rebuilt since its last verdict" in page and '<table class="history">' in page


def test_an_images_page_shows_the_scan_kept_of_its_image_id(tmp_path: Path) -> None:
    """The scan `imgkit scan` kept of the very image id the verdict judged shows on the
    image's page, failing findings first; another image's page says it was not scanned,
    and a scan file of another id or that is not a scan counts as none."""
    import datetime as dt

    from imgkit.matrix.waivers import Waiver
    from imgkit.scan import report
    from imgkit.scan.findings import Finding, Scan
    from imgkit.scan.gate import decide
    from imgkit.site.scans import read

    folder = tmp_path / "v"
    folder.mkdir()
    write_verdict(folder, "cuda", FAMILIES[0][0], run(GOOD), image_id="sha256:" + "c" * 64)
    write_verdict(folder, "torch", FAMILIES[1][0], run(GOOD), image_id="sha256:" + "7" * 64)
    found, skipped = read_verdicts(folder)
    cuda = next(f.verdict for f in found if f.verdict.image.startswith(FAMILIES[0][0]))
    findings = [Finding(id="PYSEC-2023-228", aliases=("CVE-2023-5752",), package="pip",
                        ecosystem="PyPI", installed="23.0.1", fixed=("23.3",), score=3.3),
                Finding(id="CVE-2024-0001", aliases=(), package="openssl", ecosystem="Debian",
                        installed="3.0.15-1~deb12u1", fixed=(), score=9.8),
                Finding(id="PYSEC-2022-42969", aliases=("CVE-2022-42969",), package="py",
                        ecosystem="PyPI", installed="1.11.0", fixed=(), score=7.5)]
    waiver = Waiver(id="CVE-2022-42969", package="py", ecosystem="PyPI", who="ml-platform",
                    reason="no Subversion here", expires=dt.date(2099, 1, 1))
    decision = decide(findings, (waiver,), "high", dt.date(2026, 11, 27))
    kept = tmp_path / "scan.json"
    kept.write_text(report.document(Scan(cuda.image, cuda.image_id, "osv-scanner 2.6.0",
                                         tuple(findings)), decision, "high", {"age_days": 2}))
    view = read(kept, cuda.image_id)
    assert view is not None and read(kept, "sha256:" + "9" * 64) is None
    (tmp_path / "junk.json").write_text('{"image_id": "%s"}' % cuda.image_id)
    assert read(tmp_path / "junk.json", cuda.image_id) is None
    assert view.said == "failed (fail_on: high): 3 findings, 1 failing, 1 waived"
    assert [f.verdict for f in view.findings] == ["fail", "waived", "below"]
    write_site(tmp_path / "site", rows(plan_of(), found, scans={cuda.image_id: view}),
               verdicts=len(found), skipped=skipped)
    from imgkit.site.grid import slug
    page = (tmp_path / "site" / "images" / f"{slug(FAMILIES[0][0])}.html").read_text()
    shown = page[page.index("<h3>Known vulnerabilities</h3>"):]
    assert "osv-scanner 2.6.0, against an advisory database 2 days old" in shown
    assert "<b>failed (fail_on: high): 3 findings, 1 failing, 1 waived</b>" in shown
    assert re.search(r"<td>PYSEC-2023-228 \(CVE-2023-5752\)</td><td>PyPI pip</td><td>23\.0\.1</td>"
                     r"<td>23\.3</td><td>low 3\.3</td>", shown)
    assert shown.index("CVE-2024-0001") < shown.index("PYSEC-2022-42969") < shown.index("PYSEC-2023-228")
    torch = (tmp_path / "site" / "images" / "torch_2.5.1-cuda12.4.html").read_text()
    assert "was not scanned here (<code>imgkit scan torch:2.5.1-cuda12.4</code>" in torch
