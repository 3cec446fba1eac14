"""How an image's environment switches each framework's FP32 math to TF32 or not (checked
on a lent H100 for torch and JAX, docs/gpu.md): what a family's `tf32:` sets, and which
variables verify names when an image's math disagrees with its framework's default."""
from __future__ import annotations

# NVIDIA_TF32_OVERRIDE=0 turns cuBLAS and cuDNN TF32 off for torch and paddle, but does not
# reach JAX's XLA.
ENV: dict[str, dict[str, dict[str, str]]] = {
    "torch": {"on": {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"}, "off": {"NVIDIA_TF32_OVERRIDE": "0"}},
    "jax": {"on": {"JAX_DEFAULT_MATMUL_PRECISION": "tensorfloat32"},
            "off": {"JAX_DEFAULT_MATMUL_PRECISION": "highest"}},
    "paddle": {"on": {}, "off": {"NVIDIA_TF32_OVERRIDE": "0"}},    # paddle 2.x: on by default
}


def switches(framework: str) -> tuple[str, ...]:
    """The environment variables that switch `framework`'s TF32 use, either way."""
    return tuple(sorted({name for env in ENV.get(framework, {}).values() for name in env}))
