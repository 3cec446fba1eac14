#!/usr/bin/env python3
"""Publish benchmark: `imgkit publish IMAGE --to A --to B` (gate, one push through the engine,
read back, skopeo copy by digest to B, verdicts, tags) against `docker push` of the same
image to a third registry, side by side in one run, each to a fresh local registry
(Debian's docker-registry on loopback, as in the tests). Rounds alternate which goes
first. imgkit's phases are timed from its own progress lines.

Usage: python bench/publish_bench.py [IMAGE] [--rounds 2]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.helpers.registry import USER, docker_config, start_registry  # noqa: E402


def docker_push(image: str, work: Path) -> float:
    registry = start_registry(work / "plain")
    try:
        config = docker_config(work / "plain-config", {registry.address: (USER, registry.password)})
        target = f"{registry.address}/{image}"
        subprocess.run(["docker", "tag", image, target], check=True)
        start = time.monotonic()
        subprocess.run(["docker", "--config", str(config), "push", "-q", target], check=True,
                       stdout=subprocess.DEVNULL)
        seconds = time.monotonic() - start
        subprocess.run(["docker", "rmi", target], check=True, stdout=subprocess.DEVNULL)
        return seconds
    finally:
        registry.remove()


def imgkit_publish(image: str, work: Path) -> dict[str, float]:
    """Total seconds, and when the copy started (the push phase ends there)."""
    first, second = start_registry(work / "a"), start_registry(work / "b")
    try:
        config = docker_config(work / "config", {r.address: (USER, r.password)
                                                 for r in (first, second)})
        start = time.monotonic()
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / "imgkit"), "publish", image, "--to", first.address,
             "--to", second.address, "--allow-gpu-unverified"],
            env={**os.environ, "DOCKER_CONFIG": str(config)}, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
        marks: dict[str, float] = {}
        assert process.stderr is not None
        for line in process.stderr:
            word = line.split(" ", 1)[0]
            marks.setdefault(word, time.monotonic() - start)
        if process.wait() != 0:
            raise SystemExit(f"imgkit publish exited {process.returncode}")
        total = time.monotonic() - start
        return {"total": total, "push": marks.get("copying", total),
                "copy": marks.get("attached", total) - marks.get("copying", total)}
    finally:
        first.remove()
        second.remove()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("image", nargs="?", default="paddle:2.6.2-gpu-cuda11.8-cudnn8")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    imgkit = str(Path(sys.executable).parent / "imgkit")
    verify = subprocess.run([imgkit, "verify", args.image, "--gpus", "none"],
                            stdout=subprocess.DEVNULL)
    if verify.returncode != 0:
        raise SystemExit(f"{args.image} does not pass `imgkit verify --gpus none`")
    plain: list[float] = []
    ours: list[dict[str, float]] = []
    for round_ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="imgkit-bench-", dir="/var/tmp") as tmp:
            work = Path(tmp)
            if round_ % 2 == 0:
                plain.append(docker_push(args.image, work))
                ours.append(imgkit_publish(args.image, work))
            else:
                ours.append(imgkit_publish(args.image, work))
                plain.append(docker_push(args.image, work))
        print(f"round {round_ + 1}: docker push {plain[-1]:.1f} s; imgkit publish to two "
              f"registries {ours[-1]['total']:.1f} s (push and read-back {ours[-1]['push']:.1f} s, "
              f"copy {ours[-1]['copy']:.1f} s)", flush=True)
    push = statistics.median(o["push"] for o in ours)
    print(f"median: docker push {statistics.median(plain):.1f} s; imgkit push phase {push:.1f} s "
          f"(ratio {push / statistics.median(plain):.2f}); copy to the second registry "
          f"{statistics.median(o['copy'] for o in ours):.1f} s; whole publish "
          f"{statistics.median(o['total'] for o in ours):.1f} s")


if __name__ == "__main__":
    main()
