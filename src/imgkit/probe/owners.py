"""Who installed a library file, and at which version: the pip wheel whose RECORD lists it
(any site-packages or dist-packages: venv, system, user), the Debian package that owns it
(dpkg's lists and status), the conda package that lists it (conda-meta), or the CUDA
toolkit tree holding it (version.json). Asked when a library cannot tell its own version
(CUDA 11's cudaRuntimeGetVersion needs a driver), and always reported: the owner also says
which CUDA a cuDNN or NCCL was built for (nvidia-nccl-cu11, 2.15.5-1+cuda11.8).
Stdlib only, python3 >= 3.8."""
from __future__ import annotations

import glob
import json
import os
import re

DPKG = "/var/lib/dpkg"
SITE_DIRS = re.compile(r"^(.*/(?:site|dist)-packages)/(.+)$")
TOOLKIT = re.compile(r"^(/usr/local/cuda[^/]*)/")
# package names that are a CUDA component itself (not a framework bundling one)
COMPONENT = re.compile(r"cuda|cudart|cublas|cudnn|nccl", re.I)
# version.json key of each family (the toolkit has no cuDNN or NCCL)
TOOLKIT_KEYS = {"cudart": "cuda_cudart", "cublas": "libcublas", "cublasLt": "libcublas"}


def owner_of(path, family=None):
    """{kind, name, version, component} of the first owner found, or None."""
    real = os.path.realpath(path)
    for find in (_wheel, _dpkg, _conda):
        for candidate in dict.fromkeys((real, path)):
            found = find(candidate)
            if found:
                found["component"] = bool(COMPONENT.search(found["name"]))
                return found
    return _toolkit(real, family)


def _wheel(path):
    match = SITE_DIRS.match(path)
    if not match:
        return None
    found = _site_index(match.group(1)).get(match.group(2))
    return dict(found) if found else None


_SITES: dict = {}


def _site_index(site):
    """Every file each wheel in `site` installed (from the RECORDs), read once."""
    if site not in _SITES:
        index = {}
        for record in sorted(glob.glob(os.path.join(site, "*.dist-info", "RECORD"))):
            name, _, version = os.path.basename(os.path.dirname(record))[:-len(".dist-info")].rpartition("-")
            entry = {"kind": "wheel", "name": name, "version": version}
            try:
                with open(record, errors="replace") as f:
                    for line in f:
                        index.setdefault(line.split(",", 1)[0], entry)
            except OSError:
                continue
        _SITES[site] = index
    return _SITES[site]


def _dpkg(path):
    """dpkg lists paths as installed (/usr/lib/...); usrmerge links /lib to /usr/lib."""
    other = path[len("/usr"):] if path.startswith("/usr/") else "/usr" + path
    index = _dpkg_index()
    package = index.get(path) or index.get(other)
    if not package:
        return None
    version = _dpkg_versions().get(package)
    return {"kind": "dpkg", "name": package, "version": version} if version else None


_DPKG: dict = {}


def _dpkg_index():
    """path -> package, from every package's file list, read once."""
    if "files" not in _DPKG:
        index = {}
        for listing in sorted(glob.glob(os.path.join(DPKG, "info", "*.list"))):
            package = os.path.basename(listing)[:-len(".list")].split(":")[0]
            try:
                with open(listing, errors="replace") as f:
                    for line in f:
                        index.setdefault(line.rstrip("\n"), package)
            except OSError:
                continue
        _DPKG["files"] = index
    return _DPKG["files"]


def _dpkg_versions():
    """package -> version of the installed packages, from dpkg's status, read once."""
    if "versions" not in _DPKG:
        versions = {}
        try:
            with open(os.path.join(DPKG, "status"), errors="replace") as f:
                stanzas = f.read().split("\n\n")
        except OSError:
            stanzas = []
        for stanza in stanzas:
            fields = dict(re.findall(r"^([A-Za-z-]+): ?(.*)$", stanza, re.M))
            if fields.get("Package") and "installed" in fields.get("Status", ""):
                versions[fields["Package"]] = fields.get("Version")
        _DPKG["versions"] = versions
    return _DPKG["versions"]


def _conda(path):
    parent = os.path.dirname(path)
    while parent not in ("/", ""):
        meta = os.path.join(parent, "conda-meta")
        if os.path.isdir(meta):
            rel = os.path.relpath(path, parent)
            for record in sorted(glob.glob(os.path.join(meta, "*.json"))):
                try:
                    with open(record) as f:
                        data = json.load(f)
                except (OSError, ValueError):
                    continue
                if rel in (data.get("files") or []):
                    return {"kind": "conda", "name": str(data.get("name")),
                            "version": str(data.get("version")), "build": str(data.get("build", ""))}
            return None
        parent = os.path.dirname(parent)
    return None


def _toolkit(path, family):
    match = TOOLKIT.match(path)
    key = TOOLKIT_KEYS.get(family or "")
    if not match or not key:
        return None
    try:
        with open(os.path.join(match.group(1), "version.json")) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    version = (data.get(key) or {}).get("version")
    if not version:
        return None
    return {"kind": "toolkit", "name": match.group(1) + "/version.json " + key,
            "version": str(version), "component": True}


def upstream(version):
    """The upstream part of a package version: '11.8.89~11.8.0-5~deb12u1' -> '11.8.89',
    '1:2.15.5-1+cuda11.8' -> '2.15.5', '11.8.89' -> '11.8.89'."""
    version = version.split(":", 1)[-1]
    return re.split(r"[-~+]", version, 1)[0]
