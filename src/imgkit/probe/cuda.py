"""Thin ctypes bindings to the CUDA runtime, NVML, cuBLAS, cuDNN and NCCL of the image."""
from __future__ import annotations

import ctypes

from .libs import LOADER_NAMES
from .loading import load


class CudaError(Exception):
    def __init__(self, call, code, text=""):
        super().__init__("%s failed: error %s%s" % (call, code, (" (" + text + ")") if text else ""))
        self.call = call
        self.code = code
        self.text = text


def open_first(family, also=()):
    """The library the loader resolves for `family`, else the first of `also`: copies
    discovery found in a Python environment (wheels a framework reaches by its RPATH)."""
    errors = []
    for name in list(LOADER_NAMES[family]) + list(also):
        lib, err = load(name)
        if lib is not None:
            return lib
        errors.append(err)
    raise OSError("; ".join(e for e in errors if e))


class Runtime:
    """The CUDA runtime (cudart) of the image."""

    def __init__(self, also=()):
        self.lib = open_first("cudart", also)
        self.lib.cudaGetErrorString.restype = ctypes.c_char_p

    def check(self, call, rc):
        if rc != 0:
            raise CudaError(call, rc, self.lib.cudaGetErrorString(rc).decode(errors="replace"))

    def device_count(self):
        n = ctypes.c_int()
        self.check("cudaGetDeviceCount", self.lib.cudaGetDeviceCount(ctypes.byref(n)))
        return n.value

    def driver_version(self):
        v = ctypes.c_int()
        self.check("cudaDriverGetVersion", self.lib.cudaDriverGetVersion(ctypes.byref(v)))
        return "%d.%d" % (v.value // 1000, (v.value % 1000) // 10) if v.value else None

    def attribute(self, attr, device):
        v = ctypes.c_int()
        self.check("cudaDeviceGetAttribute",
                   self.lib.cudaDeviceGetAttribute(ctypes.byref(v), attr, device))
        return v.value

    def set_device(self, device):
        self.check("cudaSetDevice", self.lib.cudaSetDevice(device))

    def malloc(self, nbytes):
        ptr = ctypes.c_void_p()
        self.check("cudaMalloc", self.lib.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(nbytes)))
        return ptr

    def free(self, ptr):
        self.lib.cudaFree(ptr)

    def to_device(self, dst, host_bytes):
        buf = ctypes.create_string_buffer(bytes(host_bytes), len(host_bytes))
        self.check("cudaMemcpy", self.lib.cudaMemcpy(dst, buf, ctypes.c_size_t(len(host_bytes)), 1))

    def copy_within(self, dst, src, nbytes):
        """Device to device."""
        self.check("cudaMemcpy", self.lib.cudaMemcpy(dst, src, ctypes.c_size_t(nbytes), 3))

    def to_host(self, src, nbytes):
        buf = ctypes.create_string_buffer(nbytes)
        self.check("cudaMemcpy", self.lib.cudaMemcpy(buf, src, ctypes.c_size_t(nbytes), 2))
        return buf.raw

    def synchronize(self):
        self.check("cudaDeviceSynchronize", self.lib.cudaDeviceSynchronize())

    def event(self):
        ev = ctypes.c_void_p()
        self.check("cudaEventCreate", self.lib.cudaEventCreate(ctypes.byref(ev)))
        return ev

    def record(self, ev, stream=None):
        self.check("cudaEventRecord", self.lib.cudaEventRecord(ev, stream))

    def elapsed_ms(self, start, end):
        self.check("cudaEventSynchronize", self.lib.cudaEventSynchronize(end))
        ms = ctypes.c_float()
        self.check("cudaEventElapsedTime",
                   self.lib.cudaEventElapsedTime(ctypes.byref(ms), start, end))
        return ms.value

    def stream(self):
        s = ctypes.c_void_p()
        self.check("cudaStreamCreate", self.lib.cudaStreamCreate(ctypes.byref(s)))
        return s

    def stream_sync(self, s):
        self.check("cudaStreamSynchronize", self.lib.cudaStreamSynchronize(s))


# cudaDeviceAttr values (driver_types.h)
ATTR_SM_COUNT = 16
ATTR_CC_MAJOR = 75
ATTR_CC_MINOR = 76


def device_uuid(lib, handle):
    """The GPU's UUID (GPU-...), what DCGM exporter labels its series with; None when this
    NVML cannot say."""
    try:
        get = lib.nvmlDeviceGetUUID
    except AttributeError:
        return None
    text = ctypes.create_string_buffer(96)          # NVML_DEVICE_UUID_V2_BUFFER_SIZE
    if get(handle, text, 96) != 0:
        return None
    return text.value.decode(errors="replace") or None


def mig_devices(lib, handle):
    """How many MIG instances of this GPU NVML lets us see (None: it would not say)."""
    most = ctypes.c_uint()
    if lib.nvmlDeviceGetMaxMigDeviceCount(handle, ctypes.byref(most)) != 0:
        return None
    seen = 0
    for index in range(most.value):
        instance = ctypes.c_void_p()
        if lib.nvmlDeviceGetMigDeviceHandleByIndex(handle, index, ctypes.byref(instance)) == 0:
            seen += 1
    return seen


def nvml_info():
    """Driver, devices, compute capability and MIG mode as NVML (the host's) reports them."""
    lib, err = load("libnvidia-ml.so.1")
    if lib is None:
        return {"available": False, "error": err}
    lib.nvmlErrorString.restype = ctypes.c_char_p
    rc = lib.nvmlInit_v2()
    if rc != 0:
        return {"available": False, "error": "nvmlInit failed: %s (%d)"
                % (lib.nvmlErrorString(rc).decode(), rc)}
    try:
        buf = ctypes.create_string_buffer(96)
        lib.nvmlSystemGetDriverVersion(buf, 96)
        cuda_v = ctypes.c_int()
        lib.nvmlSystemGetCudaDriverVersion_v2(ctypes.byref(cuda_v))
        count = ctypes.c_uint()
        lib.nvmlDeviceGetCount_v2(ctypes.byref(count))
        devices = []
        for i in range(count.value):
            handle = ctypes.c_void_p()
            if lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)) != 0:
                continue
            name = ctypes.create_string_buffer(96)
            lib.nvmlDeviceGetName(handle, name, 96)
            major, minor = ctypes.c_int(), ctypes.c_int()
            lib.nvmlDeviceGetCudaComputeCapability(handle, ctypes.byref(major), ctypes.byref(minor))
            cur, pending = ctypes.c_uint(), ctypes.c_uint()
            mig = None
            if lib.nvmlDeviceGetMigMode(handle, ctypes.byref(cur), ctypes.byref(pending)) == 0:
                mig = bool(cur.value)
            devices.append({"index": i, "name": name.value.decode(errors="replace"),
                            "uuid": device_uuid(lib, handle),
                            "compute_capability": "%d.%d" % (major.value, minor.value),
                            "mig": mig, "mig_devices": mig_devices(lib, handle) if mig else None})
        v = cuda_v.value
        return {"available": True, "driver": buf.value.decode(),
                "driver_cuda": "%d.%d" % (v // 1000, (v % 1000) // 10) if v else None,
                "devices": devices}
    finally:
        lib.nvmlShutdown()
