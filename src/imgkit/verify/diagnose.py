"""Known failure messages and what they mean: a broken host or a broken image."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Scope = Literal["host", "image"]   # who must act on a failure: fix the machine, or the image
HOST: Scope = "host"
IMAGE: Scope = "image"


@dataclass(frozen=True)
class Diagnosis:
    key: str
    scope: Scope
    summary: str
    fix: str

    @property
    def advice(self) -> str:
        """What a failing check says of it: the cause, then what to do."""
        return f"{self.summary}; fix: {self.fix}"


KNOWN: tuple[tuple[str, Diagnosis], ...] = (
    (r'could not select device driver "[^"]*" with capabilities: \[\[gpu\]\]',
     # (the first `imgkit verify IMAGE` on a laptop meets it: --gpus all is the default)
     Diagnosis("toolkit-missing", HOST, "Docker has no NVIDIA runtime on this host",
               "install the NVIDIA Container Toolkit (nvidia-container-toolkit), run "
               "`sudo nvidia-ctk runtime configure --runtime=docker` and restart dockerd; on a "
               "machine with no NVIDIA GPU, verify without one: --gpus none (the verdict says "
               "the GPU was not verified)")),
    (r"unsatisfied condition: cuda\s*>=\s*[0-9.]+",
     Diagnosis("driver-too-old-require", HOST,
               "the host driver is older than the image's NVIDIA_REQUIRE_CUDA",
               "upgrade the NVIDIA driver, or use an image built for an older CUDA")),
    (r"error 35\b|CUDA driver version is insufficient",
     Diagnosis("driver-insufficient", HOST,
               "the host driver is too old for the image's CUDA runtime (error 35)",
               "upgrade the driver to the minimum for this CUDA, or use an older CUDA image")),
    (r"error 804\b|forward compatibility was attempted on non supported HW",
     Diagnosis("forward-compat", HOST, "CUDA forward compatibility is not supported on this GPU "
               "(error 804)", "use a driver that natively supports the image's CUDA")),
    (r"error 802\b|system not yet initialized",
     Diagnosis("fabric-manager", HOST, "the GPU system is not initialized (error 802); on "
               "NVSwitch systems the fabric manager is not running",
               "start nvidia-fabricmanager (same version as the driver)")),
    (r"Failed to initialize NVML",
     Diagnosis("nvml-init", HOST, "NVML cannot initialize inside the container",
               "check the driver is loaded (nvidia-smi on the host) and the toolkit's cgroup "
               "setup; restarting the container after a driver update often fixes it")),
    (r"Driver/library version mismatch",
     Diagnosis("driver-library-mismatch", HOST,
               "the loaded kernel module and the user-space driver differ",
               "reboot, or reload the nvidia kernel modules, after a driver upgrade")),
    (r"unresolvable CDI devices|CDI device injection failed",
     Diagnosis("cdi-unresolvable", HOST, "the CDI spec for the GPUs is missing or stale",
               "run `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`")),
    (r"error 100\b|no CUDA-capable device is detected",
     Diagnosis("no-gpu", HOST, "no GPU is visible to the container",
               "check nvidia-smi on the host and the --gpus selection")),
    (r"no kernel image is available for execution on the device",
     Diagnosis("no-kernel-image", IMAGE, "the framework was not compiled for this GPU's "
               "compute capability", "use a build that includes this GPU's architecture")),
    (r"CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH|cuDNN sub-library version mismatch|"
     r"sub-library .* version mismatch",
     Diagnosis("cudnn-sublibrary-mismatch", IMAGE, "cuDNN sub-libraries of different versions "
               "are mixed", "install a single cuDNN; remove the other copy from the loader path")),
    (r"ncclSystemError|NCCL error.*(system error|unhandled system error)",
     Diagnosis("nccl-system", HOST, "NCCL hit a system error (usually shared memory or IPC)",
               "run with a larger --shm-size (e.g. 8g) or --ipc=host")),
    # QEMU's user-mode emulator says this when the program it runs crashes: never on a
    # machine of the image's platform (e.g. torch's oneDNN reading an arm64 CPU register
    # from sysfs, which an x86-64 host has not)
    (r"qemu: uncaught target signal",
     Diagnosis("qemu-emulation", HOST, "it crashed under this host's QEMU emulation, not on a "
               "machine of the image's platform", "judge the image on a machine of its platform")),
    (r"Bus error|bus error \(core dumped\)",
     Diagnosis("shm-bus-error", HOST, "a bus error: /dev/shm is too small for the workload",
               "run with --shm-size=8g (Docker's default is 64 MB) or --ipc=host")),
)
_COMPILED = tuple((re.compile(pattern, re.I), diagnosis) for pattern, diagnosis in KNOWN)


def diagnose(text: str) -> Diagnosis | None:
    for pattern, diagnosis in _COMPILED:
        if pattern.search(text or ""):
            return diagnosis
    return None
