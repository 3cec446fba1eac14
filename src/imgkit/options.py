"""The options of `imgkit build`, `verify` and `publish`, each default declared once (the CLI
shows these).
Nothing beyond the standard library (and `shipped`, which is the same): the CLI loads this
at start-up."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import UsageError
from .shipped import install_command

if TYPE_CHECKING:
    from .registry.destination import Destination


@dataclass(frozen=True)
class BuildOptions:
    jobs: int = 2                   # images built at once
    force: bool = False             # rebuild without the layer cache, even what is up to date
    keep_parents: bool = False      # with force: only the images --cuda/--only name
    dry_run: bool = False           # say what would be built; build nothing
    engine: str = "auto"            # docker: docker-py's builder; buildx: `docker buildx bake`;
                                    # podman: Podman's builder through its API; auto: podman
                                    # on Podman, else buildx where BuildKit can build the plan
    builder: str | None = None      # with buildx: the builder to use (default: buildx's own)
    refresh_base: bool = False      # make every base OS image again (the chain rebuilds on it)

    def __post_init__(self) -> None:
        if self.keep_parents and not self.force:
            raise UsageError("--keep-parents only says what --force rebuilds", hint="add --force")
        if self.engine not in ("auto", "docker", "buildx", "podman"):
            raise UsageError(f"--engine {self.engine}: unknown build engine",
                             hint="auto, docker, buildx or podman")
        if self.builder is not None and self.engine in ("docker", "podman"):
            raise UsageError("--builder names a buildx builder",
                             hint=f"leave out --engine {self.engine}")


@dataclass(frozen=True)
class Thresholds:
    """Minimum share of the GPU's dense peak (scaled to the SMs visible) to pass."""
    gemm: float = 0.5
    conv: float = 0.25
    amp_speedup: float = 0.0   # AMP step's speedup over FP32 it must reach (0: reported only)


@dataclass(frozen=True)
class VerifyOptions:
    gpus: str = "all"               # none, all, a count, device ids, or CDI names (gpus.py)
    expect: tuple[str, ...] = ()    # KEY=VALUE overrides of what the labels and tag say
    timeout: int = 600              # seconds the probe may run
    memory: str = "16g"             # the probe container's memory limit
    shm_size: str | None = None     # the probe container's /dev/shm (the engine's default: 64m)
    thresholds: Thresholds = Thresholds()
    gemm_size: int = 8192
    updates: bool = False           # also ask the image's apt sources what waits (network)
    platform: str | None = None     # the platform the image must be (default: whatever it is)
    checks: Path | None = None      # the team's declared checks (container-structure-test YAML)


@dataclass(frozen=True)
class Signer:
    """How verdicts are signed when attached: a cosign key reference (a key file, env://VAR,
    a KMS URI), or keyless (Fulcio and Rekor with the CI's OIDC token)."""
    key: str | None = None
    keyless: bool = False
    tlog: bool | None = None      # upload to Rekor: default off with a key, on keyless

    @property
    def signs(self) -> bool:
        return bool(self.key) or self.keyless

    @property
    def uploads(self) -> bool:
        return self.tlog if self.tlog is not None else not self.key


@dataclass(frozen=True)
class Trust:
    """What a verdict's signature must verify against: a cosign public key reference, or a
    keyless identity (the certificate's subject and the OIDC issuer that vouched for it)."""
    key: str | None = None
    identity: str | None = None
    issuer: str | None = None
    tlog: bool | None = None      # check Rekor: default off with a key, on keyless

    @property
    def configured(self) -> bool:
        return bool(self.key or (self.identity and self.issuer))

    @property
    def checks_tlog(self) -> bool:
        return self.tlog if self.tlog is not None else not self.key


@dataclass(frozen=True)
class PublishOptions:
    allow_gpu_unverified: bool = False   # accept verdicts whose GPU checks did not run
    candidate: bool = False              # staging: no gate, no human tags, no verdict
    dry_run: bool = False
    retry_for: float = 120.0             # seconds spent retrying transient failures, per step
    compression: str = "gzip"            # publish: the layers' compression (gzip: the engine's push)
    signer: Signer = Signer()            # sign the verdict and SBOM attached (publish)
    trust: Trust = Trust()               # promote: the signature a verdict needs
    allow_unsigned: bool = False         # promote: accept unsigned verdicts (forgeable)
    max_age: float | None = None         # promote: seconds a verdict stays good
    require_scan: bool = False           # publish, promote: a passing scan too (the project names a database)
    require_reproduced: bool = False     # promote: the verdict says `imgkit reproduce` got it again


BUILD_DEFAULTS = BuildOptions()
DEFAULTS = VerifyOptions()
PUBLISH_DEFAULTS = PublishOptions()


@dataclass(frozen=True)
class CiSettings:
    registry: Destination              # where verified images are promoted to
    staging: Destination               # where candidates wait for their verdicts
    gpu_runner: str = "gpu"            # GitHub self-hosted label / GitLab runner tag
    gpu_arm64_runner: str = "gpu-arm64"  # the same, of the arm64 machines (Grace) with GPUs
    cpu_runner: str = ""               # "" = the platform's default runners
    arm64_runner: str = ""             # CPU runners of arm64 builds; "" = the platform's hosted ones
    emulate_arm64: bool = False        # build arm64 images on the CPU runners, under QEMU
    install: str = ""                  # "": this imgkit, by its PyPI name and version
    verify_gpus: str = "all"           # 'none' makes a pipeline that cannot prove the GPU
    matrix_args: tuple[str, ...] = ()  # --images/--namespace/--compat as the jobs must pass them
    signing_key: str = ""              # cosign key the verify jobs sign with; "": keyless
    trusted_key: str = ""              # its public half, for promote; "": the keyless identity
    locks: str = ""                    # the matrix's locks folder when it has locks ("": none)
    selection_args: tuple[str, ...] = ()  # --cuda/--only of the pipeline
    release_branch: str = ""           # whose pushes promote; "": main (GitHub), the default (GitLab)
    pages: bool = False                # the release branch's verdicts published as the site (Pages)
    compression: str = "gzip"          # the staged (so promoted) layers': gzip or zstd
    max_age: str = ""                  # how old a signed verdict a verify job keeps may be,
                                       # as written (7d); "": verify jobs judge every image
    advisories: str = ""               # the advisory database's folder from the checkout's
                                       # root, when the project gates on scans ("": it does not)
    root: Path | None = None           # the project's folder, where jobs run (None: here)
    project_dir: str = ""              # that folder from the checkout's root ("": the root)
    watched: tuple[str, ...] = ()      # what a push must change to run the pipeline (a
                                       # monorepo's folder and the file); (): any push

    def in_checkout(self, paths: str) -> str:
        """`paths` (one a line), relative to the project's folder, as the platform's own
        steps name them: from the checkout's root (artifacts, caches)."""
        if not self.project_dir:
            return paths
        return "\n".join(self.project_dir if p.strip() == "." else
                         f"{self.project_dir}/{p}" if p.strip() else p for p in paths.split("\n"))

    @property
    def scans(self) -> bool:
        """Whether the project gates on known vulnerabilities (it names a vulnerability_db)."""
        return bool(self.advisories)

    @property
    def install_command(self) -> str:
        return self.install or install_command()

    def build_runner(self, platform: str) -> str:
        """The runner of a job building `platform`'s images ("" for every platform, or a
        job that builds none): --arm64-runner for arm64, --cpu-runner for the rest; "" for
        the platform's default."""
        return self.arm64_runner if platform == "linux/arm64" else self.cpu_runner

    def verify_runner(self, platform: str) -> str:
        """The runner a verify job of `platform`'s image runs on: a machine of that
        platform, so its GPU checks run natively."""
        return self.gpu_arm64_runner if platform == "linux/arm64" else self.gpu_runner

    @property
    def proves_gpu(self) -> bool:
        return self.verify_gpus != "none"

    @property
    def keyless(self) -> bool:
        return not self.signing_key
