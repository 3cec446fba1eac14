"""`imgkit outdated` on images whose security state is known: a package from a local apt
repository whose `-security` suite holds a newer version, installed old in one image and
current in another (on an imgkit python layer, brought up to the distro's fixes of the
moment first: the archive moves between the layer's build and the test)."""
from __future__ import annotations

import functools
import http.server
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Iterator

import pytest

from .helpers.images import build_from_files
from .helpers.leftovers import our_containers

pytestmark = pytest.mark.docker

PACKAGE = "imgkit-test-pkg"


def deb(tmp: Path, version: str) -> Path:
    root = tmp / f"pkg-{version}"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "usr/share/imgkit-test").mkdir(parents=True)
    (root / "usr/share/imgkit-test/version").write_text(version + "\n")
    (root / "DEBIAN/control").write_text(
        f"Package: {PACKAGE}\nVersion: {version}\nArchitecture: all\n"
        "Maintainer: imgkit tests <tests@imgkit.invalid>\nDescription: a package of known state\n")
    out = tmp / f"{PACKAGE}_{version}_all.deb"
    subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(root), str(out)],
                   check=True, capture_output=True)
    return out


@pytest.fixture()
def security_repo(engine, tmp_path) -> Iterator[tuple[str, dict[str, bytes]]]:
    """A flat apt repository on the Docker bridge whose suite is `test-security` and holds
    version 2.0; returns its sources.list line and the two .debs."""
    import hashlib
    repo = tmp_path / "repo"
    repo.mkdir()
    old, new = deb(tmp_path, "1.0"), deb(tmp_path, "2.0")
    (repo / new.name).write_bytes(new.read_bytes())
    data = new.read_bytes()
    (repo / "Packages").write_text(
        f"Package: {PACKAGE}\nVersion: 2.0\nArchitecture: all\nMaintainer: imgkit tests "
        f"<tests@imgkit.invalid>\nFilename: ./{new.name}\nSize: {len(data)}\n"
        f"SHA256: {hashlib.sha256(data).hexdigest()}\nDescription: a package of known state\n")
    (repo / "Release").write_text("Origin: imgkit-tests\nSuite: test-security\n"
                                  "Codename: test-security\nArchitectures: all amd64\n")
    gateway = engine.bridge_gateway()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(repo))
    server = http.server.ThreadingHTTPServer((gateway, 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        line = f"deb [trusted=yes] http://{gateway}:{server.server_address[1]}/ ./\n"
        yield line, {"1.0": old.read_bytes(), "2.0": new.read_bytes()}
    finally:
        server.shutdown()
        server.server_close()


def image_with(engine, parent: str, ref: str, version: str,
               repo: tuple[str, dict[str, bytes]]) -> str:
    line, debs = repo
    # the distro's fixes up to now first (the python layer took those of its build, and the
    # archive moves: a fix published since would be one more waiting update), then ours
    dockerfile = (f"FROM {parent}\nUSER root\nRUN apt-get update && DEBIAN_FRONTEND=noninteractive "
                  "apt-get upgrade -y && apt-get clean && rm -rf /var/lib/apt/lists/*\n"
                  "COPY pkg.deb /tmp/pkg.deb\nCOPY test.list "
                  "/etc/apt/sources.list.d/test.list\nRUN dpkg -i /tmp/pkg.deb && rm /tmp/pkg.deb\n"
                  "USER imgkit\n")
    return build_from_files(engine, ref, {"Dockerfile": dockerfile.encode(),
                                          "pkg.deb": debs[version], "test.list": line.encode()})


def outdated(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "imgkit", "outdated", *args],
                          capture_output=True, text=True)


def test_a_waiting_security_update_is_exit_1_naming_it_and_none_is_exit_0(
        engine, mini_stack, namespace, security_repo, tmp_path):
    behind = image_with(engine, mini_stack.python, f"{namespace}/outdated:behind", "1.0",
                        security_repo)
    current = image_with(engine, mini_stack.python, f"{namespace}/outdated:current", "2.0",
                         security_repo)
    containers = our_containers(engine)

    done = outdated(behind, "--no-pip", "--json", str(tmp_path / "behind.json"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{PACKAGE} 1.0 -> 2.0" in done.stdout and done.stdout.startswith("OUTDATED")
    found = json.loads((tmp_path / "behind.json").read_text())[0]
    assert [u["package"] for u in found["security"]] == [PACKAGE], found["security"]
    assert isinstance(found["base_days"], int) and found["base_days"] >= 0

    done = outdated(current, "--json", str(tmp_path / "current.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((tmp_path / "current.json").read_text())[0]["security"] == []
    assert done.stdout.startswith("ok")
    assert our_containers(engine) <= containers   # none left

    unknown = outdated("nosuch/image:1")
    assert unknown.returncode == 2 and "nosuch/image:1" in unknown.stderr
