"""What is installed in the image, for its SBOM: the OS (os-release), the Debian packages
(dpkg's status file) and every Python distribution (the metadata in each site- or
dist-packages directory). Standard library only, like the rest of the probe."""
from __future__ import annotations

import glob
import os
import sys

DPKG_STATUS = "/var/lib/dpkg/status"
SITE_GLOBS = ("/usr/lib/python3*/site-packages", "/usr/lib/python3*/dist-packages",
              "/usr/lib/python3/dist-packages", "/usr/local/lib/python3*/site-packages",
              "/usr/local/lib/python3*/dist-packages", "/opt/*/lib/python3*/site-packages",
              "/opt/*/*/lib/python3*/site-packages", "/root/.local/lib/python3*/site-packages",
              "/home/*/.local/lib/python3*/site-packages")
LIMIT = 20000   # entries of each kind: a real image has a few thousand


def os_release(path="/etc/os-release"):
    out = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, sep, value = line.strip().partition("=")
                if sep and key in ("ID", "VERSION_ID", "VERSION_CODENAME", "PRETTY_NAME"):
                    out[key.lower()] = value.strip().strip('"')
    except OSError:
        pass
    return out


def dpkg_packages(path=DPKG_STATUS):
    """Installed packages: name, version, architecture, source package."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return []
    out = []
    for stanza in text.split("\n\n"):
        fields = {}
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t"):
                continue
            key, sep, value = line.partition(":")
            if sep:
                fields[key] = value.strip()
        if fields.get("Package") and "installed" in fields.get("Status", "").split():
            out.append({"name": fields["Package"], "version": fields.get("Version", ""),
                        "arch": fields.get("Architecture", ""),
                        "source": fields.get("Source", "").split(" ")[0] or None})
        if len(out) >= LIMIT:
            break
    return out


def _metadata(path):
    """Name and Version from a METADATA or PKG-INFO file (its header: lines before a blank)."""
    fields = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if not line.strip():
                    break
                key, sep, value = line.partition(":")
                if sep and key in ("Name", "Version") and key not in fields:
                    fields[key] = value.strip()
    except OSError:
        return None
    return fields if fields.get("Name") and fields.get("Version") else None


def site_dirs():
    dirs = [d for pattern in SITE_GLOBS for d in glob.glob(pattern)]
    dirs += [d for d in sys.path if d.endswith(("site-packages", "dist-packages"))]
    out = []
    for d in dirs:
        real = os.path.realpath(d)
        if os.path.isdir(real) and real not in out:
            out.append(real)
    return sorted(out)


def python_distributions():
    out = []
    for directory in site_dirs():
        for meta in sorted(glob.glob(os.path.join(directory, "*.dist-info", "METADATA")) +
                           glob.glob(os.path.join(directory, "*.egg-info", "PKG-INFO"))):
            fields = _metadata(meta)
            if fields:
                out.append({"name": fields["Name"], "version": fields["Version"],
                            "location": directory})
            if len(out) >= LIMIT:
                return out
    return out


# Python packages of the stack that images' claims name (NGC's DALI_VERSION): read without
# the whole inventory, by their dist-info folders' names (which spell "-" as "_")
CLAIMED_DISTRIBUTIONS = ("nvidia_dali",)


def claimed_distributions():
    """{name: version} of the installed distributions whose names start as one of
    CLAIMED_DISTRIBUTIONS (nvidia-dali-cuda120...)."""
    out = {}
    for directory in site_dirs():
        for prefix in CLAIMED_DISTRIBUTIONS:
            for meta in sorted(glob.glob(os.path.join(directory, prefix + "*.dist-info", "METADATA"))):
                fields = _metadata(meta)
                if fields:
                    out.setdefault(fields["Name"], fields["Version"])
    return out


def collect():
    return {"os_release": os_release(), "dpkg": dpkg_packages(),
            "python": python_distributions()}

