"""The root of every image: a Debian or Ubuntu base, pulled when a registry answers,
otherwise made locally from the distro's mirror (mmdebstrap, or debootstrap when asked, +
docker import), so that a machine with only package mirrors can build the whole matrix."""
from __future__ import annotations

import glob
import os
import re
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

from .. import labels, platforms
from ..engine import Engine
from ..errors import HostError, UsageError
from ..matrix.compat import OsRelease
from .base_image import pull_base
from .hostlock import one_maker_of

REGISTRY_PROBE = ("registry-1.docker.io", 443)
# The tools that make a base, each with the distros it makes right, the default first. The
# tool is an input: two tools make the same packages but not the same bytes, so a missing
# tool is refused, never swapped for the other. mmdebstrap makes debootstrap's Debian
# packages, the same versions, in half the time (docs/benchmarks.md); its Ubuntu minbase
# lacks apt, gpgv and the archive keyring that debootstrap's has.
MAKERS = {"mmdebstrap": ("debian",), "debootstrap": ("debian", "ubuntu")}
SOURCES = ("auto", "pull", *MAKERS)


def default_maker(os_release: OsRelease) -> str:
    """The first tool of MAKERS that makes the release's distro right."""
    return next(m for m, distros in MAKERS.items() if os_release.distro in distros)


# What may reach debootstrap's argv and the base image's LABEL: no quotes, no spaces.
MIRROR_PATTERN = re.compile(r"^https?://[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]+$")


def parse_mirrors(given: list[str]) -> dict[str, str]:
    """--mirror entries, `URL` (any distro), `DISTRO=URL` or `DISTRO-security=URL`,
    as {key or "": URL}."""
    mirrors: dict[str, str] = {}
    for entry in given:
        head = entry.split("://", 1)[0]
        name, _, url = entry.partition("=") if "=" in head else ("", "", entry)
        if not MIRROR_PATTERN.match(url) or not re.fullmatch(r"[a-z-]*", name):
            raise UsageError(f"--mirror {entry!r} is not an http(s) URL or DISTRO=URL",
                             hint="e.g. --mirror ubuntu=http://archive.ubuntu.com/ubuntu")
        mirrors.setdefault(name, url)
    return mirrors


def base_settings(mirrors: list[str], source: str) -> dict[str, str]:
    """--mirror entries as parse_mirrors reads them, once --base-source is known to be one
    of SOURCES (checked even when every base is already here)."""
    if source not in SOURCES:
        raise UsageError(f"--base-source {source!r} is not one of {', '.join(SOURCES)}")
    return parse_mirrors(mirrors)


def pick_mirror(distro: str, mirrors: dict[str, str]) -> str | None:
    """The mirror for `distro`: its own --mirror entry, else a plain one, else the one the
    host's apt already uses (never a hard-coded host)."""
    return mirrors.get(distro) or mirrors.get("") or host_mirror(distro)


def pick_security_mirror(distro: str, mirror: str, mirrors: dict[str, str]) -> str | None:
    """Where the base's security updates come from: a `DISTRO-security=URL` entry, else the
    host's own security source; Ubuntu archive mirrors carry the -security pocket."""
    given = mirrors.get(f"{distro}-security") or host_mirror(distro, security=True)
    return given or (mirror if distro == "ubuntu" else None)


def host_mirror(distro: str = "debian", sources: list[str] | None = None,
                security: bool = False) -> str | None:
    """The `distro` mirror (or security mirror) the host's apt already uses, if any."""
    if sources is None:
        sources = sorted(glob.glob("/etc/apt/sources.list.d/*.sources")
                         + glob.glob("/etc/apt/sources.list.d/*.list")
                         + ["/etc/apt/sources.list"])
    for path in sources:
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        for uri in re.findall(r"(?m)^\s*(?:deb\s+(?:\[[^\]]*\]\s+)?|URIs:\s*)(https?://\S+)", text):
            if distro in uri and ("security" in uri) == security:
                return uri.rstrip("/")
    return None


def pockets(os_release: OsRelease, mirror: str, security: str | None) -> list[tuple[str, str]]:
    """(suite, mirror) of each pocket a made base takes packages from: the release, its
    updates, its security fixes (where a security mirror is known)."""
    name = os_release.name
    return [(name, mirror), (f"{name}-updates", mirror),
            *([(f"{name}-security", security)] if security else [])]


def apt_sources(os_release: OsRelease, mirror: str, security: str | None) -> str:
    """The base's sources.list: every pocket (debootstrap writes only the release's, which
    would leave every image without security updates)."""
    comps = " ".join(os_release.components)
    return "".join(f"deb {url} {suite} {comps}\n"
                   for suite, url in pockets(os_release, mirror, security))


def registry_reachable(timeout: float = 3.0) -> bool:
    try:
        with socket.create_connection(REGISTRY_PROBE, timeout=timeout):
            return True
    except OSError:
        return False


def ensure_base(engine: Engine, ref: str, os_release: OsRelease, *, source: str = "auto",
                mirrors: dict[str, str] | None = None, log: Callable[[str], None] = print,
                platform: str | None = None) -> str:
    """Make sure `ref` exists; returns how it was obtained ('present', 'pulled', or the tool
    that made it). `platform` (default: the host's): another one is made, never pulled (a
    registry's tag would give the host's platform)."""
    if engine.image(ref) is not None:
        return "present"
    with one_maker_of(ref, log):          # two builds starting together make it once
        if engine.image(ref) is not None:
            return "present"
        return _obtain(engine, ref, os_release, source, mirrors, log, platform)


def _obtain(engine: Engine, ref: str, os_release: OsRelease, source: str,
            mirrors: dict[str, str] | None, log: Callable[[str], None],
            platform: str | None) -> str:
    if os_release.given:      # a team's own base: pulled as named, never made in its place
        log(f"pulling {ref}")
        pull_base(engine, ref)
        return "pulled"
    if source not in SOURCES:
        raise UsageError(f"unknown base source {source!r}", hint=", ".join(SOURCES))
    if platform is not None and platform != platforms.host():
        if source == "pull":
            raise UsageError(f"{ref} for {platform}: the base of another platform is made, "
                             "not pulled", hint="--base-source auto makes it")
    elif source in ("auto", "pull") and registry_reachable():
        log(f"pulling {os_release.image} for {ref}")
        if engine.pull(os_release.image):
            info = engine.image(os_release.image)
            if info is None:
                raise HostError(f"{os_release.image} was pulled, but the engine does not show it")
            engine.tag(info.id, ref)
            return "pulled"
        if source == "pull":
            raise HostError(f"could not pull {os_release.image}")
    elif source == "pull":
        raise HostError("no image registry is reachable",
                        hint="--base-source auto makes the base from the distro's mirror")
    maker = source if source in MAKERS else default_maker(os_release)
    if mirrors is None:
        mirrors = parse_mirrors(os.environ.get("IMGKIT_MIRROR", "").split())
    mirror = pick_mirror(os_release.distro, mirrors)
    security = pick_security_mirror(os_release.distro, mirror, mirrors) if mirror else None
    make_base(engine, ref, os_release, mirror, log, security=security, platform=platform,
              maker=maker)
    return maker


def make_missing_base(engine: Engine, ref: str, os_release: OsRelease) -> str:
    """ensure_base as `imgkit lock` needs it (the mirror from IMGKIT_MIRROR or the host's
    apt sources), saying what it does on stderr."""
    from ..console import stderr_line
    return ensure_base(engine, ref, os_release, log=lambda m: stderr_line(f"base: {m}"))


DEBOOTSTRAP_SCRIPTS = Path("/usr/share/debootstrap/scripts")
# mmdebstrap's hook that merges /usr as debootstrap does (the usr-is-merged package);
# without it, a minbase gets the usrmerge package, and perl with it.
MERGED_USR_HOOK = Path("/usr/share/mmdebstrap/hooks/merged-usr")


def maker_command(maker: str, os_release: OsRelease, root: Path, mirror: str,
                  platform: str | None = None, security: str | None = None) -> list[str]:
    """The command that makes minbase of `os_release` in `root`, checked against the
    distro's archive keyring. For another platform, its architecture: the packages'
    scripts then run under QEMU. mmdebstrap takes each package's newest version from every
    pocket (`security`: the security mirror), as the registry's images are made: the
    python layer's upgrade then has nothing to do, where after debootstrap (the release
    alone) it replaces a dozen packages, 6 s natively and 42 s under QEMU, and the image
    carries both copies of each."""
    if maker == "debootstrap":
        return debootstrap_command(os_release, root, mirror, platform)
    arch = [f"--architectures={platforms.debian_arch(platform)}"] if platform else []
    # apt's lists are kept: release_date reads them, normalise_root drops them
    return ["mmdebstrap", *arch, "--variant=minbase", "--mode=root", "--format=directory",
            f"--keyring={os_release.keyring}", f"--components={','.join(os_release.components)}",
            f"--hook-dir={MERGED_USR_HOOK}", "--skip=cleanup/apt/lists", "--quiet",
            os_release.name, str(root), *apt_sources(os_release, mirror, security).splitlines()]


def debootstrap_command(os_release: OsRelease, root: Path, mirror: str,
                        platform: str | None = None) -> list[str]:
    """debootstrap would otherwise go on unverified when the keyring is missing; its
    script is named so that a release newer than the host's debootstrap works too."""
    arch = [f"--arch={platforms.debian_arch(platform)}"] if platform else []
    return ["debootstrap", *arch, "--variant=minbase", f"--keyring={os_release.keyring}",
            f"--components={','.join(os_release.components)}",
            os_release.name, str(root), mirror, str(DEBOOTSTRAP_SCRIPTS / os_release.script)]


def release_date(root: Path, suite: str) -> str:
    """The Date: of the release's Release file the tree was made from (the tool keeps it in
    the tree's apt lists, beside its pockets'): how fresh the mirror was, not when imgkit
    ran."""
    lists = root / "var/lib/apt/lists"
    for path in sorted(lists.glob(f"*_dists_{suite}_*Release")) or sorted(lists.glob("*Release")):
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("Date:"):
                return line.split(":", 1)[1].strip().replace('"', "")
    return "unknown"


def pocket_dates(os_release: OsRelease, mirror: str, security: str | None) -> list[str]:
    """The Date: of the release's -updates and -security pockets as the mirrors publish them
    now (the first lines of each InRelease); those that do not answer are left out."""
    import urllib.request
    urls = [f"{mirror}/dists/{os_release.name}-updates/InRelease"]
    if security:
        urls.append(f"{security}/dists/{os_release.name}-security/InRelease")
    dates = []
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=15) as answer:
                head = answer.read(8192).decode("utf-8", "replace")
        except (OSError, ValueError):
            continue
        dates += [line.split(":", 1)[1].strip() for line in head.splitlines()
                  if line.startswith("Date:")][:1]
    return dates


def mirror_epoch(dates: list[str]) -> int | None:
    """The newest of Release-file dates ("Sat, 10 Aug 2024 09:40:37 UTC") in seconds: the
    state of the mirror the base was made from, the base's date, never the clock."""
    from email.utils import parsedate_to_datetime
    seconds = []
    for date in dates:
        try:
            seconds.append(int(parsedate_to_datetime(date).timestamp()))
        except (TypeError, ValueError, IndexError):
            continue
    return max(seconds, default=None)


NORMALISE = Path(__file__).resolve().parent.parent / "image_files/bin/imgkit-normalise"


def normalise_root(root: Path, epoch: int) -> None:
    """What every build step does to its layer (imgkit-normalise), done to the made tree,
    and apt's lists dropped (the python layer fetches its own; removing the base's there
    would leave whiteouts stamped with the build time)."""
    for path in (root / "var/lib/apt/lists").iterdir():      # `partial/` too
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    for name in ("etc/hostname", "etc/resolv.conf"):      # the host's, copied by debootstrap
        (root / name).unlink(missing_ok=True)
    done = subprocess.run(["sh", str(NORMALISE), str(root)], capture_output=True, text=True,
                          env={**os.environ, "SOURCE_DATE_EPOCH": str(epoch)})
    if done.returncode != 0:
        raise HostError(f"normalising the made base failed: {done.stderr.strip()[-500:]}")


def tar_root(root: Path, tarball: Path, epoch: int) -> None:
    """The tree as a tarball that is the same bytes wherever the same tree is made: names
    sorted, numeric owners, no file newer than `epoch`, GNU format (no access times)."""
    subprocess.run(["tar", "-C", str(root), "--sort=name", "--numeric-owner", "--format=gnu",
                    f"--mtime=@{epoch}", "--clamp-mtime", "-cf", str(tarball), "."], check=True)


def make_base(engine: Engine, ref: str, os_release: OsRelease, mirror: str | None,
              log: Callable[[str], None], security: str | None = None,
              platform: str | None = None, maker: str | None = None) -> None:
    """Make `ref` with `maker` from `mirror` (its -security pocket from `security`) and
    load it into the engine, for `platform` (default: the host's; another under QEMU).
    Made from the same mirror state, it is the same image on any machine: dated by the
    mirror's newest Release file, normalised, tarred in a fixed order."""
    platform = platform or platforms.host()
    maker = maker or default_maker(os_release)
    mirror = _can_make(ref, os_release, mirror, platform, maker)
    name, distro = os_release.name, os_release.distro
    dated = pocket_dates(os_release, mirror, security)
    with tempfile.TemporaryDirectory(prefix="imgkit-rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        emulated = platform != platforms.host()
        log(f"making {ref} with {maker} from {mirror} "
            + (f"for {platform} under QEMU (about 2 min)" if emulated else "(under a minute)"))
        _run_maker(maker, os_release, root, mirror, security, platform if emulated else None,
                   mirror_epoch(dated))
        if security is None:
            log(f"no {distro} security mirror known: {ref} gets no -security pocket "
                f"(--mirror {distro}-security=URL adds one)")
        _settle(root, apt_sources(os_release, mirror, security))
        released = release_date(root, name)
        epoch = mirror_epoch([released, *dated])
        if epoch is None:
            raise HostError(f"{mirror} gave {name} a Release file with no date ({released!r}): "
                            f"{ref} cannot be dated")
        normalise_root(root, epoch)
        tarball = Path(tmp) / "rootfs.tar"
        tar_root(root, tarball, epoch)
        engine.load_rootfs(tarball, ref, platform=platform, labels={
            labels.BASE_SOURCE: base_source_label(maker, os_release, mirror, security),
            labels.BASE_RELEASE_DATE: released},
            env=["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                 "LANG=C.UTF-8"], cmd=["/bin/bash"], created=epoch)


def base_source_label(maker: str, os_release: OsRelease, mirror: str, security: str | None) -> str:
    """What the base was made with and from: the tool with its version, then each suite it
    took packages from with its mirror ("mmdebstrap 1.3.5 bookworm http://deb.debian.org/debian,
    bookworm-updates http://deb.debian.org/debian, bookworm-security ..."): the inputs two
    machines must share to make the same base."""
    taken = (pockets(os_release, mirror, security) if maker == "mmdebstrap"
             else [(os_release.name, mirror)])
    return f"{maker_version(maker)} " + ", ".join(f"{suite} {url}" for suite, url in taken)


def maker_version(maker: str) -> str:
    """The tool and its version as it says them ("mmdebstrap 1.3.5"): another version of the
    tool may make other bytes, so the base's label names it. The tool alone where it says none."""
    try:
        said = subprocess.run([maker, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return maker
    first = said.strip().splitlines()[0] if said.strip() else ""
    return first if first.startswith(maker + " ") else maker


def _run_maker(maker: str, os_release: OsRelease, root: Path, mirror: str, security: str | None,
               platform: str | None, epoch: int | None) -> None:
    """The tool's run; mmdebstrap dates what it writes by SOURCE_DATE_EPOCH (the mirror's
    pockets, never the clock)."""
    env = {**os.environ, **({"SOURCE_DATE_EPOCH": str(epoch)} if epoch is not None else {})}
    proc = subprocess.run(maker_command(maker, os_release, root, mirror, platform, security),
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-10:])
        raise HostError(f"{maker} {os_release.name} from {mirror} failed:\n{tail}")


def _settle(root: Path, sources: str) -> None:
    """The made root's apt sources, and apt kept small and quiet: no recommends, no caches."""
    (root / "etc/apt/sources.list").write_text(sources)
    (root / "etc/apt/apt.conf.d/90imgkit").write_text(
        'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n')
    shutil.rmtree(root / "var/cache/apt/archives", ignore_errors=True)
    (root / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
    for cache in (root / "var/cache/apt").glob("*.bin"):
        cache.unlink()


def _can_make(ref: str, os_release: OsRelease, mirror: str | None, platform: str,
              maker: str) -> str:
    """The mirror to make `ref` from, once everything `maker` needs is known to be here
    (a known platform this host runs, the mirror, the tool, the keyring, root)."""
    name, distro = os_release.name, os_release.distro
    if platform not in platforms.KNOWN:
        raise UsageError(f"{ref}: imgkit makes bases for {', '.join(platforms.KNOWN)}, "
                         f"not {platform}")
    if not platforms.can_run(platform):
        raise HostError(f"{ref} for {platform}: this {platforms.host()} host cannot run "
                        f"{platform} programs (the packages' scripts need it)",
                        hint=platforms.EMULATION_HINT)
    if distro == "ubuntu" and platform != "linux/amd64" and mirror and "ports" not in mirror:
        raise UsageError(f"{ref} for {platform}: Ubuntu's {platform} packages are on its ports "
                         f"mirror, not {mirror}",
                         hint="--mirror ubuntu=http://ports.ubuntu.com/ubuntu-ports")
    if mirror is None:
        raise HostError(f"no {distro} mirror found in the host's apt sources to make {ref}",
                        hint=f"pass --mirror {distro}=URL or set IMGKIT_MIRROR")
    if distro not in MAKERS[maker]:
        raise UsageError(f"{ref}: {maker}'s {distro} minbase lacks apt and the archive "
                         "keyring", hint=f"--base-source auto makes it with "
                                         f"{default_maker(os_release)}")
    others = " or ".join(f"--base-source {m}" for m, distros in MAKERS.items()
                         if m != maker and distro in distros)
    fallback = (f"; {others} makes a base of other bytes (every image above it changes)"
                if others else "")
    if shutil.which(maker) is None:
        raise HostError(f"{maker} is not installed; it makes the base image when no registry "
                        "is reachable", hint=f"apt-get install {maker}{fallback}")
    if maker == "mmdebstrap" and not MERGED_USR_HOOK.is_dir():
        raise HostError(f"mmdebstrap's merged-usr hook {MERGED_USR_HOOK} is missing",
                        hint=f"install mmdebstrap 1.0 or later{fallback}")
    if maker == "mmdebstrap" and platform != platforms.host() and not shutil.which("arch-test"):
        raise HostError(f"{ref} for {platform}: mmdebstrap needs arch-test to make another "
                        "architecture's root", hint="apt-get install arch-test")
    if not Path(os_release.keyring).is_file():
        raise HostError(f"the {distro} archive keyring {os_release.keyring} is missing: "
                        f"{name} from {mirror} cannot be verified",
                        hint=f"install it (apt-get install {distro}-keyring or "
                             f"{distro}-archive-keyring), or provide the base: "
                             f"docker tag <a {os_release.image} image> {ref}")
    if os.geteuid() != 0:
        raise HostError(f"making the base image with {maker} needs root",
                        hint="run once as root, or provide the base image: "
                             f"docker tag <a {os_release.image} image> {ref}")
    return mirror
