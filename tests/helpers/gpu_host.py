"""Running the probe on a GPU host without Docker: shared by tests/test_gpu.py and
bench/gpu_proof.py. No pytest here, so the benchmark can import it."""
from __future__ import annotations

import glob
import json
import os
import site
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from imgkit.options import Thresholds
from imgkit.probe import channel, frameworks, turns
from imgkit.verify.evaluate import evaluate
from imgkit.verify.expect import Expectations
from imgkit.verify.facts import parse_report
from imgkit.verify.verdict import Check

SRC = str(Path(__file__).resolve().parents[2] / "src")

# (framework, case, prelude, extra environment, the modes its default FP32 matmul and
# convolution then really use). The prelude runs at interpreter start (a sitecustomize),
# as an image would set a default. The modes are each framework's documented behaviour;
# for JAX, checked against float64 with numpy on the lent H100 (docs/gpu.md).
TF32_CASES: list[tuple[str, str, str, dict[str, str], str, str]] = [
    ("torch", "torch default", "", {}, "fp32", "tf32"),
    ("torch", "allow_tf32 = True", "torch.backends.cuda.matmul.allow_tf32 = True", {}, "tf32", "tf32"),
    ("torch", "precision 'high'", "torch.set_float32_matmul_precision('high')", {}, "tf32", "tf32"),
    ("torch", "precision 'highest'", "torch.set_float32_matmul_precision('highest')", {}, "fp32", "tf32"),
    ("torch", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1", "", {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"},
     "tf32", "tf32"),
    ("torch", "cudnn.allow_tf32 = False", "torch.backends.cudnn.allow_tf32 = False", {}, "fp32", "fp32"),
    ("torch", "allow_tf32 + NVIDIA_TF32_OVERRIDE=0", "torch.backends.cuda.matmul.allow_tf32 = True",
     {"NVIDIA_TF32_OVERRIDE": "0"}, "fp32", "fp32"),
    ("jax", "jax default", "", {}, "tf32", "tf32"),
    ("jax", "JAX_DEFAULT_MATMUL_PRECISION=highest", "", {"JAX_DEFAULT_MATMUL_PRECISION": "highest"},
     "fp32", "fp32"),
    ("jax", "config 'float32'", "jax.config.update('jax_default_matmul_precision', 'float32')", {},
     "fp32", "fp32"),
    ("jax", "config 'tensorfloat32'",
     "jax.config.update('jax_default_matmul_precision', 'tensorfloat32')", {}, "tf32", "tf32"),
]
# Ways a framework silently ends up on the CPU: the GPU hidden from it, or (JAX) told to.
CPU_FALLBACKS: list[tuple[str, dict[str, str]]] = [
    ("torch", {"CUDA_VISIBLE_DEVICES": ""}),
    ("jax", {"CUDA_VISIBLE_DEVICES": ""}),
    ("jax", {"JAX_PLATFORMS": "cpu"}),
]


def nvidia_gpu_present() -> bool:
    """Decided without the code under test: the driver's device nodes."""
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")


def wheel_lib_dirs() -> list[str]:
    """The lib/ folders of NVIDIA's CUDA wheels (nvidia/<component>/lib, nvidia/cu13/lib)."""
    roots = site.getsitepackages() + [site.getusersitepackages()] + sys.path
    found = {d for root in roots if root and os.path.isdir(os.path.join(root, "nvidia"))
             for d in glob.glob(os.path.join(root, "nvidia", "**", "lib"), recursive=True)
             if glob.glob(os.path.join(d, "lib*.so*"))}
    return sorted(found)


def loader_env(**extra: str) -> dict[str, str]:
    """This environment with the wheels' libraries on the loader path and imgkit importable."""
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = ":".join(wheel_lib_dirs() + [env.get("LD_LIBRARY_PATH", "")]).rstrip(":")
    env["PYTHONPATH"] = ":".join([SRC, env.get("PYTHONPATH", "")]).rstrip(":")
    env.update(extra)
    return env


def boot_in(boot: str, folder: str) -> str:
    """verify's BOOT, writing the probe's zip into `folder`: BOOT writes it to /tmp, a
    container's own, and on this host another worker's run (or test_probe_boot's cleanup)
    would meet the shared path, and the file would stay after the tests."""
    here = boot.replace("'/tmp/imgkit_probe.zip'", repr(f"{folder}/imgkit_probe.zip"))
    if here == boot:
        raise RuntimeError("verify's BOOT no longer writes /tmp/imgkit_probe.zip: update boot_in")
    return here


def probe_host(gemm_size: int = 8192, loader: list[str] | None = None,
               env: dict[str, str] | None = None, args: tuple[str, ...] = ()) -> dict[str, Any]:
    """This host's report from the probe exactly as `imgkit verify` ships it into a
    container (the zipped package, started by verify's BOOT), GPU section included.
    `loader`: how to start python (default: this interpreter); `env`: its environment
    (default: this one with the wheels' libraries on LD_LIBRARY_PATH); `args`: the probe's
    other arguments, e.g. --inventory."""
    from imgkit.verify.run import BOOT, probe_variables, probe_zip
    env = dict(env if env is not None else loader_env())
    env.update(probe_variables(probe_zip()))
    env["PYTHONPATH"] = ""  # as in an image: nothing of imgkit's importable but the zip
    token = channel.new_token()
    env[channel.MARK_ENV] = token           # as verify frames it
    with tempfile.TemporaryDirectory(prefix="imgkit-probe-") as where:
        proc = subprocess.run([*(loader or [sys.executable]), "-c", boot_in(BOOT, where), "--gemm-size",
                               str(gemm_size), *args],
                              env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"probe exit {proc.returncode}: {proc.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(channel.unframe(proc.stdout, token) or "null")
    return report


def framework_facts(name: str, prelude: str = "", **env: str) -> dict[str, Any]:
    """The probe's adapter for `name`, with `prelude` run at interpreter start and `env`
    added."""
    old = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="imgkit-site-") as folder:
        module = frameworks.ADAPTERS[name][0]
        Path(folder, "sitecustomize.py").write_text(f"import {module}\n{prelude}\n" if prelude else "")
        os.environ.update({"PYTHONPATH": folder, **env})
        try:
            return turns.run(name, want_gpu=True)
        finally:
            os.environ.clear()
            os.environ.update(old)


_SEEN: dict[tuple[str, str, tuple[tuple[str, str], ...]], dict[str, Any]] = {}


def framework_facts_once(name: str, prelude: str = "", **env: str) -> dict[str, Any]:
    """framework_facts, run once per case in a session (each run imports the framework and
    times an AMP step: seconds)."""
    key = (name, prelude, tuple(sorted(env.items())))
    if key not in _SEEN:
        _SEEN[key] = framework_facts(name, prelude, **env)
    return json.loads(json.dumps(_SEEN[key]))


def judge(report: dict[str, Any], thresholds: Thresholds | None = None,
          **expected: str) -> dict[str, Check]:
    """Every check of `imgkit verify`'s evaluation of `report`, by name."""
    exp = Expectations(tuple(sorted(expected.items())),
                       tuple((k, "--expect") for k in sorted(expected)))
    verdict = evaluate("host", "host", parse_report(report), exp, gpu=True,
                       thresholds=thresholds or Thresholds())
    return {c.name: c for c in verdict.checks}
