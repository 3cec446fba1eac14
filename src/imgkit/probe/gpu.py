"""GPU work through the image's own libraries: cuBLAS GEMMs (FP32 / TF32 / FP16 / BF16),
a cuDNN convolution and an NCCL all-reduce, timed with CUDA events after warm-up."""
from __future__ import annotations

import ctypes
import math
import random
import statistics
import struct
import time

from .cuda import ATTR_CC_MAJOR, ATTR_CC_MINOR, ATTR_SM_COUNT, CudaError, open_first
from .libs import mapped_families

CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF = 0, 2, 14
CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32 = 68, 77
CUBLAS_GEMM_DEFAULT = -1
ELEMENT = {"fp32": (CUDA_R_32F, 4), "tf32": (CUDA_R_32F, 4), "fp16": (CUDA_R_16F, 2),
           "bf16": (CUDA_R_16BF, 2)}
TF32_ERROR_BOUNDARY = 2e-5  # FP32 lands near 1e-7, TF32 (10-bit mantissa) near 3e-4
WARM_MS = 200.0  # GPU time spent before timing anything


def random_values(n, seed):
    rng = random.Random(seed)
    return [rng.uniform(-1.0, 1.0) for _ in range(n)]


def encode(values, dtype):
    if dtype in ("fp32", "tf32"):
        return struct.pack("<%df" % len(values), *values)
    if dtype == "fp16":
        return struct.pack("<%de" % len(values), *values)
    raw = struct.pack("<%df" % len(values), *values)  # bf16: the high half of each float32
    return b"".join(raw[i + 2:i + 4] for i in range(0, len(raw), 4))


def decode_fp32(raw):
    return struct.unpack("<%df" % (len(raw) // 4), raw)


def fill(rt, dst, block, nbytes):
    """`nbytes` of `block` repeated, at `dst`, made on the device: the block copied once,
    then what is there copied after itself until full. The same bytes as the block tiled
    on the host, without building and sending hundreds of MB (seconds of a GEMM's turn)."""
    done = min(len(block), nbytes)
    rt.to_device(dst, block[:done])
    while done < nbytes:      # `done` is a whole number of blocks until the last copy
        step = min(done, nbytes - done)
        rt.copy_within(ctypes.c_void_p(dst.value + done), dst, step)
        done += step


class Blas:
    def __init__(self, rt, also=()):
        self.rt = rt
        self.lib = open_first("cublas", also)
        self.lib.cublasGemmEx.argtypes = [
            ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
            ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
            ctypes.c_int, ctypes.c_int, ctypes.c_int]
        self.handle = ctypes.c_void_p()
        self.check("cublasCreate_v2", self.lib.cublasCreate_v2(ctypes.byref(self.handle)))

    def check(self, call, rc):
        if rc != 0:
            raise CudaError(call, rc, "cuBLAS status")

    def gemm(self, dtype, m, n, k, a, b, c):
        """C = A @ B, column-major, FP32 accumulation; TF32 only when dtype == 'tf32'."""
        kind = ELEMENT[dtype][0]
        compute = CUBLAS_COMPUTE_32F_FAST_TF32 if dtype == "tf32" else CUBLAS_COMPUTE_32F
        one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        self.check("cublasGemmEx", self.lib.cublasGemmEx(
            self.handle, 0, 0, m, n, k, ctypes.byref(one), a, kind, m, b, kind, k,
            ctypes.byref(zero), c, kind, m, compute, CUBLAS_GEMM_DEFAULT))

    def close(self):
        self.lib.cublasDestroy_v2(self.handle)


def warm_up(rt, fn, start, end, warm_ms=WARM_MS, max_calls=1000):
    """Call `fn` until it has kept the GPU busy for `warm_ms` (at least 3 calls): a fixed
    count is milliseconds for a fast BF16 GEMM, too short for the clocks to settle."""
    busy, calls = 0.0, 0
    while (calls < 3 or busy < warm_ms) and calls < max_calls:
        rt.record(start)
        fn()
        rt.record(end)
        busy += rt.elapsed_ms(start, end)
        calls += 1


def time_ms(rt, fn, iters=10, reps=5):
    """Median per-call time of `fn` in ms, from CUDA events around `iters` calls."""
    start, end = rt.event(), rt.event()
    warm_up(rt, fn, start, end)
    samples = []
    for _ in range(reps):
        rt.record(start)
        for _ in range(iters):
            fn()
        rt.record(end)
        samples.append(rt.elapsed_ms(start, end) / iters)
    return statistics.median(samples)


def gemm_accuracy(rt, blas, dtype, size=512, samples=256):
    """Relative error of a GEMM against a float64 reference on sampled entries."""
    a_vals, b_vals = random_values(size * size, 1), random_values(size * size, 2)
    a, b, c = rt.malloc(size * size * 4), rt.malloc(size * size * 4), rt.malloc(size * size * 4)
    try:
        rt.to_device(a, encode(a_vals, "fp32"))
        rt.to_device(b, encode(b_vals, "fp32"))
        rt.to_device(c, b"\xff" * (size * size * 4))  # poison: NaN unless written
        blas.gemm(dtype, size, size, size, a, b, c)
        rt.synchronize()
        out = decode_fp32(rt.to_host(c, size * size * 4))
    finally:
        for p in (a, b, c):
            rt.free(p)
    # the GEMM saw the float32-rounded inputs: use those for the reference
    a32, b32 = decode_fp32(encode(a_vals, "fp32")), decode_fp32(encode(b_vals, "fp32"))
    rng = random.Random(3)
    num = den = 0.0
    for _ in range(samples):
        i, j = rng.randrange(size), rng.randrange(size)
        ref = math.fsum(a32[i + p * size] * b32[p + j * size] for p in range(size))
        got = out[i + j * size]
        if got != got:
            return float("nan")
        num += (got - ref) ** 2
        den += ref ** 2
    return math.sqrt(num / den)


def gemm_throughput(rt, blas, dtype, size):
    element = ELEMENT[dtype][1]
    nbytes = size * size * element
    block = encode(random_values(1 << 16, 4), dtype)
    ptrs = [rt.malloc(nbytes) for _ in range(3)]
    try:
        fill(rt, ptrs[0], block, nbytes)
        fill(rt, ptrs[1], block[7 * element:] + block[:7 * element], nbytes)
        ms = time_ms(rt, lambda: blas.gemm(dtype, size, size, size, *ptrs))
    finally:
        for p in ptrs:
            rt.free(p)
    return {"size": size, "ms": ms, "tflops": 2.0 * size ** 3 / (ms * 1e-3) / 1e12}


# -- cuDNN convolution -------------------------------------------------------------------
class ConvPerf(ctypes.Structure):
    _fields_ = [("algo", ctypes.c_int), ("status", ctypes.c_int), ("time", ctypes.c_float),
                ("memory", ctypes.c_size_t), ("determinism", ctypes.c_int),
                ("mathType", ctypes.c_int), ("reserved", ctypes.c_int * 3)]


CUDNN_DTYPE = {"fp32": 0, "fp16": 2, "bf16": 9}


def conv_throughput(rt, dtype="fp16", n=128, c=256, k=256, hw=28, rs=3, also=()):
    """A ResNet-50-like 3x3 convolution (NHWC, tensor-op math, FP32 accumulation)."""
    lib = open_first("cudnn", also)
    lib.cudnnGetErrorString.restype = ctypes.c_char_p

    def check(call, rc):
        if rc != 0:
            raise CudaError(call, rc, lib.cudnnGetErrorString(rc).decode(errors="replace"))

    handle = ctypes.c_void_p()
    check("cudnnCreate", lib.cudnnCreate(ctypes.byref(handle)))
    x_d, y_d, w_d, conv_d = (ctypes.c_void_p() for _ in range(4))
    check("cudnnCreateTensorDescriptor", lib.cudnnCreateTensorDescriptor(ctypes.byref(x_d)))
    check("cudnnCreateTensorDescriptor", lib.cudnnCreateTensorDescriptor(ctypes.byref(y_d)))
    check("cudnnCreateFilterDescriptor", lib.cudnnCreateFilterDescriptor(ctypes.byref(w_d)))
    check("cudnnCreateConvolutionDescriptor",
          lib.cudnnCreateConvolutionDescriptor(ctypes.byref(conv_d)))
    kind, nhwc = CUDNN_DTYPE[dtype], 1
    check("cudnnSetTensor4dDescriptor", lib.cudnnSetTensor4dDescriptor(x_d, nhwc, kind, n, c, hw, hw))
    check("cudnnSetFilter4dDescriptor", lib.cudnnSetFilter4dDescriptor(w_d, kind, nhwc, k, c, rs, rs))
    check("cudnnSetConvolution2dDescriptor", lib.cudnnSetConvolution2dDescriptor(
        conv_d, rs // 2, rs // 2, 1, 1, 1, 1, 1, CUDNN_DTYPE["fp32"]))
    check("cudnnSetConvolutionMathType", lib.cudnnSetConvolutionMathType(conv_d, 1))
    dims = [ctypes.c_int() for _ in range(4)]
    check("cudnnGetConvolution2dForwardOutputDim", lib.cudnnGetConvolution2dForwardOutputDim(
        conv_d, x_d, w_d, *[ctypes.byref(d) for d in dims]))
    on, oc, oh, ow = (d.value for d in dims)
    check("cudnnSetTensor4dDescriptor", lib.cudnnSetTensor4dDescriptor(y_d, nhwc, kind, on, oc, oh, ow))
    element = 4 if dtype == "fp32" else 2
    block = encode(random_values(1 << 16, 5), dtype)
    sizes = (n * c * hw * hw * element, k * c * rs * rs * element, on * oc * oh * ow * element)
    x, w, y = (rt.malloc(s) for s in sizes)
    workspace = None
    try:
        fill(rt, x, block, sizes[0])
        fill(rt, w, block[3 * element:] + block[:3 * element], sizes[1])
        perf = (ConvPerf * 8)()
        count = ctypes.c_int()
        check("cudnnFindConvolutionForwardAlgorithm", lib.cudnnFindConvolutionForwardAlgorithm(
            handle, x_d, w_d, conv_d, y_d, 8, ctypes.byref(count), perf))
        best = next((p for p in perf[:count.value] if p.status == 0), None)
        if best is None:
            raise CudaError("cudnnFindConvolutionForwardAlgorithm", "no algorithm", "")
        workspace = rt.malloc(max(best.memory, 1))
        one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)

        def run():
            check("cudnnConvolutionForward", lib.cudnnConvolutionForward(
                handle, ctypes.byref(one), x_d, x, w_d, w, conv_d, best.algo, workspace,
                ctypes.c_size_t(best.memory), ctypes.byref(zero), y_d, y))

        ms = time_ms(rt, run, iters=20)
    finally:
        for p in (x, w, y, workspace):
            if p is not None:
                rt.free(p)
        lib.cudnnDestroy(handle)
    flops = 2.0 * on * oc * oh * ow * c * rs * rs
    return {"shape": "N%d C%d K%d %dx%d %dx%d NHWC" % (n, c, k, hw, hw, rs, rs), "dtype": dtype,
            "algo": best.algo, "ms": ms, "tflops": flops / (ms * 1e-3) / 1e12}


# -- NCCL --------------------------------------------------------------------------------
def nccl_allreduce(rt, ndev, count=1 << 26, also=()):
    """All-reduce of `count` floats over every visible GPU from one process. With one GPU
    the all-reduce moves nothing: it proves NCCL runs and sums, and no bandwidth is given."""
    if ndev == 1:
        count = min(count, 1 << 20)
    lib = open_first("nccl", also)
    lib.ncclGetErrorString.restype = ctypes.c_char_p

    def check(call, rc):
        if rc != 0:
            raise CudaError(call, rc, lib.ncclGetErrorString(rc).decode(errors="replace"))

    raw_comms = (ctypes.c_void_p * ndev)()
    devs = (ctypes.c_int * ndev)(*range(ndev))
    check("ncclCommInitAll", lib.ncclCommInitAll(raw_comms, ndev, devs))
    # indexing a c_void_p array yields a plain int, which ctypes would pass as a 32-bit C int
    comms = [ctypes.c_void_p(c) for c in raw_comms]
    bufs, streams = [], []
    nbytes = count * 4
    try:
        for d in range(ndev):
            rt.set_device(d)
            buf = rt.malloc(nbytes)
            rt.to_device(buf, struct.pack("<f", float(d + 1)) * count)
            bufs.append(buf)
            streams.append(rt.stream())

        def allreduce():
            check("ncclGroupStart", lib.ncclGroupStart())
            for d in range(ndev):
                check("ncclAllReduce", lib.ncclAllReduce(
                    bufs[d], bufs[d], ctypes.c_size_t(count), 7, 0, comms[d], streams[d]))
            check("ncclGroupEnd", lib.ncclGroupEnd())

        allreduce()  # in place: every element becomes 1 + 2 + ... + ndev
        for d in range(ndev):
            rt.set_device(d)
            rt.stream_sync(streams[d])
        expected = ndev * (ndev + 1) / 2.0
        rt.set_device(0)
        head = struct.unpack("<1024f", rt.to_host(bufs[0], 4096))
        correct = all(v == expected for v in head)
        if ndev == 1:
            return {"gpus": 1, "bytes": nbytes, "correct": correct, "ms": None,
                    "algbw_gbs": None, "busbw_gbs": None}
        rt.set_device(0)
        start, end = rt.event(), rt.event()
        iters = 5
        rt.record(start, streams[0])
        for _ in range(iters):
            allreduce()
        rt.record(end, streams[0])
        for d in range(ndev):
            rt.set_device(d)
            rt.stream_sync(streams[d])
        rt.set_device(0)
        ms = rt.elapsed_ms(start, end) / iters
    finally:
        for d, buf in enumerate(bufs):
            rt.set_device(d)
            rt.free(buf)
        for comm in comms:
            lib.ncclCommDestroy(comm)
        rt.set_device(0)
    algbw = nbytes / (ms * 1e-3) / 1e9
    return {"gpus": ndev, "bytes": nbytes, "correct": correct, "ms": ms, "algbw_gbs": algbw,
            "busbw_gbs": algbw * 2 * (ndev - 1) / ndev}


def error_of(exc):
    """A measurement's failure as data: the probe reports it and goes on."""
    return {"error": "%s: %s" % (type(exc).__name__, exc) if not isinstance(exc, CudaError)
            else str(exc), "code": getattr(exc, "code", None)}


def run_all(rt, gemm_size=8192, conv=True, nccl=True, found=None):
    """Every GPU measurement; each records its own error instead of stopping the rest.
    `found`: family -> library paths to load when no soname resolves."""
    found = found or {}
    started = time.monotonic()
    out = {"devices": []}
    count = rt.device_count()
    for d in range(count):
        out["devices"].append({
            "index": d, "sm_count": rt.attribute(ATTR_SM_COUNT, d),
            "compute_capability": "%d.%d" % (rt.attribute(ATTR_CC_MAJOR, d),
                                             rt.attribute(ATTR_CC_MINOR, d))})
    rt.set_device(0)
    cc = tuple(int(x) for x in out["devices"][0]["compute_capability"].split("."))
    dtypes = ["fp32", "fp16"] + (["tf32", "bf16"] if cc >= (8, 0) else [])

    parts = {}   # where the section's time goes

    def attempt(name, fn, into=out):
        begun = time.monotonic()
        try:
            into[name] = fn()
        except Exception as exc:  # one broken library must not hide the other measurements
            into[name] = error_of(exc)
        parts[name if into is out else "gemm." + name] = round(time.monotonic() - begun, 2)

    attempt("blas", lambda: Blas(rt, found.get("cublas", ())))
    blas = out.pop("blas")
    if isinstance(blas, dict):   # the library did not load: every GEMM says why
        out["tf32_check"] = blas
        out["gemm"] = {dtype: blas for dtype in dtypes}
    else:
        attempt("tf32_check", lambda: {
            "fp32_error": gemm_accuracy(rt, blas, "fp32"),
            "tf32_error": gemm_accuracy(rt, blas, "tf32") if "tf32" in dtypes else None,
            "boundary": TF32_ERROR_BOUNDARY})
        gemm = {}
        for dtype in dtypes:
            attempt(dtype, lambda: gemm_throughput(rt, blas, dtype, gemm_size), into=gemm)
        out["gemm"] = gemm
        blas.close()
    if conv:
        attempt("conv", lambda: conv_throughput(rt, "fp16", also=found.get("cudnn", ())))
    if nccl:
        attempt("nccl", lambda: nccl_allreduce(rt, count, also=found.get("nccl", ())))
    out["loaded"] = mapped_families()  # the library files the measurements ran with
    out["seconds"] = round(time.monotonic() - started, 2)
    out["parts_seconds"] = parts
    return out
