"""Loading one CUDA library in the probe's helper interpreter and asking it its version:
what the helpers that load library copies import, and only that (ctypes), since each
helper's start-up is paid once per copy beside the framework's import."""
from __future__ import annotations

import ctypes
import os

# family -> the call that answers MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL (libraryPropertyType)
GET_PROPERTY = {"cublas": "cublasGetProperty", "cublasLt": "cublasLtGetProperty",
                "cufft": "cufftGetProperty", "curand": "curandGetProperty",
                "cusolver": "cusolverGetProperty", "cusparse": "cusparseGetProperty",
                "nvjpeg": "nvjpegGetProperty"}


class NppLibraryVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("build", ctypes.c_int)]


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
    if family in GET_PROPERTY:
        get = getattr(lib, GET_PROPERTY[family])
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
    if family == "npp":
        lib.nppGetLibVersion.restype = ctypes.POINTER(NppLibraryVersion)
        v = lib.nppGetLibVersion().contents
        return "%d.%d.%d" % (v.major, v.minor, v.build)
    if family == "cutensor":
        lib.cutensorGetVersion.restype = ctypes.c_size_t
        v = lib.cutensorGetVersion()              # major*10000 + minor*100 + patch
        return "%d.%d.%d" % (v // 10000, v % 10000 // 100, v % 100)
    if family == "tensorrt":
        lib.getInferLibVersion.restype = ctypes.c_int32
        v = lib.getInferLibVersion()
        # TensorRT 10 encodes major*10000 + minor*100 + patch (8.x and 9.x: major*1000)
        major, rest = (v // 10000, v % 10000) if v >= 100000 else (v // 1000, v % 1000)
        return "%d.%d.%d" % (major, rest // 100, rest % 100)
    raise ValueError(family)


def cuda_build_of(family, lib):
    """The CUDA a cuDNN was built for, as it says itself (cudnnGetCudartVersion: 11080)."""
    if family != "cudnn":
        return None
    lib.cudnnGetCudartVersion.restype = ctypes.c_size_t
    v = lib.cudnnGetCudartVersion()
    return "%d.%d" % (v // 1000, (v % 1000) // 10) if v else None


def load(path_or_name):
    """ctypes.CDLL with a one-line reason when it cannot load."""
    try:
        return ctypes.CDLL(path_or_name, mode=ctypes.RTLD_GLOBAL), None
    except OSError as exc:
        return None, str(exc).strip()


def mapped_files():
    """The files this process has mapped, in /proc/self/maps order (the loader's truth)."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split()
                if len(fields) >= 6:
                    yield fields[-1]
    except OSError:
        return


def loaded_path(name_fragment):
    """Where the loader actually mapped a library from."""
    return next((p for p in mapped_files() if os.path.basename(p).startswith(name_fragment)), None)
