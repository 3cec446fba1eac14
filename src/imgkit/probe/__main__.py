"""`python3 -m imgkit_probe [--no-gpu] [--gemm-size N] [--framed]`: print the facts as one
JSON document on a private copy of standard output, framed by marker lines for verify and
Kubernetes Jobs (see channel.py)."""
from __future__ import annotations

import argparse
import os
import time

# Only what starts the frameworks' import is imported before it: that import is the probe's
# critical path (most of its time), and every module before it delays it. The rest is
# imported in main() once the adapters run.
from . import PROBE_VERSION, channel, frameworks, turns

# The environment the report carries: what the NVIDIA runtime and the loader need, and the
# variables that switch a framework's TF32 use.
ENV_READ = ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_REQUIRE_CUDA",
            "CUDA_VERSION", "LD_LIBRARY_PATH", "NVIDIA_TF32_OVERRIDE",
            "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "JAX_DEFAULT_MATMUL_PRECISION")
# Names frameworks dlopen bare; checked whether or not a framework declares them.
BARE_NAMES = ("libcudart.so", "libcublas.so", "libcublasLt.so", "libcudnn.so", "libnccl.so",
              "libcurand.so", "libcusolver.so", "libcusparse.so", "libcufft.so")


def system_facts():
    import platform
    try:
        st = os.statvfs("/dev/shm")
        shm = st.f_frsize * st.f_blocks
    except OSError:
        shm = None
    try:
        import pwd
        user = pwd.getpwuid(os.getuid()).pw_name
    except (KeyError, ImportError):
        user = None
    return {"python": platform.python_version(), "machine": platform.machine(),
            "uid": os.getuid(), "user": user,
            "shm_bytes": shm, "env": {k: os.environ.get(k) for k in ENV_READ},
            "cuda_compat": cuda_compat()}


# NVIDIA's forward-compatibility package (cuda-compat-X-Y) puts a newer driver's user-mode
# libraries beside the toolkit: /usr/local/cuda-12.4/compat/libcuda.so.550.54.15; NGC's
# containers keep them under /usr/local/cuda/compat/lib(.real).
COMPAT_GLOBS = ("/usr/local/cuda*/compat/libcuda.so*", "/usr/local/cuda*/compat/*/libcuda.so*")


def cuda_compat():
    """The forward-compatibility libcuda copies the image carries (their real paths)."""
    import glob
    found = {os.path.realpath(p) for pattern in COMPAT_GLOBS for p in glob.glob(pattern)}
    return sorted(p for p in found if os.path.isfile(p))[:16]


def gpu_facts(args, libraries):
    from . import cuda
    # copies outside the loader's search (wheels a framework reaches by its RPATH), loaded
    # by path when no soname resolves
    found = {family: [c["path"] for c in f["copies"] if c.get("where") == "environment"
                      and c.get("loadable")] for family, f in libraries["families"].items()}
    out = {"nvml": cuda.nvml_info()}
    try:
        rt = cuda.Runtime(found.get("cudart", ()))
    except OSError as exc:
        out["runtime_error"] = {"error": str(exc), "code": None}
        return out
    try:
        out["device_count"] = rt.device_count()
        out["driver_cuda"] = rt.driver_version()
    except cuda.CudaError as exc:
        out["device_count"] = 0
        out["runtime_error"] = {"error": str(exc), "code": exc.code}
        return out
    if out["device_count"] > 0 and not args.no_gpu:
        from . import gpu
        try:
            out["work"] = gpu.run_all(rt, gemm_size=args.gemm_size, found=found)
        except cuda.CudaError as exc:
            out["runtime_error"] = {"error": str(exc), "code": exc.code}
    return out


def examine_libraries(names):
    from . import libs, priority
    priority.lower()   # this pool thread only: the framework's keeps its priority
    return libs.collect(), libs.resolve_names(names)


def list_installed():
    from . import inventory, priority
    priority.lower()   # beside the frameworks' import, yielding to it
    return inventory.collect()


def timed(seconds, name, fn, *args):
    """fn(*args), its duration kept in seconds[name]: where the probe's time goes."""
    started = time.monotonic()
    try:
        return fn(*args)
    finally:
        seconds[name] = round(time.monotonic() - started, 3)


def main(argv=None):
    started = time.monotonic()
    seconds = {}
    parser = argparse.ArgumentParser(prog="imgkit-check", description=__doc__)
    parser.add_argument("--no-gpu", action="store_true", help="skip all GPU work")
    parser.add_argument("--gemm-size", type=int, default=8192)
    parser.add_argument("--inventory", action="store_true",
                        help="also list the OS packages and Python distributions (for an SBOM)")
    parser.add_argument("--no-frameworks", action="store_true",
                        help="import no framework (an SBOM alone needs none)")
    parser.add_argument("--names", default=",".join(BARE_NAMES),
                        help="bare library names to resolve, comma-separated")
    parser.add_argument("--framed", action="store_true",
                        help="frame the report with marker lines (on whenever %s is set)"
                        % channel.MARK_ENV)
    args = parser.parse_args(argv)
    framed = args.framed or channel.MARK_ENV in os.environ
    token = channel.token_from_env()
    report_out = channel.private_stdout()
    names = [n for n in args.names.split(",") if n]
    present = [] if args.no_frameworks else frameworks.present()
    # A framework's import is most of the probe's time: each adapter starts at once, in its
    # own interpreter, and imports while the libraries are examined and the probe's own GPU
    # section runs. Their GPU steps then take turns (`go`), after the probe's measurements,
    # so that nothing shares the GPU with a timing: AMP steps included. The first ready
    # goes first.
    started_fw = time.monotonic()
    adapters = {name: turns.Adapter(name, not args.no_gpu) for name in present}
    import json
    from concurrent.futures import ThreadPoolExecutor

    from . import declared, inventory, requirements
    with ThreadPoolExecutor(max_workers=4) as pool:
        pip_run = pool.submit(timed, seconds, "pip_check", requirements.pip_check)
        # the team's commandTests use no GPU: they run while the frameworks import
        commands = declared.wanted(declared.COMMANDS_ENV)
        commands_run = (pool.submit(timed, seconds, "commands", declared.run_commands, commands)
                        if commands else None)
        listed = pool.submit(timed, seconds, "inventory", list_installed) if args.inventory else None
        libraries, bare_names = pool.submit(timed, seconds, "libraries", examine_libraries,
                                            names).result()
        gpu = timed(seconds, "gpu", gpu_facts, args, libraries)
        results = {adapter.name: adapter.result(timeout) for adapter, timeout
                   in turns.by_readiness(adapters.values())}
        found = {name: results[name] for name in adapters}
        seconds["frameworks"] = round(time.monotonic() - started_fw, 3)
        pip = pip_run.result()
        ran_commands = commands_run.result() if commands_run is not None else None
        installed = listed.result() if listed is not None else None
    report = {"probe_version": PROBE_VERSION, "system": system_facts(), "libraries": libraries,
              "bare_names": bare_names, "frameworks": found, "pip_check": pip,
              "distributions": inventory.claimed_distributions(),
              "args": {"no_gpu": args.no_gpu}}
    if ran_commands is not None:     # the team's commandTests, in this same container
        report["commands"] = ran_commands
    report["gpu"] = gpu
    snippets = declared.wanted()
    if snippets:      # the team's gpuTests, once the GPU work is done
        report["declared"] = timed(seconds, "declared", declared.run_all, snippets)
    if installed is not None:
        report["inventory"] = installed
    seconds["total"] = round(time.monotonic() - started, 3)
    report["seconds"] = seconds
    text = json.dumps(report, indent=1, sort_keys=True, default=str)
    report_out.write(channel.frame(text, token) if framed else text + "\n")
    report_out.flush()


if __name__ == "__main__":
    main()
