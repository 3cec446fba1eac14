"""A team's own base image (`base:` in a family) as the OS release its chain builds on: what
the image holds (read from it by base_image.py, never guessed from its name), and what a
family on it may not ask for. Pure logic: the image's answers come in as data."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import CompatError
from .compat import OsRelease

APT_DISTROS = ("debian", "ubuntu")   # imgkit's templates install python and packages with apt


@dataclass(frozen=True)
class BaseFacts:
    """What a base image holds, as read from it."""

    ref: str                 # as the family wrote it
    pinned: str              # what a build's FROM names: REPO@sha256:... (the ref itself when
                             # the image has no registry digest: built here, never pushed)
    image_id: str
    os_id: str               # /etc/os-release's ID (debian, ubuntu, rhel...) and its ID_LIKE
    os_like: str
    codename: str            # VERSION_CODENAME (bookworm, noble)
    version: str             # VERSION_ID (12, 24.04)
    pretty: str              # PRETTY_NAME
    glibc: str | None        # getconf GNU_LIBC_VERSION's number
    python: str | None       # python3's major.minor; None when it has none
    cuda: str | None         # the CUDA runtime it holds: CUDA_VERSION, else libcudart's version
    cuda_libs: tuple[tuple[str, str], ...] = ()   # the CUDA libraries it holds: name, version


def base_name(ref: str) -> str:
    """The name a base gives the layers imgkit tags on it (its `os` value, `{os}` in tags):
    the image's last path part and tag, e.g. nvcr.io/nvidia/cuda:12.8.1-runtime-ubuntu24.04
    -> cuda-12.8.1-runtime-ubuntu24.04 (an untagged digest: its first 12 hex digits)."""
    path, _, digest = ref.partition("@")
    last = path.rsplit("/", 1)[-1]
    name, _, tag = last.partition(":")
    label = tag or (digest.split(":", 1)[-1][:12] if digest else "latest")
    return re.sub(r"[^a-z0-9.]+", "-", f"{name}-{label}".lower()).strip("-.")[:64]


# a CUDA library file's name -> the CUDA runtime layer's library it is (cuda_libs' names)
LIBRARY_FILES = {"libcudart": "cudart", "libnvrtc": "nvrtc", "libcublas": "cublas",
                 "libcufft": "cufft", "libcurand": "curand", "libcusolver": "cusolver",
                 "libcusparse": "cusparse", "libnvJitLink": "nvjitlink"}


def parse_probe(output: str) -> tuple[dict[str, str], dict[str, str]]:
    """The base probe's `key=value` lines (base_image.PROBE), and the CUDA libraries its
    `lib=` lines name: library -> its most exact version (libcudart.so.12.4.127 over
    libcudart.so.12)."""
    found: dict[str, str] = {}
    libs: dict[str, str] = {}
    for line in output.splitlines():
        key, sep, value = line.partition("=")
        if not sep or not value.strip():
            continue
        if key == "lib":
            match = re.search(r"/(lib\w+)\.so\.(\d+(?:\.\d+)*)$", value.strip())
            name = LIBRARY_FILES.get(match.group(1)) if match else None
            if match and name and len(match.group(2)) > len(libs.get(name, "")):
                libs[name] = match.group(2)
            continue
        found[key.strip()] = value.strip()
    return found, libs


def facts_from(ref: str, pinned: str, image_id: str, env: dict[str, str],
               probed: tuple[dict[str, str], dict[str, str]]) -> BaseFacts:
    """What the image holds, from its config's ENV and what the probe printed in it."""
    probe, libs = probed
    cudart = libs.get("cudart", "")
    cuda = env.get("CUDA_VERSION") or (cudart if cudart.count(".") >= 1 else None)
    return BaseFacts(ref=ref, pinned=pinned, image_id=image_id, os_id=probe.get("id", ""),
                     os_like=probe.get("like", ""), codename=probe.get("codename", ""),
                     version=probe.get("version", ""), pretty=probe.get("pretty", "") or ref,
                     glibc=probe.get("glibc", "").removeprefix("glibc ") or None,
                     python=probe.get("python") or None, cuda=cuda or None,
                     cuda_libs=tuple(sorted(libs.items())))


def os_release_of(facts: BaseFacts, known: dict[str, OsRelease]) -> OsRelease:
    """The OS release a chain on this base builds on, or why it cannot: imgkit installs
    with apt, and needs a python3 (the base's own, else the one its OS release ships)."""
    if facts.os_id not in APT_DISTROS and not set(facts.os_like.split()) & set(APT_DISTROS):
        raise CompatError(f"{facts.ref} is {facts.pretty}, not Debian or Ubuntu based: imgkit's "
                          "layers install with apt", hint="build on a Debian or Ubuntu based image")
    release = known.get(facts.codename)
    python = facts.python or (release.python if release else None)
    if python is None:
        raise CompatError(f"{facts.ref} ({facts.pretty}) has no python3, and imgkit does not "
                          f"know which {facts.codename or 'release'} ships",
                          hint="use a base with python3, or one on a release imgkit knows: "
                               + ", ".join(sorted(known)))
    return OsRelease(name=facts.codename or base_name(facts.ref),
                     distro=facts.os_id if facts.os_id in APT_DISTROS else "debian",
                     release=facts.version, python=python, image=facts.pinned, keyring="",
                     script="", components=(), glibc=facts.glibc or (release.glibc if release
                                                                      else None),
                     cuda=facts.cuda, cuda_libs=facts.cuda_libs, given=True)


def check_cuda(os_release: OsRelease, cuda: str) -> None:
    """A family on a base that holds a CUDA runtime asks for that CUDA release."""
    if os_release.cuda is None:
        return
    held = ".".join(os_release.cuda.split(".")[:2])
    if held != cuda:
        raise CompatError(f"the base {os_release.image} holds the CUDA {os_release.cuda} "
                          f"runtime; the family asks for CUDA {cuda}",
                          hint=f"use cuda \"{held}\" on this base, or a base with CUDA {cuda} "
                               "(or none)")
