"""What an image's environment says it holds, where NVIDIA's and NGC's images say it
(CUDA_VERSION, NV_LIBCUBLAS_VERSION, CUDNN_VERSION, NCCL_VERSION, PYTORCH_VERSION...), held
against what the probe measured. The complaint most often made of such images is that the
environment names one version and the libraries are another.

Read from the image's config on the host (not by the probe), so an image that sets them
is judged whatever imgkit version built it. Pure logic: the environment comes in as data."""
from __future__ import annotations

import re

from .facts import Report
from .verdict import FAIL, PASS, Check

# variable -> (the library family or framework the probe reports, how many version parts
# a claim of it is held to: the CUDA toolkit's 12.4.1 ships cudart 12.4.127, so major.minor)
CLAIMS: dict[str, tuple[str, int]] = {
    "CUDA_VERSION": ("cudart", 2),
    "NV_CUDA_LIB_VERSION": ("cudart", 2),
    "NV_LIBCUBLAS_VERSION": ("cublas", 3),
    "CUDNN_VERSION": ("cudnn", 3),
    "NV_CUDNN_VERSION": ("cudnn", 3),
    "NCCL_VERSION": ("nccl", 3),
    "NV_LIBNCCL_PACKAGE_VERSION": ("nccl", 3),
    "PYTORCH_VERSION": ("framework:torch", 3),
}
NUMBERS = re.compile(r"^v?(\d+(?:\.\d+)*)")


def _version(text: str, parts: int) -> str | None:
    """`2.21.5-1+cuda12.4` -> 2.21.5 (a Debian revision, a local build suffix dropped)."""
    found = NUMBERS.match(text.strip())
    return ".".join(found.group(1).split(".")[:parts]) if found else None


def _measured(report: Report, what: str) -> str | None:
    if what.startswith("framework:"):
        framework = report.frameworks.get(what.split(":", 1)[1])
        return framework.version if framework is not None and framework.imported else None
    return report.libraries.version(what)


def claim_checks(report: Report, env: dict[str, str]) -> list[Check]:
    """One check per claim the image's environment makes: passed when the measured version
    agrees as far as the claim says; failed, naming both, when it does not."""
    checks = []
    for variable, (what, parts) in CLAIMS.items():
        claim = _version(env.get(variable) or "", parts)
        if claim is None:
            continue
        measured = _measured(report, what)
        name = what.split(":", 1)[-1]
        if measured is None:
            checks.append(Check(f"env {variable}", FAIL, f"{name} {claim}", "not found",
                                f"the image says {variable}={env[variable]} but holds no "
                                f"{name} the probe could load"))
            continue
        ok = _version(measured, len(claim.split("."))) == claim    # 2.5.1+cu124 is 2.5.1
        checks.append(Check(f"env {variable}", PASS if ok else FAIL, claim, measured,
                            "" if ok else f"the image says {variable}={env[variable]}, but its "
                            f"{name} is {measured}"))
    return checks
