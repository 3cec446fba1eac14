"""What an image says of its own stack, where NVIDIA's and NGC's images say it (the table:
data/claims.yaml), held against what the probe measured. The complaint most often made of
such images is that the environment names one version and the libraries are another.

Each variable or label the image sets that the table knows is one check: passed when the
measured version agrees as far as the claim goes; failed, naming both, when it does not or
the image holds no such library; an info line when imgkit measures nothing that answers it
(stated, not verified: never silence). A label and a variable that claim the same thing
and disagree are named together. Requirements (NVIDIA_REQUIRE_CUDA...) are floors on the
host's driver: driver_floor.py judges them, not this module.

Read from the image's config on the host (not by the probe), so an image that sets them
is judged whatever imgkit version built it. Pure logic: the config comes in as data."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .. import yamlload
from ..matrix.extension import canonical
from ..shipped import PACKAGE_DIR
from .facts import Report
from .stated import judged_by_name, unlisted, version_of
from .verdict import FAIL, INFO, PASS, Check


@dataclass(frozen=True)
class Claim:
    name: str
    kind: str                 # env or label
    sources: tuple[str, ...]  # nvidia, ngc
    claims: str | None        # a library (cudart...), framework:NAME, dist:NAME; None: unmeasured
    parts: int
    form: str
    requirement: bool = False
    note: str = ""


@lru_cache(maxsize=1)
def table() -> tuple[Claim, ...]:
    """data/claims.yaml, as claims."""
    raw = yamlload.read_file(PACKAGE_DIR / "verify" / "data" / "claims.yaml")
    return tuple(Claim(name=str(c["name"]), kind=str(c["kind"]), sources=tuple(c["sources"]),
                       claims=c.get("claims"), parts=int(c.get("parts", 3)),
                       form=str(c.get("form", "")), requirement=bool(c.get("requirement")),
                       note=str(c.get("note", ""))) for c in raw["claims"])


def _measured(report: Report, what: str) -> str | None:
    if what.startswith("dist:"):      # a Python package, by the start of its name
        prefix = what.split(":", 1)[1]
        return next((v for name, v in sorted(report.distributions.items())
                     if canonical(name).startswith(prefix)), None)
    if what.startswith("framework:"):
        framework = report.frameworks.get(what.split(":", 1)[1])
        return framework.version if framework is not None and framework.imported else None
    return report.libraries.version(what)


def claim_checks(report: Report, env: dict[str, str],
                 labels: dict[str, str] | None = None) -> list[Check]:
    """One check per claim the image's environment and labels make (see the module)."""
    said = {"env": env, "label": labels or {}}
    checks: list[Check] = []
    agreed: dict[str, tuple[str, str]] = {}     # what -> (the first claim of it, its version)
    for claim in table():
        text = said[claim.kind].get(claim.name)
        if not text or claim.requirement:
            continue
        where = f"{'env' if claim.kind == 'env' else 'label'} {claim.name}"
        if claim.claims in SPECIAL:
            checks.append(SPECIAL[claim.claims](report, where, claim, text))
            continue
        version = version_of(text, claim.parts)
        if claim.claims is None or version is None:
            checks.append(_unmeasured(where, claim, text, version is None))
            continue
        checks.append(_judged(report, where, claim, text, version))
        first = agreed.setdefault(claim.claims, (where, version))
        if version_of(first[1], len(version.split("."))) != version_of(version, len(first[1].split("."))):
            checks.append(Check(f"{where} / {first[0].split(' ', 1)[1]}", FAIL,
                                f"{first[0]} and {where} agree", f"{first[1]} and {version}",
                                f"the image states {claim.claims} twice and disagrees with "
                                f"itself: {first[0]} says {first[1]}, {where} says {version} "
                                "(a label or variable inherited from a parent and left stale?)"))
    return checks + unlisted_checks(report, env, labels)


# A variable or label the table does not know, named as the table's are (TENSORFLOW_VERSION,
# JAX_VERSION, OPENMPI_VERSION; com.nvidia.tensorrt.version): held to what the probe read by
# that name (a framework it imported, the image's python3, a library, a Python package or
# Debian package of that name, stated.py says which); the ones nothing answers are named
# together on one info line, never dropped.
UNLISTED_SHOWN = {"env": "env *_VERSION", "label": "label com.nvidia.*.version"}
# the projects' names for the frameworks the probe imports by their modules' names
FRAMEWORK_NAMES = {"pytorch": "torch", "paddlepaddle": "paddle"}


def unlisted_checks(report: Report, env: dict[str, str],
                    labels: dict[str, str] | None = None) -> list[Check]:
    checks: list[Check] = []
    for kind, said in (("env", env), ("label", labels or {})):
        unanswered: list[str] = []
        for name, text, thing, version in unlisted(kind, said):
            release = not judged_by_name(thing, text)
            answer = None if release else _answer(report, thing)
            if answer is None:
                unanswered.append(f"{name}={text}" + (" (NGC's release of the container)"
                                                      if release else ""))
                continue
            what, measured = answer
            ok = version_of(measured, len(version.split("."))) == version
            source = "variable" if kind == "env" else "label"
            checks.append(Check(f"{kind} {name}", PASS if ok else FAIL, version, measured,
                                "" if ok else f"the image says {name}={text}, but its {what} "
                                f"is {measured} (read by the {source}'s name)"))
        if unanswered:
            checks.append(Check(UNLISTED_SHOWN[kind], INFO, f"{len(unanswered)} more stated",
                                "stated, not measured",
                                f"the image also says {', '.join(unanswered)}: imgkit reads no "
                                "version of these by their names: not verified", required=False))
    return checks


def _answer(report: Report, thing: str) -> tuple[str, str] | None:
    """What the probe read under the name `thing` (tensorflow, python, cublaslt, numpy...):
    (what, its version), or None."""
    framework = report.frameworks.get(FRAMEWORK_NAMES.get(thing, thing))
    if framework is not None and framework.imported and framework.version:
        return thing, framework.version
    if thing == "python":
        return "python3", report.system.python
    family = next((f for f in report.libraries.families if f.lower() == thing), None)
    library = report.libraries.version(family) if family else None
    if family and library:
        return family, library
    wanted = canonical(thing)
    found = next(((name, version) for name, version in sorted(report.distributions.items())
                  if canonical(name) == wanted), None)
    return found or _installed(report, wanted)


def _installed(report: Report, wanted: str) -> tuple[str, str] | None:
    """The Python distribution, else the Debian package, of that very name in the inventory
    (when the probe listed it): `pip 26.3`, `Debian's ucx 1.13.1` (its epoch dropped)."""
    if report.inventory is None:
        return None
    for dist in report.inventory.python:
        if canonical(dist.name) == wanted:
            return f"Python package {dist.name}", dist.version
    for package in report.inventory.dpkg:
        if package.name == wanted:
            return f"Debian package {package.name}", re.sub(r"^\d+:", "", package.version)
    return None


def _unmeasured(where: str, claim: Claim, text: str, unreadable: bool) -> Check:
    what = ("not a version imgkit can read" if unreadable else
            claim.note or "nothing imgkit measures answers it yet")
    return Check(where, INFO, text, "stated, not measured",
                 f"the image says {claim.name}={text}; {what}: not verified", required=False)


def _judged(report: Report, where: str, claim: Claim, text: str, version: str) -> Check:
    what = claim.claims or ""
    name = what.split(":", 1)[-1]
    measured = _measured(report, what)
    if measured is None:
        return Check(where, FAIL, f"{name} {version}", "not found",
                     f"the image says {claim.name}={text} but holds no {name} the probe "
                     "could load")
    ok = version_of(measured, len(version.split("."))) == version    # 2.5.1+cu124 is 2.5.1
    return Check(where, PASS if ok else FAIL, version, measured,
                 "" if ok else f"the image says {claim.name}={text}, but its {name} is "
                 f"{measured}")


MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "sbsa": "aarch64", "aarch64": "aarch64",
            "arm64": "aarch64"}


def _machine(report: Report, where: str, claim: Claim, text: str) -> Check:
    """NVARCH: the architecture the image is for, against what its python3 runs as."""
    said, ran = MACHINES.get(text.strip()), report.system.machine
    if said is None or ran is None:
        return _unmeasured(where, claim, text, said is None)
    return Check(where, PASS if said == ran else FAIL, said, ran, "" if said == ran else
                 f"the image says {claim.name}={text}, but its python3 runs as {ran}")


def _compat(report: Report, where: str, claim: Claim, text: str) -> Check:
    """NV_CUDA_COMPAT_PACKAGE: the forward-compatibility package, whose libcuda the probe
    finds under /usr/local/cuda*/compat/."""
    found = report.system.cuda_compat
    return Check(where, PASS if found else FAIL, f"{text}'s libcuda", found[0] if found else
                 "none found", "" if found else f"the image says {claim.name}={text}, but "
                 "carries no forward-compatibility libcuda under /usr/local/cuda*/compat/")


SPECIAL = {"machine": _machine, "compat": _compat}
