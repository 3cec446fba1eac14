#!/usr/bin/env python3
"""Pull benchmark: what a fresh GPU runner waits for before verify can start.

For IMAGE (default: the slice's Paddle image, built by `make build`), in one run:

1. pushed to a registry on 127.0.0.1 twice: by the engine (gzip layers: what `docker push`
   and `imgkit publish` send) and as `imgkit publish --compression zstd` sends it (zstd
   layers, the engine's own config: the same image id); each push timed;
2. pulled cold into a throwaway engine whose store is emptied before every pull (the
   dockerd in /opt/imgkit-engine, which `make host` unpacks on Debian 12; a socket,
   data root and bridge of its own): seconds to pull and extract, then the first and second
   `import FRAMEWORK` in a container of it (no network); rounds alternate which compression
   goes first;
3. what writing the store costs alone: the image's uncompressed archive (`docker save`)
   loaded into the same kind of empty throwaway engine, in the same rounds, with nothing to
   fetch or decompress (issue 57 asks for 0.6x of gzip's pull; a load applies one layer
   after another from one file, so it is a measure of the disk, not a bound on a pull);
4. what the layer order costs when only the framework changes: the compressed bytes of the
   image's own layers (above its parent, `org.opencontainers.image.base.name`), which a
   runner pulls again, against the whole image, per compression.

Needs the test tools (`docker-registry`: .ci/setup-test-tools.sh) and about three
times the image's size free on disk. Nothing is left behind: the registry, the throwaway
engine and their folders are removed at the end, also on Ctrl-C.

Usage: python bench/pull_bench.py [--image paddle:2.6.2-gpu-cuda11.8-cudnn8] [--framework paddle] [--rounds 2]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ENGINE = Path(os.environ.get("IMGKIT_ENGINE_ROOT", "/opt/imgkit-engine"))
BRIDGE, GATEWAY = "imgkit-pull0", "172.31.251.1/24"
COMPRESSIONS = ("gzip", "zstd")


def run(*args: str, env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    done = subprocess.run(list(args), env=env, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(args)}\n{done.stdout[-1500:]}{done.stderr[-1500:]}")
    return done


def timed(*args: str, env: dict[str, str] | None = None) -> tuple[float, str]:
    started = time.monotonic()
    done = run(*args, env=env)
    return time.monotonic() - started, done.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def registry(root: Path) -> Iterator[str]:
    """Debian's docker-registry (distribution 2.8) on a free loopback port, storage in root."""
    port = free_port()
    (root / "config.yml").write_text(
        "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: " + str(root / "data") +
        f"\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n")
    process = subprocess.Popen(["docker-registry", "serve", str(root / "config.yml")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait()


@contextmanager
def throwaway_engine(root: Path) -> Iterator[dict[str, str]]:
    """A dockerd of its own with an empty store; its environment for the docker CLI."""
    sock = root / "docker.sock"
    env = {**os.environ, "DOCKER_HOST": f"unix://{sock}",
           "PATH": f"{ENGINE}/usr/sbin:{ENGINE}/usr/bin:{os.environ['PATH']}"}
    if subprocess.run(["ip", "link", "show", BRIDGE], capture_output=True).returncode != 0:
        run("ip", "link", "add", BRIDGE, "type", "bridge")
        run("ip", "addr", "add", GATEWAY, "dev", BRIDGE)
    run("ip", "link", "set", BRIDGE, "up")
    # its own bridge and no iptables rules: the host engine's stay as they are
    daemon = subprocess.Popen(
        [str(ENGINE / "usr/sbin/dockerd"), "--host", env["DOCKER_HOST"], "--data-root",
         str(root / "data"), "--exec-root", str(root / "exec"), "--pidfile", str(root / "pid"),
         "--bridge", BRIDGE, "--iptables=false", "--ip-masq=false",
         # where it shares the host's containerd, namespaces of its own
         "--containerd-namespace", "imgkit-pull", "--containerd-plugins-namespace",
         "imgkit-pull-plugins"],
        env=env, stdout=subprocess.DEVNULL, stderr=open(root / "dockerd.log", "w"))
    try:
        for _ in range(60):
            if subprocess.run(["docker", "info"], env=env, capture_output=True).returncode == 0:
                break
            time.sleep(1)
        else:
            log = (root / "dockerd.log").read_text()[-1500:]
            raise SystemExit(f"the throwaway dockerd did not start: {log}")
        yield env
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
        run("ip", "link", "delete", BRIDGE)


def push_both(image: str, where: str) -> dict[str, float]:
    """The image pushed as `imgkit publish` sends it: by the engine (gzip) and with
    `--compression zstd` (imgkit's own upload, the verified config kept); seconds each."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from imgkit.engine import connect
    from imgkit.publish import zstd
    from imgkit.registry.client import Endpoint, RegistryClient
    seconds = {}
    gzip_ref = f"{where}/bench/image:gzip"
    run("docker", "tag", image, gzip_ref)
    try:
        seconds["gzip"], _ = timed("docker", "push", "-q", gzip_ref)
    finally:
        run("docker", "rmi", gzip_ref)
    image_id = run("docker", "image", "inspect", "-f", "{{.Id}}", image).stdout.strip()
    started = time.monotonic()
    with RegistryClient(Endpoint(where, secure=False)) as client:
        zstd.push(connect(), client, "bench/image", "zstd", image_id)
    seconds["zstd"] = time.monotonic() - started
    return seconds


def layer_sizes(where: str, compression: str) -> list[int]:
    request = urllib.request.Request(
        f"http://{where}/v2/bench/image/manifests/{compression}",
        headers={"Accept": "application/vnd.oci.image.manifest.v1+json, "
                           "application/vnd.docker.distribution.manifest.v2+json"})
    manifest = json.load(urllib.request.urlopen(request))
    return [int(layer["size"]) for layer in manifest["layers"]]


def own_layer_count(image: str) -> int:
    """How many of the image's layers are its own, above its parent's."""
    info = json.loads(run("docker", "image", "inspect", image).stdout)[0]
    parent = (info["Config"].get("Labels") or {}).get("org.opencontainers.image.base.name")
    if not parent:
        return len(info["RootFS"]["Layers"])
    theirs = json.loads(run("docker", "image", "inspect", parent).stdout)[0]["RootFS"]["Layers"]
    return len(info["RootFS"]["Layers"]) - len(theirs)


def cold_pull(where: str, compression: str, framework: str, scratch: Path,
              image_id: str) -> dict[str, float]:
    root = Path(tempfile.mkdtemp(prefix="engine-", dir=scratch))
    try:
        with throwaway_engine(root) as env:
            ref = f"{where}/bench/image:{compression}"
            pull, _ = timed("docker", "pull", "-q", ref, env=env)
            pulled = run("docker", "image", "inspect", "-f", "{{.Id}}", ref, env=env).stdout.strip()
            if pulled != image_id:
                raise SystemExit(f"the {compression} pull is {pulled}, not the image pushed ({image_id})")
            code = ("import time; t = time.perf_counter(); import " + framework +
                    "; print(time.perf_counter() - t)")
            first_wall, first = timed("docker", "run", "--rm", "--network", "none", ref,
                                      "python3", "-c", code, env=env)
            second_wall, second = timed("docker", "run", "--rm", "--network", "none", ref,
                                        "python3", "-c", code, env=env)
            return {"pull": pull, "first import": float(first.split()[-1]),
                    "first run": first_wall, "second import": float(second.split()[-1]),
                    "second run": second_wall}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def load_floor(archive: Path, scratch: Path, image_id: str) -> float:
    """Seconds for an empty throwaway engine to load the uncompressed archive: writing the
    layers into its store, with no transfer and no decompression."""
    root = Path(tempfile.mkdtemp(prefix="engine-", dir=scratch))
    try:
        with throwaway_engine(root) as env:
            seconds, _ = timed("docker", "load", "-q", "-i", str(archive), env=env)
            loaded = run("docker", "image", "inspect", "-f", "{{.Id}}", image_id, env=env).stdout.strip()
            if loaded != image_id:
                raise SystemExit(f"the archive loaded as {loaded}, not {image_id}")
            return seconds
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--image", default="paddle:2.6.2-gpu-cuda11.8-cudnn8")
    parser.add_argument("--framework", default="paddle")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--scratch", type=Path, default=Path("/var/tmp"),
                        help="where the registry, the archive and the throwaway store go")
    args = parser.parse_args()
    if not (ENGINE / "usr/sbin/dockerd").exists():
        sys.exit(f"no dockerd in {ENGINE}: .ci/setup-host.sh unpacks it on Debian 12")
    scratch = Path(tempfile.mkdtemp(prefix="imgkit-pull-bench-", dir=args.scratch))
    try:
        (scratch / "registry").mkdir()
        with registry(scratch / "registry") as where:
            pushed = push_both(args.image, where)
            image_id = run("docker", "image", "inspect", "-f", "{{.Id}}", args.image).stdout.strip()
            for compression in COMPRESSIONS:
                print(f"push {compression}: {pushed[compression]:.0f} s", flush=True)
            sizes = {c: layer_sizes(where, c) for c in COMPRESSIONS}
            own = own_layer_count(args.image)
            results: dict[str, list[dict[str, float]]] = {c: [] for c in COMPRESSIONS}
            archive = scratch / "image.tar"
            with archive.open("wb") as out:
                subprocess.run(["docker", "save", args.image], stdout=out, check=True)
            floors: list[float] = []
            for round_ in range(args.rounds):
                floors.append(load_floor(archive, scratch, image_id))
                print(f"round {round_ + 1} uncompressed load: {floors[-1]:.1f} s", flush=True)
                order = COMPRESSIONS if round_ % 2 == 0 else tuple(reversed(COMPRESSIONS))
                for compression in order:
                    found = cold_pull(where, compression, args.framework, scratch, image_id)
                    results[compression].append(found)
                    print(f"round {round_ + 1} {compression}: " +
                          ", ".join(f"{k} {v:.1f} s" for k, v in found.items()), flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\n{args.image}, median of {args.rounds} round(s):")
    medians = {c: {k: statistics.median(r[k] for r in results[c]) for k in results[c][0]}
               for c in COMPRESSIONS}
    for compression in COMPRESSIONS:
        total, again = sum(sizes[compression]), sum(sizes[compression][-own:])
        m = medians[compression]
        print(f"  {compression}: {total / 1e9:.2f} GB in {len(sizes[compression])} layers; pull "
              f"{m['pull']:.1f} s, first import {m['first import']:.1f} s (run "
              f"{m['first run']:.1f} s), second {m['second import']:.1f} s; a framework-only "
              f"change pulls again {again / 1e9:.2f} GB ({again / total:.0%}, {own} layers)")
    for key in ("pull", "first import", "first run"):
        print(f"  zstd/gzip {key}: {medians['zstd'][key] / medians['gzip'][key]:.2f}x")
    print(f"  zstd/gzip bytes: {sum(sizes['zstd']) / sum(sizes['gzip']):.2f}x")
    floor = statistics.median(floors)
    print(f"  the uncompressed archive loaded: {floor:.1f} s, {floor / medians['gzip']['pull']:.2f}x "
          f"of gzip's pull, {floor / medians['zstd']['pull']:.2f}x of zstd's (no fetch, no "
          "decompression: the store's writes)")


if __name__ == "__main__":
    main()
