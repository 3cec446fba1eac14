"""Framework adapters (Paddle, PyTorch). Each runs in a child interpreter so that an import
that crashes or hangs is reported, not fatal, and reports versions, GPU visibility and,
when a GPU is wanted, a real step ON the GPU plus the default FP32 matmul's TF32 signature."""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

COMMON = r'''
import json, math, random, sys, traceback
out = {"imported": False}
def fp32_matmul_error(matmul, to_list, n=256):
    rng = random.Random(7)
    a = [[rng.uniform(-1, 1) for _ in range(n)] for _ in range(n)]
    b = [[rng.uniform(-1, 1) for _ in range(n)] for _ in range(n)]
    c = to_list(matmul(a, b))
    num = den = 0.0
    for s in range(128):
        i, j = rng.randrange(n), rng.randrange(n)
        ref = math.fsum(a[i][p] * b[p][j] for p in range(n))
        num += (c[i][j] - ref) ** 2
        den += ref ** 2
    return math.sqrt(num / den)
'''

PADDLE = COMMON + r'''
try:
    import paddle
    out["imported"] = True
    out["version"] = paddle.__version__
    out["build_cuda"] = paddle.version.cuda()
    out["build_cudnn"] = paddle.version.cudnn()
    out["compiled_with_cuda"] = bool(paddle.device.is_compiled_with_cuda())
    out["gpu_count"] = paddle.device.cuda.device_count() if out["compiled_with_cuda"] else 0
    if WANT_GPU and out["gpu_count"] > 0:
        paddle.set_device("gpu:0")
        x = paddle.randn([1024, 1024], dtype="float32")
        y = paddle.matmul(x, x)
        paddle.device.cuda.synchronize()
        out["step_place"] = str(y.place)
        out["step_on_gpu"] = y.place.is_gpu_place()
        out["fp32_matmul_error"] = fp32_matmul_error(
            lambda a, b: paddle.matmul(paddle.to_tensor(a, dtype="float32"),
                                       paddle.to_tensor(b, dtype="float32")),
            lambda t: t.numpy().tolist())
        try:
            out["tf32_switches"] = paddle.get_flags(["FLAGS_enable_cublas_tensor_op_math"])
        except Exception as e:
            out["tf32_switches"] = {"error": str(e)}
except BaseException as e:
    out["error"] = "%s: %s" % (type(e).__name__, e)
    out["traceback_tail"] = traceback.format_exc().strip().splitlines()[-3:]
print("IMGKIT-JSON " + json.dumps(out, default=str))
'''

TORCH = COMMON + r'''
try:
    import torch
    out["imported"] = True
    out["version"] = torch.__version__
    out["build_cuda"] = torch.version.cuda
    out["build_cudnn"] = torch.backends.cudnn.version()
    out["compiled_with_cuda"] = torch.version.cuda is not None
    out["gpu_count"] = torch.cuda.device_count()
    if WANT_GPU and out["gpu_count"] > 0:
        x = torch.randn(1024, 1024, device="cuda")
        y = x @ x
        torch.cuda.synchronize()
        out["step_place"] = str(y.device)
        out["step_on_gpu"] = y.device.type == "cuda"
        out["fp32_matmul_error"] = fp32_matmul_error(
            lambda a, b: torch.tensor(a, device="cuda") @ torch.tensor(b, device="cuda"),
            lambda t: t.cpu().tolist())
        # read one by one: torch >= 2.9 may refuse a legacy read once the new API was used
        switches = {}
        for key, read in (
                ("torch.backends.cuda.matmul.allow_tf32", lambda: torch.backends.cuda.matmul.allow_tf32),
                ("torch.backends.cuda.matmul.fp32_precision",
                 lambda: torch.backends.cuda.matmul.fp32_precision),
                ("torch.backends.cudnn.allow_tf32", lambda: torch.backends.cudnn.allow_tf32),
                ("float32_matmul_precision", torch.get_float32_matmul_precision)):
            try:
                switches[key] = read()
            except Exception as e:
                switches[key] = "unreadable (%s)" % type(e).__name__
        out["tf32_switches"] = switches
except BaseException as e:
    out["error"] = "%s: %s" % (type(e).__name__, e)
    out["traceback_tail"] = traceback.format_exc().strip().splitlines()[-3:]
print("IMGKIT-JSON " + json.dumps(out, default=str))
'''

ADAPTERS = {"paddle": ("paddle", PADDLE), "torch": ("torch", TORCH)}
MISSING_LIB = re.compile(r"(lib[\w.+-]+\.so[\w.]*): cannot open shared object file")


def present():
    return [name for name, (module, _) in ADAPTERS.items()
            if importlib.util.find_spec(module) is not None]


def run(name, want_gpu, timeout=300):
    _, code = ADAPTERS[name]
    try:
        proc = subprocess.run([sys.executable, "-c", "WANT_GPU = %r\n" % want_gpu + code],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"imported": False, "error": "timed out after %d s" % timeout}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("IMGKIT-JSON "):
            result = json.loads(line[len("IMGKIT-JSON "):])
            break
    else:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        result = {"imported": False,
                  "error": "crashed (exit %d): %s" % (proc.returncode, " | ".join(tail))}
    missing = MISSING_LIB.search(result.get("error", "") + proc.stderr)
    if missing:
        result["missing_library"] = missing.group(1)
    return result
