"""TF32 claims and AMP steps judged from reported facts (pure logic; the GPU side is
tests/test_gpu.py, run on a lent GPU)."""
from __future__ import annotations

import pytest

from imgkit.options import Thresholds
from imgkit.verify.expect import Expectations
from imgkit.verify.facts import AmpRun, Framework
from imgkit.verify.precision import amp_checks, claim_for, tf32_checks
from imgkit.verify.verdict import FAIL, PASS, SKIP

FP32, TF32 = 1.4e-07, 2.4e-04
HOPPER, VOLTA = (9, 0), (7, 0)


def exp(source: str = "label", **values: str) -> Expectations:
    return Expectations(tuple(sorted(values.items())), tuple((k, source) for k in sorted(values)))


def checks_of(framework: str, matmul: float, conv: float, claims: Expectations,
              cc: tuple[int, int] | None = HOPPER) -> dict[str, str]:
    fw = Framework(imported=True, step_on_gpu=True, fp32_matmul_error=matmul, fp32_conv_error=conv)
    return {c.name.split(".", 1)[1]: c.verdict for c in tf32_checks(framework, fw, claims, cc)}


@pytest.mark.parametrize("framework,matmul,conv", [
    ("torch", FP32, TF32),   # matmul off since 1.12, cuDNN convolutions on
    ("jax", TF32, TF32),     # jax_default_matmul_precision None: XLA picks TF32
    ("paddle", TF32, TF32),  # phi's allow_tf32_cublas / allow_tf32_cudnn start true
])
def test_each_framework_default_passes_and_its_opposite_fails(framework: str, matmul: float,
                                                              conv: float) -> None:
    assert checks_of(framework, matmul, conv, exp()) == {"fp32-matmul-mode": PASS,
                                                         "fp32-conv-mode": PASS}
    flipped = {FP32: TF32, TF32: FP32}
    assert checks_of(framework, flipped[matmul], flipped[conv], exp()) == {
        "fp32-matmul-mode": FAIL, "fp32-conv-mode": FAIL}


def test_a_failed_tf32_check_names_both_modes_and_where_the_claim_came_from() -> None:
    fw = Framework(imported=True, step_on_gpu=True, fp32_matmul_error=TF32)
    (check,) = tf32_checks("torch", fw, exp(), HOPPER)
    assert check.verdict == FAIL and check.required
    assert "runs in tf32" in check.diagnosis and "fp32 was claimed (torch's default)" in check.diagnosis


def test_the_image_label_overrides_the_default_per_operation() -> None:
    claims = exp(tf32="on", tf32_conv="off")
    assert checks_of("torch", TF32, FP32, claims) == {"fp32-matmul-mode": PASS,
                                                      "fp32-conv-mode": PASS}
    assert claim_for("torch", "matmul", "tf32", claims, HOPPER).source == "label tf32=on"  # type: ignore[union-attr]


def test_below_ampere_fp32_is_the_only_claim_whatever_was_said() -> None:
    assert checks_of("jax", FP32, FP32, exp(tf32="on"), VOLTA) == {"fp32-matmul-mode": PASS,
                                                                   "fp32-conv-mode": PASS}
    assert claim_for("jax", "conv", "tf32_conv", exp(), VOLTA).source.startswith("no TF32 below")  # type: ignore[union-attr]


def test_an_unknown_framework_without_a_claim_is_reported_not_judged() -> None:
    fw = Framework(imported=True, step_on_gpu=True, fp32_matmul_error=TF32)
    (check,) = tf32_checks("mxnet", fw, exp(), HOPPER)
    assert check.verdict == PASS and not check.required


def amp(**runs: AmpRun) -> Framework:
    return Framework(imported=True, step_on_gpu=True,
                     amp={"fp32": AmpRun(ms=14.0, loss=1.05, finite=True, stepped=True), **runs})


GOOD = AmpRun(ms=2.0, loss=1.05, finite=True, stepped=True, scale=65536.0)


def test_a_finite_stepped_amp_run_passes_with_its_speedup_in_the_words() -> None:
    (fp16, bf16) = amp_checks("torch", amp(fp16=GOOD, bf16=AmpRun(skipped="no BF16 on this GPU")),
                              Thresholds())
    assert fp16.verdict == PASS and "7.0x FP32" in fp16.measured and "loss scale 65536" in fp16.measured
    assert bf16.verdict == SKIP and not bf16.required


@pytest.mark.parametrize("run,words", [
    (AmpRun(ms=2.0, loss=float("nan"), finite=False, stepped=True), "not finite"),
    (AmpRun(ms=2.0, loss=1.0, finite=True, stepped=False), "did not move"),
    (AmpRun(error="RuntimeError: no kernel image"), "raised"),
])
def test_a_broken_amp_step_fails(run: AmpRun, words: str) -> None:
    (check,) = amp_checks("torch", amp(fp16=run), Thresholds())
    assert check.verdict == FAIL and check.required and words in check.diagnosis


def test_the_speedup_floor_is_judged_only_when_set() -> None:
    slow = AmpRun(ms=10.0, loss=1.0, finite=True, stepped=True)
    (check,) = amp_checks("torch", amp(fp16=slow), Thresholds())
    assert check.verdict == PASS
    (check,) = amp_checks("torch", amp(fp16=slow), Thresholds(amp_speedup=2.0))
    assert check.verdict == FAIL and "not 2x faster" in check.diagnosis


def test_a_mismatch_an_image_env_switch_explains_names_it_and_how_to_claim_it() -> None:
    # NGC's PyTorch images set TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1: TF32 matmuls, no label
    fw = Framework(imported=True, step_on_gpu=True, fp32_matmul_error=TF32)
    env = {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1", "NVIDIA_TF32_OVERRIDE": None}
    (check,) = tf32_checks("torch", fw, exp(), HOPPER, env)
    assert check.verdict == FAIL
    assert "the image sets TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1" in check.diagnosis
    assert "org.imgkit.tf32=on" in check.diagnosis and "--expect tf32=on" in check.diagnosis
    # with a claim made, the claim is what failed: no hint
    (claimed,) = tf32_checks("torch", fw, exp(tf32="off"), HOPPER, env)
    assert claimed.verdict == FAIL and "the image sets" not in claimed.diagnosis
    # the switch as claimed: passes
    (ok,) = tf32_checks("torch", fw, exp(tf32="on"), HOPPER, env)
    assert ok.verdict == PASS


def test_a_switch_that_does_not_reach_the_framework_is_not_named() -> None:
    # NVIDIA_TF32_OVERRIDE=0 turns cuBLAS/cuDNN TF32 off, not XLA's: no excuse for JAX's FP32
    fw = Framework(imported=True, step_on_gpu=True, fp32_matmul_error=FP32)
    (check,) = tf32_checks("jax", fw, exp(), HOPPER, {"NVIDIA_TF32_OVERRIDE": "0"})
    assert check.verdict == FAIL and "the image sets" not in check.diagnosis
    (named,) = tf32_checks("jax", fw, exp(), HOPPER, {"JAX_DEFAULT_MATMUL_PRECISION": "highest"})
    assert "the image sets JAX_DEFAULT_MATMUL_PRECISION=highest" in named.diagnosis
    assert "--expect tf32=off" in named.diagnosis


def test_the_probe_reads_every_variable_that_switches_tf32() -> None:
    # the probe ships alone (it imports nothing of imgkit's), so it keeps its own list of
    # what it reads; a switch missing from it would never be named by the hint
    from imgkit import tf32
    from imgkit.probe.__main__ import ENV_READ
    for framework in tf32.ENV:
        assert set(tf32.switches(framework)) <= set(ENV_READ), framework
