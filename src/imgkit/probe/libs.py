"""Find the CUDA libraries the loader can reach, every copy of them, and their versions
as the libraries report them (never from file names)."""
from __future__ import annotations

import ctypes
import glob
import os
import re
import subprocess
import sys

DEFAULT_DIRS = ["/lib", "/usr/lib", "/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu",
                "/usr/lib/x86_64-linux-gnu", "/usr/local/lib", "/usr/local/cuda/lib64"]
# family -> regex of the file names that are that library (not its sub-libraries)
FAMILIES = {
    "cudart": r"^libcudart\.so(\.\d+)*$",
    "cublas": r"^libcublas\.so(\.\d+)*$",
    "cublasLt": r"^libcublasLt\.so(\.\d+)*$",
    "cudnn": r"^libcudnn\.so(\.\d+)*$",
    "nccl": r"^libnccl\.so(\.\d+)*$",
}
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


def find_copies(pattern, dirs):
    """Distinct files (by inode) matching pattern in dirs: [{path, realpath, names}]."""
    rx = re.compile(pattern)
    copies = {}
    for d in dirs:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for name in names:
            if not rx.match(name):
                continue
            path = os.path.join(d, name)
            try:
                st = os.stat(path)
            except OSError:
                continue  # dangling symlink
            key = (st.st_dev, st.st_ino)
            entry = copies.setdefault(key, {"path": path, "realpath": os.path.realpath(path),
                                            "size": st.st_size, "names": []})
            entry["names"].append(path)
    return list(copies.values())


def _int_out(func, *args):
    value = ctypes.c_int()
    rc = func(*(list(args) + [ctypes.byref(value)]))
    return rc, value.value


def version_of(family, lib):
    """Ask the loaded library for its version; returns a dotted string."""
    if family == "cudart":
        rc, v = _int_out(lib.cudaRuntimeGetVersion)
        if rc != 0:
            raise OSError("cudaRuntimeGetVersion returned %d" % rc)
        return "%d.%d" % (v // 1000, (v % 1000) // 10)
    if family in ("cublas", "cublasLt"):
        get = lib.cublasGetProperty if family == "cublas" else lib.cublasLtGetProperty
        parts = []
        for prop in (0, 1, 2):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
            rc, v = _int_out(get, prop)
            if rc != 0:
                raise OSError("GetProperty returned %d" % rc)
            parts.append(str(v))
        return ".".join(parts)
    if family == "cudnn":
        lib.cudnnGetVersion.restype = ctypes.c_size_t
        v = lib.cudnnGetVersion()
        # cuDNN 9 changed the encoding: major*10000 (was major*1000 up to 8.x)
        major, rest = (v // 10000, v % 10000) if v >= 90000 else (v // 1000, v % 1000)
        return "%d.%d.%d" % (major, rest // 100, rest % 100)
    if family == "nccl":
        rc, v = _int_out(lib.ncclGetVersion)
        if rc != 0:
            raise OSError("ncclGetVersion returned %d" % rc)
        # NCCL >= 2.9 encodes major*10000 + minor*100 + patch (was *1000)
        major, rest = (v // 10000, v % 10000) if v >= 20900 else (v // 1000, v % 1000)
        return "%d.%d.%d" % (major, rest // 100, rest % 100)
    raise ValueError(family)


def load(path_or_name):
    """ctypes.CDLL with a one-line reason when it cannot load."""
    try:
        return ctypes.CDLL(path_or_name, mode=ctypes.RTLD_GLOBAL), None
    except OSError as exc:
        return None, str(exc).strip()


def loaded_path(name_fragment):
    """Where the loader actually mapped a library from (read from /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if os.path.basename(path).startswith(name_fragment):
                    return path
    except OSError:
        pass
    return None


def package_version(path):
    """Version of the pip wheel whose RECORD lists this file (dist-info metadata), or of the
    CUDA toolkit install (version.json) holding it. Used only when the library itself cannot
    answer: CUDA 11's cudaRuntimeGetVersion needs a driver."""
    real = os.path.realpath(path)
    marker = "/site-packages/"
    if marker in real:
        site = real[: real.index(marker) + len(marker)]
        rel = real[len(site):]
        for record in glob.glob(os.path.join(site, "*.dist-info", "RECORD")):
            try:
                with open(record) as f:
                    if any(line.split(",", 1)[0] == rel for line in f):
                        name = os.path.basename(os.path.dirname(record))[: -len(".dist-info")]
                        return name.rsplit("-", 1)[-1], "wheel " + name
            except OSError:
                continue
    toolkit = re.match(r"^(/usr/local/cuda[^/]*)/", real)
    if toolkit and os.path.exists(os.path.join(toolkit.group(1), "version.json")):
        import json
        with open(os.path.join(toolkit.group(1), "version.json")) as f:
            data = json.load(f)
        version = (data.get("cuda_cudart") or data.get("cuda") or {}).get("version")
        if version:
            return version, toolkit.group(1) + "/version.json"
    return None, None


def describe_copy(family, copy):
    """Load one copy by path in a child interpreter (two copies never share a process)."""
    result = _describe_copy(family, copy)
    if result.get("loadable") and not result.get("version") and family == "cudart":
        version, source = package_version(copy["path"])
        if version:
            result["version"] = ".".join(version.split(".")[:2])
            result["version_source"] = source + " (the library needs a driver to tell)"
            result["library_error"] = result.pop("error", None)
    return result


def _describe_copy(family, copy):
    return _child("lib,err=load(%r)\nout={'loadable':lib is not None,'error':err}\n"
                  "if lib is not None:\n"
                  "  try: out['version']=version_of(%r,lib)\n"
                  "  except Exception as e: out['error']='loaded, but no version: %%s'%%e\n"
                  % (copy["path"], family))


def _child(body):
    """Run `body` with this module's names in a fresh interpreter; it sets `out`."""
    import json
    root = os.path.abspath(__file__)
    for _ in __name__.split("."):
        root = os.path.dirname(root)
    code = ("import json,sys\nsys.path.insert(0,%r)\nfrom %s import *\n%s\nprint(json.dumps(out))"
            % (root, __name__, body))
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120)
    except subprocess.TimeoutExpired:
        return {"loadable": False, "error": "timed out loading"}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["exit %d" % proc.returncode]
        return {"loadable": False, "error": "crashed while loading: " + tail[0]}


def collect():
    dirs = search_dirs()
    out = {"search_dirs": dirs, "families": {}, "driver_libs_in_image": []}
    for family, pattern in FAMILIES.items():
        copies = find_copies(pattern, dirs)
        for copy in copies:
            copy.update(describe_copy(family, copy))
        out["families"][family] = {"copies": copies}
    # driver libraries must come from the host (the toolkit mounts them); scan the image
    for copy in find_copies(DRIVER_LIBS, dirs):
        out["driver_libs_in_image"].append(copy["path"])
    return out


def resolve_names(names):
    """dlopen each bare name the way a framework does; report what it resolved to."""
    results = {}
    for name in names:
        results[name] = _child(
            "lib,err=load(%r)\nout={'loadable':lib is not None,'error':err}\n"
            "if lib is not None: out['path']=loaded_path(%r)\n" % (name, name.split(".so")[0] + ".so"))
    return results
