"""`pip check`, without pip's start-up: the requirements every installed distribution
declares, checked against what is installed, as pip 24's check does it (missing, conflicting,
a wheel built for another platform), with the messages pip prints. `python -m pip check`
imports most of pip (half a second of CPU, beside the framework's import on a small machine);
this imports only the `packaging` pip vendors (or the image's own), ~10x less. It runs in a
helper interpreter (child.py), so nothing of the image's is imported into the probe's."""
from __future__ import annotations

from . import child

CHECK = "out = check()\n"


def pip_check(timeout=120):
    """{ran, ok, problems} as `pip check` would say them, or {ran: False, error}."""
    out, why = child.run(__name__, CHECK, timeout)
    return out if out is not None else {"ran": False, "error": "the requirement check " + why}


def _packaging():
    """The packaging modules pip itself would use; the image's own `packaging` without pip."""
    try:
        from pip._vendor.packaging import requirements, tags, utils, version
    except ImportError:
        try:
            from packaging import requirements, tags, utils, version
        except ImportError:
            return None
    return requirements, tags, utils, version


def _installed(canonical):
    """canonical name -> distribution, the first on sys.path winning (as for pip)."""
    import importlib.metadata as metadata
    found = {}
    for dist in metadata.distributions():   # the probe's own root holds none
        name = dist.metadata["Name"]
        if name and canonical(name) not in found:
            found[canonical(name)] = dist
    return found


def _aarch64_too(tags, parsed):
    """The tags, and for NVIDIA's `..._sbsa` ones (its name for server arm64, which some of
    its aarch64 wheels write in WHEEL while their file names on the index say aarch64) the
    `..._aarch64` tag too: no installer lists sbsa, yet that is the wheel pip installed."""
    out = set(parsed)
    for tag in parsed:
        if tag.platform.endswith("_sbsa"):
            out.add(tags.Tag(tag.interpreter, tag.abi, tag.platform[:-len("sbsa")] + "aarch64"))
    return out


def check():
    modules = _packaging()
    if modules is None:
        return {"ran": False, "error": "pip is not installed in this environment "
                                       "(nor packaging, to check requirements without it)"}
    requirements, tags, utils, version = modules
    installed = _installed(utils.canonicalize_name)
    supported = frozenset(tags.sys_tags())
    missing, conflicting, unsupported, broken = [], [], [], []
    for name in sorted(installed):
        dist = installed[name]
        have = dist.version
        try:
            needs = [requirements.Requirement(text) for text in dist.requires or ()]
        except Exception as exc:  # packaging's InvalidRequirement, by whichever packaging
            broken.append("Error parsing dependencies of %s: %s" % (name, exc))
            continue
        for req in needs:
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            dep = utils.canonicalize_name(req.name)
            if dep not in installed:
                missing.append("%s %s requires %s, which is not installed." % (name, have, dep))
                continue
            dep_version = installed[dep].version
            try:
                fits = req.specifier.contains(version.Version(dep_version), prereleases=True)
            except version.InvalidVersion:
                fits = req.specifier.contains(dep_version, prereleases=True)
            if not fits:
                conflicting.append("%s %s has requirement %s, but you have %s %s."
                                   % (name, have, req, dep, dep_version))
        wheel = dist.read_text("WHEEL")
        if wheel:
            built_for = set()
            for line in wheel.splitlines():
                key, _, value = line.partition(":")
                if key.strip() == "Tag" and value.strip():
                    built_for.update(_aarch64_too(tags, tags.parse_tag(value.strip())))
            if built_for and built_for.isdisjoint(supported):
                unsupported.append("%s %s is not supported on this platform"
                                   % (dist.metadata["Name"], have))
    problems = missing + conflicting + unsupported + broken
    return {"ran": True, "ok": not problems, "problems": problems[:200]}
