"""docs/claims.md: the table of claims (data/claims.yaml) as a page; `make docs` writes it
and tests/test_claims.py fails when it drifts."""
from __future__ import annotations

from .claims import Claim, table

SOURCES = {"nvidia": "NVIDIA's CUDA images", "ngc": "NGC's framework containers"}
ANSWERS = {"cudart": "the CUDA runtime's own version (cudaRuntimeGetVersion), major.minor",
           "cublas": "cuBLAS's own version (cublasGetProperty)",
           "cudnn": "cuDNN's own version (cudnnGetVersion)",
           "nccl": "NCCL's own version (ncclGetVersion)",
           "cufft": "cuFFT's own version (cufftGetProperty)",
           "curand": "cuRAND's own version (curandGetProperty)",
           "cusolver": "cuSOLVER's own version (cusolverGetProperty)",
           "cusparse": "cuSPARSE's own version (cusparseGetProperty)",
           "npp": "NPP's own version (nppGetLibVersion, from libnppc)",
           "nvjpeg": "nvJPEG's own version (nvjpegGetProperty)",
           "cutensor": "cuTENSOR's own version (cutensorGetVersion)",
           "tensorrt": "TensorRT's own version (getInferLibVersion, from libnvinfer)",
           "machine": "the architecture the image's python3 runs as",
           "compat": "a forward-compatibility libcuda under /usr/local/cuda*/compat/"}


def _answer(claim: Claim) -> str:
    if claim.requirement:
        return (f"a requirement on the host ({claim.note}), not a claim on the content" if claim.note
                else "a floor on the host's driver, not a claim on the content: the NVIDIA "
                     "runtime judges it at start; verify against the runtime the image holds")
    if claim.claims is None:
        return "nothing yet: an info line, *stated, not measured*" + (
            f" ({claim.note})" if claim.note else "")
    if claim.claims.startswith("dist:"):
        return f"the installed Python distribution `{claim.claims.split(':', 1)[1]}*`'s version"
    if claim.claims.startswith("framework:"):
        return f"{claim.claims.split(':', 1)[1]}'s `__version__`, imported in the image"
    return ANSWERS[claim.claims] + (f" ({claim.note})" if claim.note else "")


def _row(claim: Claim) -> str:
    form = f"`{claim.form}`" if claim.form else "(empty)"
    parts = claim.parts if claim.claims and claim.claims not in ("machine", "compat") else ""
    return (f"| `{claim.name}` | {claim.kind} | {', '.join(SOURCES[s] for s in claim.sources)} "
            f"| {form} | {parts} | {_answer(claim)} |")


def claims_page() -> str:
    rows = [_row(c) for c in table()]
    return "\n".join([
        "# What images say of their stack, and what answers it",
        "",
        "Generated from `src/imgkit/verify/data/claims.yaml` by `make docs`; "
        "`tests/test_claims.py` fails when it drifts, and when an excerpt of NVIDIA's or NGC's "
        "images kept in `tests/data/claims/` sets a variable this table does not know. "
        "[Verifying](verifying.md) says how the verdict shows them. "
        "[Back to the README](../README.md).",
        "",
        "Each variable or label an image sets that the table knows is a check of the verdict, "
        "named `env NAME` or `label NAME`: passed when what answers it agrees as far as the "
        "claim goes (`parts`: `12.4.5.8-1` held to 3 parts is 12.4.5; a `name=version` "
        "package is read after its `=`; a library's name before the number, `cuda-12.4` or "
        "`cudnn9`, and PyTorch's `cu124` are read as 12.4 and 9), failed naming both when it "
        "does not or the image "
        "holds no such library, and an info line when nothing imgkit measures answers it "
        "(stated, not verified). A label and a variable that state the same library and "
        "disagree fail together, named side by side.",
        "",
        "A variable the table does not know but named as these are, `NAME_VERSION` with a "
        "version for its value (a team's `TORCH_VERSION`, NGC's `TENSORFLOW_VERSION` or "
        "`OPENMPI_VERSION`), is read by its name: held, as far as it goes, to the framework "
        "of that name the probe imported, to the image's python3 for `PYTHON_VERSION`, to "
        "the library of that name (`CUBLASLT_VERSION`), else to the installed Python "
        "distribution or Debian package of that name (a team's `NUMPY_VERSION`, "
        "`PIP_VERSION`: the probe lists what is installed in the same run when the image "
        "states such a name), and failed naming both when they disagree. NGC's release of "
        "the container, `NVIDIA_<PRODUCT>_VERSION=YY.MM`, is never held to a package. A "
        "label `com.nvidia.NAME.version` the table does not know is read the same way (NGC's "
        "`com.nvidia.pytorch.version`). The ones nothing answers are named together on one "
        "info line, `env *_VERSION` or `label com.nvidia.*.version` (stated, not verified).",
        "",
        "| name | kind | set by | form | parts | answered by |",
        "|---|---|---|---|---|---|",
        *rows, ""])
