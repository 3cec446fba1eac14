"""Framework adapters (Paddle, PyTorch, JAX). Each runs in a child interpreter so that an
import that crashes or hangs is reported, not fatal, and reports versions, GPU visibility
and, when a GPU is wanted: a real step ON the GPU, the TF32 signature of the framework's
default FP32 matmul and convolution (measured, with the switches that should decide it),
and one mixed-precision training step (FP16 with a loss scaler, BF16) timed against FP32."""
from __future__ import annotations

import importlib.util
import re

COMMON = r'''
import json, math, os, random, sys, time, traceback
out = {"imported": False, "seconds": {}}
_STARTED = time.perf_counter()
def mark(phase):
    """Where the adapter's time goes: seconds since it started, at the end of each phase."""
    out["seconds"][phase] = round(time.perf_counter() - _STARTED, 3)
def _rel_error(pairs):
    num = sum((got - ref) ** 2 for got, ref in pairs)
    den = sum(ref ** 2 for _, ref in pairs)
    return math.sqrt(num / den)
def fp32_matmul_error(matmul, to_list, n=256):
    """The relative error of a 256^3 FP32 matmul, sampled against exact sums."""
    rng = random.Random(7)
    a = [[rng.uniform(-1, 1) for _ in range(n)] for _ in range(n)]
    b = [[rng.uniform(-1, 1) for _ in range(n)] for _ in range(n)]
    c = to_list(matmul(a, b))
    pairs = []
    for s in range(128):
        i, j = rng.randrange(n), rng.randrange(n)
        pairs.append((c[i][j], math.fsum(a[i][p] * b[p][j] for p in range(n))))
    return _rel_error(pairs)
def fp32_conv_error(conv, to_list, n=8, c=64, hw=16, k=64):
    """The same for a 3x3 'same' convolution, NCHW (the shape TF32 algorithms are picked
    for: a tiny one may run a non-tensor-core kernel whatever the switch says)."""
    rng = random.Random(11)
    x = [[[[rng.uniform(-1, 1) for _ in range(hw)] for _ in range(hw)] for _ in range(c)]
         for _ in range(n)]
    w = [[[[rng.uniform(-1, 1) for _ in range(3)] for _ in range(3)] for _ in range(c)]
         for _ in range(k)]
    y = to_list(conv(x, w))
    pairs = []
    for s in range(128):
        b, o, i, j = rng.randrange(n), rng.randrange(k), rng.randrange(hw), rng.randrange(hw)
        ref = math.fsum(x[b][ch][i + di][j + dj] * w[o][ch][di + 1][dj + 1]
                        for ch in range(c) for di in (-1, 0, 1) for dj in (-1, 0, 1)
                        if 0 <= i + di < hw and 0 <= j + dj < hw)
        pairs.append((y[b][o][i][j], ref))
    return _rel_error(pairs)
def read_switches(readers):
    """Each switch read on its own: one that fails (an old or new API) says so."""
    found = {}
    for key, read in readers:
        try:
            found[key] = read()
        except Exception as e:
            found[key] = "unreadable (%s)" % type(e).__name__
    return found
def wait_turn():
    """The probe says when this adapter may use the GPU (a line on stdin); until then it
    has only imported and prepared. It tells the probe it is ready first (a byte on the
    pipe the probe gave it). No line (the probe is gone): nothing more to do."""
    ready = os.environ.pop("IMGKIT_READY_FD", "")
    if ready:
        try:
            os.write(int(ready), b"r")
            os.close(int(ready))
        except (OSError, ValueError):
            pass
    if not sys.stdin.readline():
        os._exit(0)
    mark("waited")
AMP_ITERS = 10
def amp_report(step, sync, checksum, kinds):
    """`step(kind)` runs one training step (kind: fp32, fp16 or bf16) and returns its loss.
    Each kind: warmed up, then AMP_ITERS steps timed; the weights must move (the optimizer,
    through the scaler for FP16, really stepped) and the loss must be finite."""
    result = {}
    for kind in ["fp32"] + kinds:
        try:
            before = checksum()
            warming = time.perf_counter()
            for _ in range(3):
                step(kind)
            sync()
            warm_ms = (time.perf_counter() - warming) * 1e3   # first use: lazy set-up
            mark("amp_%s_warm" % kind)
            started = time.perf_counter()
            for _ in range(AMP_ITERS):
                loss = step(kind)
            sync()
            ms = (time.perf_counter() - started) * 1e3 / AMP_ITERS
            mark("amp_%s" % kind)
            loss = float(loss)
            result[kind] = {"ms": ms, "loss": loss, "finite": math.isfinite(loss),
                            "stepped": checksum() != before, "warmup_ms": warm_ms}
        except Exception as e:
            result[kind] = {"error": "%s: %s" % (type(e).__name__, str(e)[:300])}
    return result
'''

PADDLE = COMMON + r'''
def paddle_core():
    import paddle
    for name in ("paddle.base.core", "paddle.fluid.core"):
        try:
            return __import__(name, fromlist=["core"])
        except ImportError:
            pass
try:
    import paddle
    out["imported"] = True
    out["version"] = paddle.__version__
    out["build_cuda"] = paddle.version.cuda()
    out["build_cudnn"] = paddle.version.cudnn()
    out["compiled_with_cuda"] = bool(paddle.device.is_compiled_with_cuda())
    out["gpu_count"] = paddle.device.cuda.device_count() if out["compiled_with_cuda"] else 0
    mark("import")
    if WANT_GPU and out["gpu_count"] > 0:
        wait_turn()
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
        out["fp32_conv_error"] = fp32_conv_error(
            lambda x, w: paddle.nn.functional.conv2d(paddle.to_tensor(x, dtype="float32"),
                                                     paddle.to_tensor(w, dtype="float32"),
                                                     padding=1),
            lambda t: t.numpy().tolist())
        # Paddle 2.x decides TF32 by these two switches (phi's allow_tf32_cublas and
        # allow_tf32_cudnn, both true by default); FLAGS_enable_cublas_tensor_op_math is
        # about FP16 tensor-op math, not TF32.
        core = paddle_core()
        mark("tf32")
        out["tf32_switches"] = read_switches((
            ("core.get_cublas_switch", lambda: core.get_cublas_switch()),
            ("core.get_cudnn_switch", lambda: core.get_cudnn_switch())))
        model = paddle.nn.Sequential(paddle.nn.Linear(4096, 4096), paddle.nn.ReLU(),
                                     paddle.nn.Linear(4096, 4096))
        opt = paddle.optimizer.SGD(learning_rate=1e-3, parameters=model.parameters())
        scalers = {"fp16": paddle.amp.GradScaler(init_loss_scaling=65536.0)}
        data = paddle.randn([4096, 4096]); target = paddle.randn([4096, 4096])
        def step(kind):
            if kind == "fp32":
                loss = paddle.nn.functional.mse_loss(model(data), target)
                loss.backward()
                opt.step()
            else:
                with paddle.amp.auto_cast(dtype="float16" if kind == "fp16" else "bfloat16"):
                    loss = paddle.nn.functional.mse_loss(model(data).astype("float32"), target)
                scaler = scalers.get(kind)
                if scaler is None:
                    loss.backward()
                    opt.step()
                else:
                    scaler.scale(loss).backward()
                    scaler.step(opt)
                    scaler.update()
            opt.clear_grad()
            return loss
        try:
            bf16 = bool(paddle.amp.is_bfloat16_supported())
        except Exception:
            bf16 = False
        out["amp"] = amp_report(step, paddle.device.cuda.synchronize,
                                lambda: float(model[0].weight.sum()),
                                ["fp16"] + (["bf16"] if bf16 else []))
        if not bf16:
            out["amp"]["bf16"] = {"skipped": "no BF16 on this GPU"}
        if "error" not in out["amp"]["fp16"]:
            try:
                out["amp"]["fp16"]["scale"] = float(scalers["fp16"]._scale)
            except Exception:
                pass
except BaseException as e:
    out["error"] = "%s: %s" % (type(e).__name__, e)
    out["traceback_tail"] = traceback.format_exc().strip().splitlines()[-3:]
mark("end")
EMIT(json.dumps(out, default=str))
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
    mark("import")
    if WANT_GPU and out["gpu_count"] > 0:
        # CPU work before the turn: the model's weights, and a process's first optimizer,
        # which costs seconds whatever its parameters (4.4 s on the lent H200)
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
                                    torch.nn.Linear(4096, 4096))
        torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1e-3)
        mark("prepared")
        wait_turn()
        x = torch.randn(1024, 1024, device="cuda")
        y = x @ x
        torch.cuda.synchronize()
        out["step_place"] = str(y.device)
        out["step_on_gpu"] = y.device.type == "cuda"
        mark("step")
        out["fp32_matmul_error"] = fp32_matmul_error(
            lambda a, b: torch.tensor(a, device="cuda") @ torch.tensor(b, device="cuda"),
            lambda t: t.cpu().tolist())
        out["fp32_conv_error"] = fp32_conv_error(
            lambda x, w: torch.nn.functional.conv2d(torch.tensor(x, device="cuda"),
                                                    torch.tensor(w, device="cuda"), padding=1),
            lambda t: t.cpu().tolist())
        # read one by one: torch >= 2.9 may refuse a legacy read once the new API was used
        mark("tf32")
        out["tf32_switches"] = read_switches((
            ("torch.backends.cuda.matmul.allow_tf32", lambda: torch.backends.cuda.matmul.allow_tf32),
            ("torch.backends.cuda.matmul.fp32_precision",
             lambda: torch.backends.cuda.matmul.fp32_precision),
            ("torch.backends.cudnn.allow_tf32", lambda: torch.backends.cudnn.allow_tf32),
            ("torch.backends.cudnn.conv.fp32_precision",
             lambda: torch.backends.cudnn.conv.fp32_precision),
            ("float32_matmul_precision", torch.get_float32_matmul_precision)))
        model = model.cuda()
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        scaler = torch.amp.GradScaler("cuda") if hasattr(torch, "amp") and hasattr(
            torch.amp, "GradScaler") else torch.cuda.amp.GradScaler()
        data = torch.randn(4096, 4096, device="cuda")
        target = torch.randn(4096, 4096, device="cuda")
        mark("model")
        def step(kind):
            opt.zero_grad(set_to_none=True)
            dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(kind)
            with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None):
                loss = torch.nn.functional.mse_loss(model(data).float(), target)
            if kind == "fp16":
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
            return loss.detach()
        bf16 = torch.cuda.is_bf16_supported()
        out["amp"] = amp_report(step, torch.cuda.synchronize,
                                lambda: float(model[0].weight.detach().sum()),
                                ["fp16"] + (["bf16"] if bf16 else []))
        if not bf16:
            out["amp"]["bf16"] = {"skipped": "no BF16 on this GPU"}
        if "error" not in out["amp"]["fp16"]:
            out["amp"]["fp16"]["scale"] = float(scaler.get_scale())
except BaseException as e:
    out["error"] = "%s: %s" % (type(e).__name__, e)
    out["traceback_tail"] = traceback.format_exc().strip().splitlines()[-3:]
mark("end")
EMIT(json.dumps(out, default=str))
'''

JAX = COMMON + r'''
import os
def compiled_or_error(job):
    """A compile's program, or one that raises its error when a step calls it: amp_report
    then records the failure against that kind alone."""
    try:
        return job.result()
    except Exception as e:
        def failed(*args, _error=e):
            raise _error
        return failed
def dotted(v):
    """CUDA's integer versions (13000, 91900) as 13.0 / 9.19.0."""
    v = int(v)
    return "%d.%d" % (v // 1000, v % 1000 // 10) if v < 20000 else "%d.%d.%d" % (
        v // 10000, v % 10000 // 100, v % 100)
try:
    import jax
    out["imported"] = True
    out["version"] = jax.__version__
    try:
        from jax._src.lib import cuda_versions
    except ImportError:
        cuda_versions = None
    if cuda_versions is not None:
        try:
            out["build_cuda"] = dotted(cuda_versions.cuda_runtime_build_version())
            out["build_cudnn"] = dotted(cuda_versions.cudnn_build_version())
        except Exception:
            pass
    out["compiled_with_cuda"] = cuda_versions is not None
    # JAX falls back to the CPU with a warning when its CUDA plugin cannot start
    try:
        gpus = [d for d in jax.devices() if d.platform == "gpu"]
    except RuntimeError:
        gpus = []
    out["gpu_count"] = len(gpus)
    mark("import")
    if WANT_GPU and gpus:
        import jax.numpy as jnp
        from concurrent.futures import ThreadPoolExecutor
        # JAX has no autocast: mixed precision is FP32 weights, the step computed in the low
        # precision, and for FP16 a loss scale (static here) that the update divides out.
        LOSS_SCALE = 2.0 ** 15
        def make(dtype, scale):
            def loss_fn(p, data, target):
                w1, w2, xs = p["w1"].astype(dtype), p["w2"].astype(dtype), data.astype(dtype)
                h = jax.nn.relu(xs @ w1)
                return jnp.mean(((h @ w2).astype(jnp.float32) - target) ** 2) * scale
            def step(p, data, target):
                loss, grads = jax.value_and_grad(loss_fn)(p, data, target)
                grads = jax.tree_util.tree_map(lambda g: g.astype(jnp.float32) / scale, grads)
                ok = jnp.all(jnp.array([jnp.all(jnp.isfinite(g)) for g in jax.tree_util.tree_leaves(grads)]))
                new = jax.tree_util.tree_map(lambda w, g: jnp.where(ok, w - 1e-3 * g, w), p, grads)
                return new, loss / scale
            return jax.jit(step)
        square = jax.ShapeDtypeStruct((4096, 4096), jnp.float32)
        # traced and lowered before the turn (CPU work); compiled at the turn, since XLA's
        # autotuning times candidate kernels on the GPU
        lowered = {kind: make(dtype, scale).lower({"w1": square, "w2": square}, square, square)
                   for kind, dtype, scale in (("fp32", jnp.float32, 1.0),
                                              ("fp16", jnp.float16, LOSS_SCALE),
                                              ("bf16", jnp.bfloat16, 1.0))}
        mark("prepared")
        wait_turn()
        # The three compiles run side by side, and beside the untimed steps below; every
        # timed step waits for all of them.
        pool = ThreadPoolExecutor(len(lowered))
        compiling = {kind: pool.submit(program.compile) for kind, program in lowered.items()}
        x = jax.device_put(jnp.ones((1024, 1024), jnp.float32), gpus[0])
        y = (x @ x).block_until_ready()
        place = list(y.devices())[0]
        out["step_place"] = str(place)
        out["step_on_gpu"] = place.platform == "gpu"
        mark("step")
        with jax.default_device(gpus[0]):
            out["fp32_matmul_error"] = fp32_matmul_error(
                lambda a, b: jnp.matmul(jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32)),
                lambda t: t.tolist())
            out["fp32_conv_error"] = fp32_conv_error(
                lambda x, w: jax.lax.conv_general_dilated(
                    jnp.asarray(x, jnp.float32), jnp.asarray(w, jnp.float32), (1, 1), "SAME"),
                lambda t: t.tolist())
        # JAX's one switch: None (the default) lets XLA use TF32 on GPUs that have it
        mark("tf32")
        out["tf32_switches"] = read_switches((
            ("jax_default_matmul_precision", lambda: jax.config.jax_default_matmul_precision),
            ("JAX_DEFAULT_MATMUL_PRECISION", lambda: os.environ.get("JAX_DEFAULT_MATMUL_PRECISION"))))
        key = jax.random.PRNGKey(0)
        k1, k2, k3, k4 = jax.random.split(key, 4)
        with jax.default_device(gpus[0]):
            params = {"w1": jax.random.normal(k1, (4096, 4096)) * 0.01,
                      "w2": jax.random.normal(k2, (4096, 4096)) * 0.01}
            data = jax.random.normal(k3, (4096, 4096))
            target = jax.random.normal(k4, (4096, 4096))
        mark("model")
        programs = {kind: compiled_or_error(job) for kind, job in compiling.items()}
        pool.shutdown()
        mark("compiled")
        state = {"params": params}
        def step(kind):
            state["params"], loss = programs[kind](state["params"], data, target)
            return loss
        out["amp"] = amp_report(step, lambda: jax.block_until_ready(state["params"]),
                                lambda: float(jnp.sum(state["params"]["w1"])), ["fp16", "bf16"])
        if "error" not in out["amp"]["fp16"]:
            out["amp"]["fp16"]["scale"] = LOSS_SCALE
except BaseException as e:
    out["error"] = "%s: %s" % (type(e).__name__, e)
    out["traceback_tail"] = traceback.format_exc().strip().splitlines()[-3:]
mark("end")
EMIT(json.dumps(out, default=str))
'''

ADAPTERS = {"paddle": ("paddle", PADDLE), "torch": ("torch", TORCH), "jax": ("jax", JAX)}
# JAX takes 75% of the GPU's memory at its first step unless told not to; the probe's own
# GPU section runs after the adapters have exited, but keep the child polite anyway.
CHILD_ENV = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
MISSING_LIB = re.compile(r"(lib[\w.+-]+\.so[\w.]*): cannot open shared object file")


def present():
    return [name for name, (module, _) in ADAPTERS.items()
            if importlib.util.find_spec(module) is not None]
