"""Where a base OS image comes from when no registry answers: mirrors and keyrings."""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from imgkit.builder.base import (
    apt_sources,
    debootstrap_command,
    default_maker,
    ensure_base,
    host_mirror,
    make_base,
    maker_command,
    parse_mirrors,
    pick_mirror,
    pick_security_mirror,
    release_date,
)
from imgkit.errors import HostError, UsageError
from imgkit.matrix.compat import load

SOURCES = """\
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
"""
UBUNTU_LIST = """\
deb http://security.ubuntu.com/ubuntu jammy-security main
deb [arch=amd64] http://mirror.example.org/ubuntu jammy main universe
"""


def test_host_mirror_is_read_from_apt_sources_per_distro(tmp_path: Path) -> None:
    (tmp_path / "debian.sources").write_text(SOURCES)
    (tmp_path / "ubuntu.list").write_text(UBUNTU_LIST)
    files = [str(tmp_path / "debian.sources"), str(tmp_path / "ubuntu.list")]
    assert host_mirror("debian", files) == "http://deb.debian.org/debian"
    assert host_mirror("ubuntu", files) == "http://mirror.example.org/ubuntu"  # not security
    assert host_mirror("ubuntu", files, security=True) == "http://security.ubuntu.com/ubuntu"
    assert host_mirror("ubuntu", files[:1]) is None


def test_mirror_entries_per_distro_or_for_all() -> None:
    mirrors = parse_mirrors(["ubuntu=http://archive.ubuntu.com/ubuntu",
                             "http://deb.example.org/debian?x=1"])
    assert pick_mirror("ubuntu", mirrors) == "http://archive.ubuntu.com/ubuntu"
    assert pick_mirror("debian", mirrors) == "http://deb.example.org/debian?x=1"


@pytest.mark.parametrize("entry", ['http://x/"; rm -rf /', "ftp://mirror/debian", "",
                                   "Ubuntu=http://x/ubuntu", "http://x/a b"])
def test_a_mirror_that_is_not_a_plain_url_is_refused(entry: str) -> None:
    with pytest.raises(UsageError, match="--mirror"):
        parse_mirrors([entry])


def test_debootstrap_verifies_against_the_distro_keyring(tmp_path: Path) -> None:
    jammy = load().os_release("jammy")
    cmd = debootstrap_command(jammy, tmp_path, "http://archive.ubuntu.com/ubuntu")
    assert "--keyring=/usr/share/keyrings/ubuntu-archive-keyring.gpg" in cmd
    assert cmd[-4:] == ["jammy", str(tmp_path), "http://archive.ubuntu.com/ubuntu",
                        "/usr/share/debootstrap/scripts/gutsy"]


def test_debian_is_made_by_mmdebstrap_with_usr_merged_as_debootstrap_merges_it(tmp_path: Path) -> None:
    bookworm, noble = load().os_release("bookworm"), load().os_release("noble")
    assert default_maker(bookworm) == "mmdebstrap" and default_maker(noble) == "debootstrap"
    cmd = maker_command("mmdebstrap", bookworm, tmp_path, "http://deb.debian.org/debian",
                        "linux/arm64")
    assert cmd[0] == "mmdebstrap" and "--architectures=arm64" in cmd
    assert "--variant=minbase" in cmd and "--mode=root" in cmd
    assert "--keyring=/usr/share/keyrings/debian-archive-keyring.gpg" in cmd
    assert "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr" in cmd
    assert cmd[-4:-1] == ["bookworm", str(tmp_path), "deb http://deb.debian.org/debian bookworm main"]
    assert maker_command("debootstrap", bookworm, tmp_path, "http://m")[0] == "debootstrap"


def test_mmdebstrap_takes_every_pocket_so_the_python_layer_has_nothing_to_upgrade(tmp_path: Path) -> None:
    """The release, its -updates and its -security pocket, as the base's sources.list names
    them; debootstrap takes the release alone (the python layer's upgrade does the rest),
    and the base's label names what each tool took."""
    from imgkit.builder.base import base_source_label
    bookworm = load().os_release("bookworm")
    mirror, security = "http://deb.debian.org/debian", "http://deb.debian.org/debian-security"
    cmd = maker_command("mmdebstrap", bookworm, tmp_path, mirror, None, security)
    assert cmd[-5:] == ["bookworm", str(tmp_path), f"deb {mirror} bookworm main",
                        f"deb {mirror} bookworm-updates main",
                        f"deb {security} bookworm-security main"]
    assert cmd[-3:] == apt_sources(bookworm, mirror, security).splitlines()
    assert maker_command("mmdebstrap", bookworm, tmp_path, mirror)[-2:] == [
        f"deb {mirror} bookworm main", f"deb {mirror} bookworm-updates main"]
    assert debootstrap_command(bookworm, tmp_path, mirror)[-2] == mirror
    label = base_source_label("mmdebstrap", bookworm, mirror, security)
    assert label.split(" ", 2)[2] == (f"bookworm {mirror}, bookworm-updates {mirror}, "
                                      f"bookworm-security {security}")
    assert base_source_label("debootstrap", bookworm, mirror, security).endswith(f" bookworm {mirror}")


def test_the_release_date_is_the_releases_own_not_a_pockets(tmp_path: Path) -> None:
    lists = tmp_path / "var/lib/apt/lists"
    lists.mkdir(parents=True)
    for name, date in (("debian-security_dists_bookworm-security_InRelease", "Fri, 27 Nov 2026"),
                       ("debian_dists_bookworm-updates_InRelease", "Thu, 26 Nov 2026"),
                       ("debian_dists_bookworm_InRelease", "Sat, 11 Jul 2026")):
        (lists / f"deb.debian.org_{name}").write_text(f"Origin: Debian\nDate: {date}\n")
    assert release_date(tmp_path, "bookworm") == "Sat, 11 Jul 2026"
    assert release_date(tmp_path, "trixie") == "Fri, 27 Nov 2026"   # none of its own: the first


def test_a_missing_maker_is_refused_never_swapped_for_the_other(monkeypatch) -> None:
    import imgkit.builder.base as base
    real_which = shutil.which
    monkeypatch.setattr(base.shutil, "which",
                        lambda name: None if name == "mmdebstrap" else real_which(name))
    with pytest.raises(HostError, match="mmdebstrap is not installed") as info:
        make_base(None, "imgkit/debian:bookworm", load().os_release("bookworm"),  # type: ignore[arg-type]
                  "http://deb.debian.org/debian", print)
    assert "apt-get install mmdebstrap" in info.value.hint
    assert "--base-source debootstrap makes a base of other bytes" in info.value.hint


def test_another_architectures_root_without_arch_test_is_refused_before_any_work(monkeypatch) -> None:
    """mmdebstrap says it only after fetching the package lists: imgkit first, with the fix."""
    import imgkit.builder.base as base
    real_which = shutil.which
    monkeypatch.setattr(base.shutil, "which",
                        lambda name: None if name == "arch-test" else real_which(name) or name)
    monkeypatch.setattr(base.platforms, "can_run", lambda platform: True)
    monkeypatch.setattr(base.platforms, "host", lambda: "linux/amd64")
    with pytest.raises(HostError, match="linux/arm64: mmdebstrap needs arch-test") as info:
        make_base(None, "imgkit/debian:bookworm", load().os_release("bookworm"),  # type: ignore[arg-type]
                  "http://deb.debian.org/debian", print, platform="linux/arm64")
    assert info.value.hint == "apt-get install arch-test"


def test_ubuntu_is_not_made_by_mmdebstrap() -> None:
    with pytest.raises(UsageError, match="mmdebstrap's ubuntu minbase lacks apt") as info:
        make_base(None, "imgkit/ubuntu:noble", load().os_release("noble"),  # type: ignore[arg-type]
                  "http://archive.ubuntu.com/ubuntu", print, maker="mmdebstrap")
    assert "debootstrap" in info.value.hint


def test_an_unknown_base_source_is_refused() -> None:
    class NoImages:
        def image(self, ref: str) -> None:
            return None
    with pytest.raises(UsageError, match="unknown base source 'mmdebstrp'") as info:
        ensure_base(NoImages(), "imgkit/debian:bookworm", load().os_release("bookworm"),  # type: ignore[arg-type]
                    source="mmdebstrp", log=lambda _: None)
    assert "mmdebstrap" in info.value.hint


@pytest.mark.skipif(shutil.which("debootstrap") is None, reason="needs debootstrap installed")
def test_a_missing_keyring_is_refused_not_skipped(tmp_path: Path) -> None:
    # debootstrap itself would go on without checking signatures
    noble = dataclasses.replace(load().os_release("noble"), keyring=str(tmp_path / "none.gpg"))
    with pytest.raises(HostError, match="keyring .*none.gpg is missing") as info:
        make_base(None, "imgkit/ubuntu:noble", noble, "http://archive.ubuntu.com/ubuntu",  # type: ignore[arg-type]
                  print)
    assert "docker tag <a ubuntu:24.04 image> imgkit/ubuntu:noble" in info.value.hint


def test_no_mirror_for_the_distro_says_how_to_give_one() -> None:
    with pytest.raises(HostError, match="no ubuntu mirror") as info:
        make_base(None, "imgkit/ubuntu:jammy", load().os_release("jammy"), None, print)  # type: ignore[arg-type]
    assert "--mirror ubuntu=URL" in info.value.hint


def test_the_base_gets_updates_and_security_pockets() -> None:
    bookworm = load().os_release("bookworm")
    mirrors = parse_mirrors(["debian-security=http://sec.example.org/debian-security"])
    security = pick_security_mirror("debian", "http://deb.example.org/debian", mirrors)
    assert apt_sources(bookworm, "http://deb.example.org/debian", security).splitlines() == [
        "deb http://deb.example.org/debian bookworm main",
        "deb http://deb.example.org/debian bookworm-updates main",
        "deb http://sec.example.org/debian-security bookworm-security main"]
    noble = load().os_release("noble")
    assert apt_sources(noble, "http://archive.ubuntu.com/ubuntu", None).splitlines() == [
        "deb http://archive.ubuntu.com/ubuntu noble main universe",
        "deb http://archive.ubuntu.com/ubuntu noble-updates main universe"]


def test_a_base_another_imgkit_is_making_is_waited_for_not_made_twice() -> None:
    """Two builds starting together on a fresh host: the second waits for the first's base
    (a lock on the host, per base) and finds it made, rather than making its own."""
    import threading

    from imgkit.builder.base import ensure_base
    from imgkit.builder.hostlock import one_maker_of

    from .helpers.fakes import FakeEngine
    ref = "imgkit-test-lock/debian:bookworm"
    engine = FakeEngine()
    holding, release = threading.Event(), threading.Event()

    def first_maker() -> None:
        with one_maker_of(ref, lambda _: None):
            holding.set()
            release.wait(10)
            engine.add(ref)               # what it made

    maker = threading.Thread(target=first_maker)
    maker.start()
    holding.wait(10)
    said: list[str] = []
    threading.Timer(0.3, release.set).start()
    bookworm = load().os_release("bookworm")
    assert ensure_base(engine, ref, bookworm, source="pull", log=said.append) == "present"  # type: ignore[arg-type]
    maker.join(10)
    assert said == [f"another imgkit is making {ref} on this host: waiting for it (Ctrl-C stops waiting)",
                    f"the other imgkit finished making {ref}"]


def test_the_base_label_names_the_makers_version_or_the_tool_alone() -> None:
    from imgkit.builder.base import maker_version
    assert maker_version("imgkit-no-such-maker") == "imgkit-no-such-maker"
    for maker in ("mmdebstrap", "debootstrap"):
        if shutil.which(maker):         # .ci/setup-host.sh installs both
            name, version = maker_version(maker).split(" ", 1)
            assert name == maker and version[0].isdigit(), version
