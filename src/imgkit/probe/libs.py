"""Find the CUDA libraries the loader can reach, every copy of them, and their versions
as the libraries report them (never from file names)."""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from . import child, loading, owners

DEFAULT_DIRS = ["/lib", "/usr/lib", "/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu",
                "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                "/usr/local/lib", "/usr/local/cuda/lib64"]
# ELF e_machine -> `uname -m`: a library of another architecture never loads, and says so
ELF_MACHINES = {0x3E: "x86_64", 0xB7: "aarch64", 0x03: "i686", 0x28: "arm", 0x15: "ppc64le"}
# family -> regex of the file names that are that library (not its sub-libraries); a wheel
# repaired by auditwheel bundles it under a hashed name (libcudart-1a2b3c4d.so.11.0)
FAMILIES = {
    "cudart": r"^libcudart(-[0-9a-f]{8})?\.so(\.\d+)*$",
    "cublas": r"^libcublas(-[0-9a-f]{8})?\.so(\.\d+)*$",
    "cublasLt": r"^libcublasLt(-[0-9a-f]{8})?\.so(\.\d+)*$",
    "cudnn": r"^libcudnn(-[0-9a-f]{8})?\.so(\.\d+)*$",
    "nccl": r"^libnccl(-[0-9a-f]{8})?\.so(\.\d+)*$",
}
ANY_FAMILY = re.compile("|".join(FAMILIES.values()))
# The rest of the stack an image's claims name (CUFFT_VERSION, NV_LIBNPP_VERSION,
# TRT_VERSION...), each read from the library itself, without a GPU, for those claims
# alone: no layout check holds them (a framework may well bring its own copy).
STACK_FAMILIES = {
    "cufft": r"^libcufft(-[0-9a-f]{8})?\.so(\.\d+)*$",
    "curand": r"^libcurand(-[0-9a-f]{8})?\.so(\.\d+)*$",
    "cusolver": r"^libcusolver(-[0-9a-f]{8})?\.so(\.\d+)*$",
    "cusparse": r"^libcusparse(-[0-9a-f]{8})?\.so(\.\d+)*$",
    "npp": r"^libnppc(-[0-9a-f]{8})?\.so(\.\d+)*$",            # NPP's core library
    "nvjpeg": r"^libnvjpeg(-[0-9a-f]{8})?\.so(\.\d+)*$",
    "cutensor": r"^libcutensor(-[0-9a-f]{8})?\.so(\.\d+)*$",
    "tensorrt": r"^libnvinfer(-[0-9a-f]{8})?\.so(\.\d+)*$",
}
# Python environments, where wheels (and frameworks bundling libraries) put them: found by
# a framework's RPATH, not by the loader's search
SITE_GLOBS = ("/usr/lib/python3*/dist-packages", "/usr/local/lib/python3*/dist-packages",
              "/usr/local/lib/python3*/site-packages", "/opt/*/lib/python3*/site-packages",
              "/opt/conda/envs/*/lib/python3*/site-packages", "/root/.local/lib/python3*/site-packages",
              "/home/*/.local/lib/python3*/site-packages")
SITE_DEPTH = 3   # site/nvidia/cu13/lib/libcublas.so.13 is three folders down
DRIVER_LIBS = r"^lib(cuda|nvidia-ml)\.so(\.\d+)*$"
LOADER_NAMES = {"cudart": ["libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"],
                "cublas": ["libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"],
                "cudnn": ["libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"],
                "nccl": ["libnccl.so.2", "libnccl.so"]}


def ldconfig_cache():
    """(name, path) pairs from the loader cache, as `ldconfig -p` lists them."""
    for exe in ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"):
        try:
            out = subprocess.run([exe, "-p"], capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        return [(m[0], m[2]) for m in re.findall(r"^\s*(\S+) \(([^)]*)\) => (\S+)$", out, re.M)]
    return []


def search_dirs():
    """Directories the dynamic loader searches, in its order, deduplicated."""
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    dirs += [os.path.dirname(path) for _, path in ldconfig_cache()]
    dirs += DEFAULT_DIRS
    seen, out = set(), []
    for d in dirs:
        if d not in seen and os.path.isdir(d):
            seen.add(d)
            out.append(d)
    return out


def environment_dirs():
    """Folders of Python environments (and the interpreter's prefix lib/, as conda has it)
    that hold one of the CUDA libraries, SITE_DEPTH folders deep at most."""
    roots = {p for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    for pattern in SITE_GLOBS:
        roots.update(glob.glob(pattern))
    found = [os.path.join(sys.prefix, "lib")] + glob.glob("/opt/conda/lib")
    for root in sorted(r for r in roots if os.path.isdir(r)):
        for current, subdirs, files in os.walk(root):
            depth = current[len(root):].count(os.sep)
            if depth >= SITE_DEPTH:
                subdirs[:] = []
            if any(ANY_FAMILY.match(f) for f in files):
                found.append(current)
    return [d for d in dict.fromkeys(found) if os.path.isdir(d)]


def find_copies(pattern, dirs, skip=(), listings=None):
    """Distinct files (by inode) matching pattern in dirs, leaving out the inodes in `skip`:
    {inode: {path, realpath, size, names}}. `listings`: each folder's names, kept across
    calls by the caller that asks for many patterns."""
    rx = re.compile(pattern)
    copies = {}
    listings = {} if listings is None else listings
    for d in dirs:
        if d not in listings:
            try:
                listings[d] = sorted(os.listdir(d))
            except OSError:
                listings[d] = []
        names = listings[d]
        for name in names:
            if not rx.match(name):
                continue
            path = os.path.join(d, name)
            try:
                st = os.stat(path)
            except OSError:
                continue  # dangling symlink
            key = (st.st_dev, st.st_ino)
            if key in skip:
                continue
            entry = copies.setdefault(key, {"path": path, "realpath": os.path.realpath(path),
                                            "size": st.st_size, "names": []})
            entry["names"].append(path)
    return copies


def mapped_families():
    """family -> the file this process mapped for it."""
    found = {}
    for path in loading.mapped_files():
        for family, pattern in FAMILIES.items():
            if family not in found and re.match(pattern, os.path.basename(path)):
                found[family] = path
    return found


def elf_machine(path):
    """The architecture an ELF file is built for, as `uname -m` names it ("" if not ELF)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(20)
    except OSError:
        return ""
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return ""
    number = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    return ELF_MACHINES.get(number, "elf-machine-%d" % number)


def describe_copy(family, copy, loaded):
    """What one copy is: `loaded`, the answer of the child interpreter that loaded it by path
    (two copies never share a process), with its owner and the architecture it is built
    for; its version comes from the library itself, else from the package that installed it."""
    result = dict(loaded)
    result["machine"] = elf_machine(copy["path"])
    owner = owners.owner_of(copy["path"], family)
    if owner:
        result["owner"] = owner
    if result.get("version"):
        result["version_source"] = "the library"
    elif result.get("loadable") and owner and owner["component"]:
        version = owners.upstream(owner["version"])
        result["version"] = ".".join(version.split(".")[:2]) if family == "cudart" else version
        result["version_source"] = "%s %s %s (the library needs a driver to tell)" % (
            owner["kind"], owner["name"], owner["version"])
        result["library_error"] = result.pop("error", None)
    return result


def _describe_copy(family, copy):
    return _child("lib,err=load(%r)\nout={'loadable':lib is not None,'error':err}\n"
                  "if lib is not None:\n"
                  "  try: out['version']=version_of(%r,lib)\n"
                  "  except Exception as e: out['error']='loaded, but no version: %%s'%%e\n"
                  "  try: out['cuda_build']=cuda_build_of(%r,lib)\n"
                  "  except Exception: pass\n"
                  % (copy["path"], family, family))


def _child(body):
    """Run `body` with loading.py's names in a fresh interpreter; it sets `out`."""
    out, why = child.run(loading.__name__, body)
    if out is not None:
        return out
    if why.startswith("timed out"):
        return {"loadable": False, "error": "timed out loading"}
    return {"loadable": False, "error": "crashed while loading: " + why.split("crashed: ", 1)[-1]}


def collect():
    dirs = search_dirs()
    elsewhere = [d for d in environment_dirs() if d not in dirs]
    out = {"search_dirs": dirs, "environment_dirs": elsewhere, "families": {}, "stack": {},
           "driver_libs_in_image": []}
    jobs = []
    listings = {}    # each folder listed once for all the patterns
    for key, families in (("families", FAMILIES), ("stack", STACK_FAMILIES)):
        for family, pattern in families.items():
            on_path = find_copies(pattern, dirs, listings=listings)
            copies = [dict(c, where="loader") for c in on_path.values()]
            copies += [dict(c, where="environment")
                       for c in find_copies(pattern, elsewhere, skip=on_path,
                                            listings=listings).values()]
            if copies or key == "families":
                out[key][family] = {"copies": copies}
            jobs += [(family, copy) for copy in copies]
    # one child interpreter per copy, several at once
    with ThreadPoolExecutor(max_workers=8) as pool:
        loaded = list(pool.map(lambda job: _describe_copy(*job), jobs))
    for (family, copy), answer in zip(jobs, loaded):
        copy.update(describe_copy(family, copy, answer))
    # driver libraries must come from the host (the toolkit mounts them); scan the image
    for copy in find_copies(DRIVER_LIBS, dirs, listings=listings).values():
        out["driver_libs_in_image"].append(copy["path"])
    return out


def resolve_names(names):
    """dlopen each bare name the way a framework does, all in one process as a framework
    does; report what each resolved to."""
    if not names:
        return {}
    found = _child("out={}\nfor name in %r:\n"
                   "  lib,err=load(name)\n"
                   "  out[name]={'loadable':lib is not None,'error':err}\n"
                   "  if lib is not None: out[name]['path']=loaded_path(name.split('.so')[0]+'.so')\n"
                   % (list(names),))
    if set(found) != set(names):  # the child died: every name gets its error
        return {name: {"loadable": False, "error": found.get("error")} for name in names}
    return found
