"""Running the probe on a GPU host without Docker: shared by tests/test_gpu.py and
bench/gpu_proof.py. No pytest here, so the benchmark can import it."""
from __future__ import annotations

import base64
import glob
import json
import os
import site
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from imgkit.probe import frameworks
from imgkit.verify.evaluate import evaluate
from imgkit.verify.expect import Expectations
from imgkit.verify.facts import parse_report
from imgkit.verify.verdict import Check

SRC = str(Path(__file__).resolve().parent.parent / "src")

# (case, prelude, extra environment, the default FP32 matmul mode torch then really uses).
# The prelude runs at interpreter start (a sitecustomize), as an image would set a default.
TF32_CASES: list[tuple[str, str, dict[str, str], str]] = [
    ("torch default", "", {}, "fp32"),
    ("allow_tf32 = True", "torch.backends.cuda.matmul.allow_tf32 = True", {}, "tf32"),
    ("precision 'high'", "torch.set_float32_matmul_precision('high')", {}, "tf32"),
    ("precision 'highest'", "torch.set_float32_matmul_precision('highest')", {}, "fp32"),
    ("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1", "", {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"}, "tf32"),
    ("allow_tf32 + NVIDIA_TF32_OVERRIDE=0", "torch.backends.cuda.matmul.allow_tf32 = True",
     {"NVIDIA_TF32_OVERRIDE": "0"}, "fp32"),
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


def probe_host(gemm_size: int = 8192, loader: list[str] | None = None,
               env: dict[str, str] | None = None) -> dict[str, Any]:
    """This host's report from the probe exactly as `imgkit verify` ships it into a
    container (the zipped package, started by verify's BOOT), GPU section included.
    `loader`: how to start python (default: this interpreter); `env`: its environment
    (default: this one with the wheels' libraries on LD_LIBRARY_PATH)."""
    from imgkit.verify.run import BOOT, probe_zip
    env = dict(env if env is not None else loader_env())
    env["IMGKIT_PROBE"] = base64.b64encode(probe_zip()).decode()
    env["PYTHONPATH"] = ""  # as in an image: nothing of imgkit's importable but the zip
    proc = subprocess.run([*(loader or [sys.executable]), "-c", BOOT, "--gemm-size", str(gemm_size)],
                          env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"probe exit {proc.returncode}: {proc.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def torch_facts(prelude: str = "", **env: str) -> dict[str, Any]:
    """The probe's torch adapter, with `prelude` run at interpreter start and `env` added."""
    old = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="imgkit-site-") as folder:
        Path(folder, "sitecustomize.py").write_text("import torch\n" + prelude + "\n" if prelude else "")
        os.environ.update({"PYTHONPATH": folder, **env})
        try:
            return frameworks.run("torch", want_gpu=True)
        finally:
            os.environ.clear()
            os.environ.update(old)


def judge(report: dict[str, Any], **expected: str) -> dict[str, Check]:
    """Every check of `imgkit verify`'s evaluation of `report`, by name."""
    exp = Expectations(tuple(sorted(expected.items())),
                       tuple((k, "--expect") for k in sorted(expected)))
    return {c.name: c for c in evaluate("host", "host", parse_report(report), exp, gpu=True).checks}
