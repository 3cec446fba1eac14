"""What is known to work: CUDA -> exact component pins, cuDNN/NCCL choices, minimum
drivers, and which CUDA/cuDNN/NCCL each framework build was made for.

The facts live in data/compat.yaml (with their sources); this module only reads and answers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from difflib import get_close_matches
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from ..errors import CompatError
from ..shipped import PACKAGE_DIR

if TYPE_CHECKING:
    from .compat_file import CompatDocument

SHIPPED = PACKAGE_DIR / "matrix" / "data" / "compat.yaml"


def version_key(text: str) -> Version:
    """For sorting versions as versions: 12.10 after 12.9."""
    return Version(text)


def matches_prefix(version: str, series: str) -> bool:
    """'8.6.0.163' is in series '8', '8.6' and '8.6.0.163'; not in '8.60'."""
    v, s = Version(version).release, Version(series).release
    return v[: len(s)] == s


def in_range(version: str, spec: str) -> bool:
    """Whether `version` is in a PEP 440 range such as '>=8.6,<9'."""
    return SpecifierSet(spec).contains(Version(version), prereleases=True)


@dataclass(frozen=True)
class CudaRelease:
    version: str
    wheel_suffix: str
    driver_toolkit: str             # "" where the data does not say (minor_compat still holds)
    driver_minor_compat: str
    components: tuple[tuple[str, str], ...]  # (component, exact version)
    cudnn: tuple[str, ...]
    nccl: tuple[str, ...]
    packages: tuple[tuple[str, str], ...] = ()  # this release's own wheel names (CUDA 13 drops
                                                # the suffix for most components)
    platforms: tuple[str, ...] = ("linux/amd64",)   # with a wheel of every component
    # (platform, layer, version): a cudnn/nccl version above without a wheel for it
    missing: frozenset[tuple[str, str, str]] = frozenset()


@dataclass(frozen=True)
class FrameworkBuild:
    name: str
    version: str
    pip: str
    cuda: str
    cudnn: str
    nccl: str
    python: tuple[str, ...]
    apt: tuple[str, ...]
    dlopen: tuple[str, ...]
    platforms: tuple[str, ...] = ("linux/amd64",)   # with a GPU build on the index


@dataclass(frozen=True)
class OsRelease:
    name: str       # the suite name, as in the matrix: bookworm, jammy
    distro: str     # debian or ubuntu
    release: str    # 12, 22.04
    python: str     # the python3 it ships, major.minor
    image: str      # registry image of it, pulled when a registry answers
    keyring: str    # archive keyring debootstrap checks the mirror against
    script: str     # debootstrap's script for it (sid, gutsy)
    components: tuple[str, ...]  # archive components its images use
    glibc: str | None = None     # the libc6 it ships: which manylinux wheels it takes
    cuda: str | None = None      # a team's own base: the CUDA runtime it already holds
    cuda_libs: tuple[tuple[str, str], ...] = ()   # and its CUDA libraries: name, version
    given: bool = False          # a team's own base (`base:`): pulled as `image`, never made

    @property
    def title(self) -> str:
        return f"{self.distro.capitalize()} {self.release} ({self.name})"


@dataclass(frozen=True)
class Compat:
    cuda: dict[str, CudaRelease]
    packages: dict[str, str]
    os: dict[str, OsRelease]
    frameworks: dict[str, dict[str, FrameworkBuild]]
    # the oldest python an entry is for -> the venv's tools: (name, version, sha256)
    venv: dict[str, tuple[tuple[str, str, str], ...]] = field(default_factory=dict)

    # -- lookups that explain what would work ---------------------------------------
    def release(self, cuda: str) -> CudaRelease:
        if cuda not in self.cuda:
            raise CompatError(
                f"unknown CUDA version {cuda!r}",
                hint=f"known CUDA versions: {', '.join(sorted(self.cuda, key=version_key))} "
                     "(imgkit list --known shows what each offers)",
            )
        return self.cuda[cuda]

    def package(self, component: str, cuda: str) -> str:
        release = self.release(cuda)
        own = dict(release.packages).get(component)
        return own or self.packages[component].format(suffix=release.wheel_suffix)

    def resolve_cudnn(self, cuda: str, series: str, within: str | None = None) -> str:
        return self._resolve("cudnn", cuda, series, self.release(cuda).cudnn, within)

    def resolve_nccl(self, cuda: str, series: str, within: str | None = None) -> str:
        return self._resolve("nccl", cuda, series, self.release(cuda).nccl, within)

    def _resolve(self, what: str, cuda: str, series: str, known: tuple[str, ...],
                 within: str | None) -> str:
        """Newest known pin in `series` ('default' = newest allowed), inside `within`."""
        allowed = [v for v in known if within is None or in_range(v, within)]
        if series != "default":
            allowed = [v for v in allowed if matches_prefix(v, series)]
        if not allowed:
            choices = [v for v in known if within is None or in_range(v, within)]
            why = f" for a framework needing {what} {within}" if within else ""
            raise CompatError(
                f"{what} {series} is not available with CUDA {cuda}{why}",
                hint=f"{what} versions that work here: {', '.join(choices) or 'none'}",
            )
        return max(allowed, key=version_key)

    def platform_gap(self, cuda: str, platform: str, layer: str, version: str | None = None) -> str | None:
        """What has no wheel for `platform` in CUDA `cuda`'s `layer` ('cuda' for its
        components, or cudnn/nccl `version`): a pip requirement, or None when all do."""
        release = self.release(cuda)
        if layer == "cuda":
            if platform in release.platforms:
                return None
            return ", ".join(f"{self.package(c, cuda)}=={v}" for c, v in release.components)
        if version is None or (platform, layer, version) not in release.missing:
            return None
        return f"{self.package(layer, cuda)}=={version}"

    def framework(self, name: str, version: str) -> FrameworkBuild:
        builds = self.frameworks.get(name)
        if builds is None:
            near = get_close_matches(name, self.frameworks, n=1, cutoff=0.6)
            raise CompatError(f"unknown framework {name!r}"
                              + (f" (did you mean {near[0]!r}?)" if near else ""),
                              hint=f"known frameworks: {', '.join(sorted(self.frameworks))} "
                                   "(imgkit list --known shows every build)")
        if version not in builds:
            releases = sorted(builds, key=Version)
            near = [v for v in releases if v.startswith(f"{version}.")]
            raise CompatError(f"unknown {name} version {version!r}"
                              + (f" (did you mean {' or '.join(map(repr, near))}?)" if near else ""),
                              hint=f"known {name} builds: {', '.join(releases)} "
                                   "(imgkit list --known shows what each needs)")
        return builds[version]

    def os_release(self, os_name: str) -> OsRelease:
        if os_name not in self.os:
            raise CompatError(f"unknown OS {os_name!r}",
                              hint=f"known: {', '.join(sorted(self.os))}")
        return self.os[os_name]

    def venv_tools(self, python: str) -> tuple[tuple[str, str, str], ...]:
        """The pip and setuptools a venv of `python` gets: the newest entry at or under it."""
        fits = [key for key in self.venv if version_key(key) <= version_key(python)]
        if not fits:
            raise CompatError(f"no pip and setuptools are known for python {python}",
                              hint=f"add a venv.\"{python}\" entry to your compat.yaml "
                                   f"(known from python {min(self.venv, key=version_key, default='-')})")
        return self.venv[max(fits, key=version_key)]

    def min_driver(self, cuda: str) -> tuple[str, str]:
        """(driver for the full toolkit, "" when the data does not know it; driver under
        minor-version compatibility)."""
        rel = self.release(cuda)
        return rel.driver_toolkit, rel.driver_minor_compat

    def cuda_of_component(self, component: str, version: str) -> str | None:
        """The CUDA release whose `component` (cublas, cudart...) is of `version`'s series
        (major.minor): cuBLAS 11.11.3.6 -> 11.8, 12.4.2 -> 12.4. None when no release knows it."""
        series = version.split(".")[:2]
        for cuda, rel in self.cuda.items():
            pinned = dict(rel.components).get(component)
            if pinned and pinned.split(".")[:2] == series:
                return cuda
        return None

    def cuda_supported_by_driver(self, driver: str) -> str | None:
        """Newest known CUDA whose toolkit driver requirement `driver` meets."""
        ok = [c for c, r in self.cuda.items()
              if r.driver_toolkit and Version(driver) >= Version(r.driver_toolkit)]
        return max(ok, key=version_key) if ok else None


def _from_document(raw: CompatDocument) -> Compat:
    cuda = {
        ver: CudaRelease(
            version=ver,
            wheel_suffix=r.wheel_suffix,
            driver_toolkit=r.driver.toolkit or "",
            driver_minor_compat=r.driver.minor_compat,
            components=tuple(r.components.items()),
            cudnn=tuple(r.cudnn),
            nccl=tuple(r.nccl),
            packages=tuple(sorted(r.packages.items())),
            platforms=tuple(r.platforms),
            missing=frozenset((platform, layer, v)
                              for platform, layers in r.missing.items()
                              for layer, versions in layers.items() for v in versions),
        )
        for ver, r in raw.cuda.items()
    }
    frameworks = {
        name: {
            ver: FrameworkBuild(name=name, version=ver, pip=b.pip, cuda=b.cuda,
                                cudnn=b.cudnn, nccl=b.nccl, python=tuple(b.python),
                                apt=tuple(b.apt), dlopen=tuple(b.dlopen),
                                platforms=tuple(b.platforms))
            for ver, b in builds.items()
        }
        for name, builds in raw.frameworks.items()
    }
    return Compat(cuda=cuda, packages=dict(raw.packages),
                  os={k: OsRelease(name=k, distro=v.distro, release=v.release,
                                   python=v.python, image=v.image, keyring=v.keyring,
                                   script=v.script, components=tuple(v.components),
                                   glibc=v.glibc)
                      for k, v in raw.os.items()},
                  frameworks=frameworks,
                  venv={key: (("pip", tools.pip.version, tools.pip.sha256),
                              ("setuptools", tools.setuptools.version, tools.setuptools.sha256))
                        for key, tools in raw.venv.items()})


@lru_cache(maxsize=4)
def load(overlay: str | None = None) -> Compat:
    """The shipped compat data, with `overlay` (a compat file of the user's) merged over it;
    both validated (SpecError naming file and key)."""
    from . import compat_file
    data = compat_file.read(SHIPPED)
    if overlay is not None:
        extra = compat_file.read(Path(overlay))
        data = compat_file.merge(data, extra)
        compat_file.cross_check(data, compat_file.origins(Path(overlay), extra), str(SHIPPED))
    else:
        compat_file.cross_check(data, {}, str(SHIPPED))
    return _from_document(data)
