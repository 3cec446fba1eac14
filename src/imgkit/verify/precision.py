"""What a framework's FP32 math and mixed precision must look like, judged from what the
probe measured: the TF32 mode of its default FP32 matmul and convolution (always judged:
the claim is the image's own label or --expect, else the framework's documented default),
and one AMP training step per low precision (finite loss, the optimizer really stepped,
its speed against FP32)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .. import labels, tf32
from ..options import Thresholds
from ..probe.gpu import TF32_ERROR_BOUNDARY
from .expect import Expectations
from .facts import AmpRun, Framework, Report
from .verdict import FAIL, PASS, SKIP, Check

TF32_FIRST_CC = (8, 0)   # no TF32 tensor cores before Ampere: FP32 math stays FP32

# Each framework's default TF32 use for FP32 math on a GPU that has TF32, as its own source
# and docs say (and the lent H100 confirmed for torch and JAX, docs/gpu.md):
# - torch: matmul off since 1.12 (torch.backends.cuda.matmul.allow_tf32 = False,
#   float32_matmul_precision 'highest'), cuDNN convolutions on (cudnn.allow_tf32 = True);
# - paddle 2.x: both on (phi's allow_tf32_cublas and allow_tf32_cudnn are initialised true;
#   core.set_cublas_switch / set_cudnn_switch turn them off);
# - jax: both on (jax_default_matmul_precision None lets XLA pick TF32 for f32 dots and
#   convolutions; 'highest' or JAX_DEFAULT_MATMUL_PRECISION=highest turns it off).
DEFAULTS: dict[str, dict[str, str]] = {
    "torch": {"matmul": "off", "conv": "on"},
    "paddle": {"matmul": "on", "conv": "on"},
    "jax": {"matmul": "on", "conv": "on"},
}
OPS = (("matmul", "tf32", "fp32_matmul_error"), ("conv", "tf32_conv", "fp32_conv_error"))


def ran_as_tf32(report: Report) -> dict[tuple[str, str], bool]:
    """(framework, op) -> whether its default FP32 matmul or convolution ran as TF32 (its
    error signature), where the probe measured it; what was claimed aside."""
    return {(name, op): getattr(fw, field) > TF32_ERROR_BOUNDARY
            for name, fw in sorted(report.frameworks.items()) for op, _key, field in OPS
            if getattr(fw, field) is not None}


@dataclass(frozen=True)
class Claim:
    mode: str      # "tf32" or "fp32": what the math must be
    source: str    # why: "label tf32=on", "torch's default", "no TF32 below compute 8.0"
    by_default: bool = False   # nothing claimed it: the framework's documented default


def claim_for(framework: str, op: str, key: str, exp: Expectations,
              compute_capability: tuple[int, int] | None) -> Claim | None:
    """The mode `framework`'s default FP32 `op` must run in on this GPU, or None when
    nothing claims one (a framework imgkit has no default for, and no claim made)."""
    said = exp.get(key)
    if compute_capability is not None and compute_capability < TF32_FIRST_CC:
        return Claim("fp32", f"no TF32 below compute capability {TF32_FIRST_CC[0]}.0")
    if said is not None:
        return Claim("tf32" if said == "on" else "fp32", f"{exp.source(key) or 'claim'} {key}={said}")
    default = DEFAULTS.get(framework, {}).get(op)
    if default is None:
        return None
    return Claim("tf32" if default == "on" else "fp32", f"{framework}'s default", by_default=True)


def tf32_checks(name: str, fw: Framework, exp: Expectations,
                compute_capability: tuple[int, int] | None,
                env: Mapping[str, str | None] | None = None) -> list[Check]:
    """One check per operation; `env` is the container's environment as the probe read it."""
    checks = []
    for op, key, field in OPS:
        err = getattr(fw, field)
        if err is None:
            continue
        mode = "tf32" if err > TF32_ERROR_BOUNDARY else "fp32"
        claim = claim_for(name, op, key, exp, compute_capability)
        ok = claim is None or claim.mode == mode
        expected = f"{claim.mode} ({claim.source})" if claim else "reported"
        checks.append(Check(
            f"{name}.fp32-{op}-mode", PASS if ok else FAIL, expected,
            f"{mode} (rel. error {err:.1e}); switches {fw.tf32_switches}",
            "" if ok else f"{name}'s FP32 {op} runs in {mode}, but {claim.mode if claim else '?'} "
                          f"was claimed ({claim.source if claim else ''})"
                          + _env_hint(env or {}, tf32.switches(name), claim, key, mode),
            required=claim is not None))
    return checks


def _env_hint(env: Mapping[str, str | None], names: tuple[str, ...], claim: Claim | None,
              key: str, mode: str) -> str:
    """When only the default was the claim and the image sets one of the framework's TF32
    switches (`names`): which, and how to say that its mode is meant. The switches alone
    are no claim (NGC's PyTorch images carry TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, no label)."""
    switches = [f"{name}={env[name]}" for name in names if env.get(name)]
    if claim is None or not claim.by_default or not switches:
        return ""
    value = "on" if mode == "tf32" else "off"
    return (f"; the image sets {', '.join(switches)}: if {mode} is meant, label it "
            f"{labels.component(key)}={value} (a family's `tf32:`) or pass --expect {key}={value}")


def amp_checks(name: str, fw: Framework, thresholds: Thresholds) -> list[Check]:
    """One check per low precision; the speedup over FP32 is informational unless the user
    set a floor (--min-amp-speedup)."""
    if not fw.amp:
        return []
    base = fw.amp.get("fp32")
    checks = []
    for kind in ("fp16", "bf16"):
        run = fw.amp.get(kind)
        if run is None:
            continue
        checks.append(_amp_check(f"{name}.amp-{kind}", kind, run, base, thresholds.amp_speedup))
    return checks


def _amp_check(check: str, kind: str, run: AmpRun, base: AmpRun | None, floor: float) -> Check:
    wanted = "finite loss, optimizer stepped" + (f", >= {floor:g}x FP32" if floor else "")
    if run.skipped:
        return Check(check, SKIP, wanted, run.skipped, required=False)
    if run.error:
        return Check(check, FAIL, wanted, run.error, f"the {kind} training step raised")
    if base is not None and base.error:
        return Check(check, FAIL, wanted, f"FP32 step: {base.error}", "the FP32 training step raised")
    speedup = base.ms / run.ms if base and base.ms and run.ms else None
    scale = f", loss scale {run.scale:g}" if run.scale is not None else ""
    measured = (f"loss {run.loss:.4g}{scale}, {run.ms or 0:.1f} ms/step"
                + (f", {speedup:.1f}x FP32" if speedup else ""))
    problems = []
    if not run.finite:
        problems.append("the loss is not finite")
    if not run.stepped:
        problems.append("the weights did not move (every step skipped)")
    if floor and (speedup is None or speedup < floor):
        problems.append(f"{kind} is not {floor:g}x faster than FP32")
    if problems:
        return Check(check, FAIL, wanted, measured, "; ".join(problems))
    return Check(check, PASS, wanted, measured)
