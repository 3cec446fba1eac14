#!/usr/bin/env python3
"""Builder benchmark, measured side by side in one run (these machines are noisy).

noop: `imgkit build --cuda 11.8` with everything up to date, against docker's own cache
      check of the same rendered contexts (`docker build` of each, every step cached).
      Rounds alternate the two so drift hits both alike; the ratio is per round.
cold (--cold): the slice built cold with shared parents, against each image's full
      Dockerfile (its whole chain flattened) built independently with no cache: time and
      disk. Slow (many GB of downloads); run it when you have the time.

Usage: python bench/build_bench.py [--rounds N] [--cold] [--cuda 11.8]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from imgkit import compat  # noqa: E402
from imgkit.engine import connect  # noqa: E402
from imgkit.plan import make_plan, select  # noqa: E402
from imgkit.render import render_plan, write_context  # noqa: E402
from imgkit.spec import load_spec  # noqa: E402


def timed(cmd: list[str]) -> float:
    start = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start


def noop(cuda: str, rounds: int) -> None:
    plan = select(make_plan(load_spec(ROOT / "images"), compat.load()), cuda=cuda)
    contexts = render_plan(plan, ROOT / "templates")
    with tempfile.TemporaryDirectory() as tmp:
        dirs = [write_context(c, Path(tmp)) for c in contexts]
        imgkit = [sys.executable, "-m", "imgkit", "build", "--cuda", cuda]
        timed(imgkit)  # make sure everything is up to date before measuring
        ratios, ours, docker = [], [], []
        for _ in range(rounds):
            a = timed(imgkit)
            b = sum(timed(["docker", "build", "-q", str(d)]) for d in dirs)
            ours.append(a)
            docker.append(b)
            ratios.append(a / b)
    print(f"no-op rebuild of the CUDA {cuda} slice ({len(contexts)} images), {rounds} rounds")
    print(f"  imgkit build (skip by input hash): median {statistics.median(ours):.2f} s")
    print(f"  docker build cache check:          median {statistics.median(docker):.2f} s")
    print(f"  ratio imgkit/docker: median {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f})")


def flattened(contexts, tag: str) -> str:  # type: ignore[no-untyped-def]
    """One Dockerfile with the whole chain of `tag`, as if written by hand without layers."""
    by_tag = {c.target.tag: c for c in contexts}
    chain = []
    while tag in by_tag:
        chain.append(by_tag[tag])
        tag = by_tag[tag].target.parent or ""
    parts = []
    for i, ctx in enumerate(reversed(chain)):
        lines = ctx.dockerfile.splitlines()
        parts += [line for line in lines if i == 0 or not line.startswith("FROM ")]
    return "\n".join(parts) + "\n"


def cold(cuda: str) -> None:
    engine = connect()
    plan = select(make_plan(load_spec(ROOT / "images"), compat.load()), cuda=cuda,
                  only=None)
    contexts = render_plan(plan, ROOT / "templates")
    leaves = [c for c in contexts if not any(o.target.parent == c.target.tag for o in contexts)]
    for c in contexts:
        engine.remove_image(c.target.tag)
    shared = timed([sys.executable, "-m", "imgkit", "build", "--cuda", cuda, "--force"])
    shared_disk = int(subprocess.run(
        ["docker", "image", "inspect", "-f", "{{.Size}}", leaves[0].target.tag],
        capture_output=True, text=True).stdout or 0)
    total, disk = 0.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for leaf in leaves:
            d = Path(tmp) / leaf.dirname
            write_context(leaf, Path(tmp))
            for ctx in contexts:  # every file any layer of the chain copies
                for path, content, mode in ctx.files:
                    if path != "Dockerfile":
                        (d / path).parent.mkdir(parents=True, exist_ok=True)
                        (d / path).write_bytes(content)
            (d / "Dockerfile").write_text(flattened(contexts, leaf.target.tag))
            tag = f"imgkit-bench/flat:{leaf.dirname[-100:]}"
            total += timed(["docker", "build", "--no-cache", "-q", "-t", tag, str(d)])
            disk += int(subprocess.run(["docker", "image", "inspect", "-f", "{{.Size}}", tag],
                                       capture_output=True, text=True).stdout)
            engine.remove_image(tag)
    print(f"cold build of the CUDA {cuda} slice ({len(contexts)} images, {len(leaves)} leaves)")
    print(f"  shared parents (imgkit): {shared:.0f} s")
    print(f"  each leaf's full Dockerfile, independently: {total:.0f} s, {disk / 1e9:.1f} GB "
          f"of images (no layer shared)")
    print(f"  time ratio shared/independent: {shared / total:.2f}")
    print(f"  (shared: largest leaf alone is {shared_disk / 1e9:.1f} GB; `docker system df` "
          f"shows the unique total)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cuda", default="11.8")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cold", action="store_true")
    args = parser.parse_args()
    noop(args.cuda, args.rounds)
    if args.cold:
        cold(args.cuda)


if __name__ == "__main__":
    main()
