"""Every option of the command line, declared once: its name, the word its value is shown
as in --help (never a Python type), and its help. A command names the ones it takes; a name
means one thing wherever it appears (a signing key is --signing-key, a trusted public key
--trusted-key). Defaults are given where a command takes the option. The `imgkit export`
commands' own options are in export_flags.py."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..gpus import plain as plain_gpus
from .paths import given_name, output_option, path_argument, path_option

WHICH = "Which images"      # the panel --help shows the selection options in


def show_version(value: bool) -> None:
    """--version's callback: it answers before any command runs."""
    if value:
        from ..shipped import DISTRIBUTION, version
        print(f"imgkit {version()} ({DISTRIBUTION}, Python {sys.version.split()[0]}, "
              f"{Path(__file__).resolve().parent.parent})")
        raise typer.Exit(0)


Version = Annotated[bool, typer.Option(
    "--version", is_eager=True, callback=show_version, help="Print imgkit's version and exit.")]

# The matrix and the part of it a command works on (cli/framework.py's `selects` adds them)
Cuda = Annotated[Optional[str], typer.Option(
    "--cuda", metavar="X.Y", help="Only the images of this CUDA release, e.g. 11.8.", rich_help_panel=WHICH)]
Only = Annotated[list[str], typer.Option(
    "--only", metavar="GLOB", help="Only the tags matching this glob, and their parents "
                                   "(repeatable: any of the globs).", rich_help_panel=WHICH)]
Platforms = Annotated[list[str], typer.Option(
    "--platform", metavar="PLATFORM", help="Only the images of this platform, linux/amd64 or "
    "linux/arm64 (repeatable; default: every platform the matrix makes each image for).",
    rich_help_panel=WHICH)]
Images = Annotated[Optional[Path], path_option(
    "--images", metavar="DIR", envvar="IMGKIT_IMAGES", show_default=False,
    help="The folder of matrix files (*.yaml) (default: the project file's `images`, else "
         "images/ here).", rich_help_panel=WHICH)]
Templates = Annotated[Optional[Path], path_option(
    "--templates", metavar="DIR", envvar="IMGKIT_TEMPLATES",
    help="The template folder (default: the project file's `templates`, else templates/ beside "
         "--images, else the templates imgkit ships).", rich_help_panel=WHICH)]
Namespace = Annotated[Optional[str], typer.Option(
    "--namespace", metavar="NAME", envvar="IMGKIT_NAMESPACE", show_default=False, parser=given_name,
    help="Repository prefix of the shared layers (default: the project file's, else imgkit).",
    rich_help_panel=WHICH)]
Compat = Annotated[Optional[Path], path_option(
    "--compat", metavar="FILE", envvar="IMGKIT_COMPAT",
    help="Your compatibility data (new CUDA releases, framework builds), merged over the "
         "shipped data (default: the project file's `compat`, else compat.yaml in --images).",
    rich_help_panel=WHICH)]

# init
InitFolder = Annotated[Path, path_argument(
    metavar="FOLDER", help="Where the project goes (made if need be; default: here).",
    show_default=False)]

InitCi = Annotated[Optional[str], typer.Option(
    "--ci", metavar="github|gitlab", help="Also write the project's CI pipeline for this CI "
    "(as `imgkit ci` does; needs --registry).", show_default=False)]
InitRegistry = Annotated[Optional[str], typer.Option(
    "--registry", metavar="REGISTRY[/NAMESPACE]", help="Where verified images are promoted.",
    show_default=False)]

# Results and hand-overs between CI jobs
Json = Annotated[Optional[Path], output_option(
    "--json", metavar="FILE", help="Also write the result as JSON to FILE ('-': to stdout, "
    "and what is said to a person goes to stderr).")]
Candidates = Annotated[Optional[Path], path_option(
    "--candidates", metavar="DIR", help="The `imgkit publish --candidate --json` files of "
    "earlier CI jobs: an image they staged is taken by its staged digest.")]
RetryFor = Annotated[float, typer.Option(
    "--retry-for", metavar="SECONDS", min=0, help="How long to keep retrying a registry "
    "failure that may heal (timeouts, 5xx, 429); a refused connection or an unknown host "
    "fails at once.")]
ReuseFrom = Annotated[Optional[str], typer.Option(
    "--reuse-from", metavar="REGISTRY[/NAMESPACE]", help="Where the matrix's images are "
    "published: an image that registry holds, built from the same inputs, is taken by "
    "digest instead of being built or staged again.")]
NeededBy = Annotated[Optional[list[str]], typer.Option(
    "--needed-by", metavar="TAG", help="With --reuse-from: take the selected images only as "
    "far as these later images need them (repeatable). Where that registry holds an image "
    "unchanged, nothing under it is needed; a pipeline's job of shared layers says so for "
    "the final images of the jobs after it.", show_default=False)]
IndexUrl = Annotated[Optional[str], typer.Option(
    "--index-url", metavar="URL", envvar="IMGKIT_INDEX_URL",
    help="The Python package index (default: the project file's `index_url`, else pip's "
         "own configuration).")]

# Signing what is attached, and trusting what was signed
SigningKey = Annotated[Optional[str], typer.Option(
    "--signing-key", metavar="KEY", help="Sign with this cosign private key: a key file, "
    "env://VAR or a KMS URI (an encrypted key's passphrase only from COSIGN_PASSWORD).")]
Keyless = Annotated[bool, typer.Option(
    "--keyless", help="Sign keyless instead: Sigstore's Fulcio and Rekor, with the CI's OIDC "
                      "token.")]
TrustedKey = Annotated[Optional[str], typer.Option(
    "--trusted-key", metavar="KEY", help="Accept only verdicts signed with this cosign public "
                                         "key: a file, env://VAR or a KMS URI.")]
Identity = Annotated[Optional[str], typer.Option(
    "--certificate-identity", metavar="IDENTITY", envvar="IMGKIT_CERTIFICATE_IDENTITY",
    help="Keyless: the signer identity a verdict's certificate must name.")]
Issuer = Annotated[Optional[str], typer.Option(
    "--certificate-oidc-issuer", metavar="URL", envvar="IMGKIT_CERTIFICATE_OIDC_ISSUER",
    help="Keyless: the OIDC issuer that must have vouched for that identity.")]
MaxAge = Annotated[Optional[str], typer.Option(
    "--max-age", metavar="AGE",
    help="How old a signed verdict may be and still count, e.g. 90m, 12h or 7d.")]
Tlog = Annotated[Optional[bool], typer.Option(
    "--tlog/--no-tlog", help="Use Sigstore's Rekor transparency log (default: off with a key, "
                             "on keyless).")]
AllowGpuUnverified = Annotated[bool, typer.Option(
    "--allow-gpu-unverified", help="Accept verdicts whose GPU checks did not run (--gpus none).")]
RequireReproduced = Annotated[bool, typer.Option(
    "--require-reproduced", help="Promote only an image whose signed verdict says `imgkit "
    "reproduce` built it again from its inputs and got the same image.")]
AllowUnsigned = Annotated[bool, typer.Option(
    "--allow-unsigned", help="Accept an unsigned verdict (anyone who can push to the source "
                             "repository could have forged it).")]

# build
Jobs = Annotated[int, typer.Option("--jobs", "-j", metavar="N", min=1,
                                   help="How many images to build at once.")]
Force = Annotated[bool, typer.Option(
    "--force", help="Rebuild the selection's images, up to date or not, without the layer "
                    "cache (fresh apt and pip packages), parents included.")]
KeepParents = Annotated[bool, typer.Option(
    "--keep-parents", help="With --force: rebuild anew only the images --cuda/--only select; "
                           "their parents are reused when up to date.")]
Compression = Annotated[str, typer.Option(
    "--compression", metavar="gzip|zstd",
    help="How the pushed layers are compressed. zstd pulls faster, but only engines from "
         "Docker 23.0 (containerd 1.5, Podman 3) can pull it; gzip: every engine.")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Say what would be done; do nothing.")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Stream the full build logs.")]
CaBundle = Annotated[Optional[str], typer.Option(
    "--ca-bundle", metavar="FILE", envvar="IMGKIT_CA_BUNDLE",
    help="An extra CA bundle pip trusts during builds only (default: the host's "
         "/etc/ssl/certs/ca-certificates.crt when present; none to disable).")]
BaseSource = Annotated[str, typer.Option(
    "--base-source", metavar="SOURCE",
    help="Where the base OS image comes from: auto (pulled when a registry answers, else "
         "made from the distro's mirror: mmdebstrap for Debian, debootstrap for Ubuntu), "
         "pull, mmdebstrap or debootstrap (made by that tool). The tool is part of the "
         "base: another makes other bytes.")]
Mirror = Annotated[Optional[list[str]], typer.Option(
    "--mirror", metavar="URL", envvar="IMGKIT_MIRROR",
    help="The distro mirror a base is made from when no registry answers: URL, "
         "DISTRO=URL or DISTRO-security=URL (repeatable; default: the host's apt sources).")]
BuildEngine = Annotated[str, typer.Option(
    "--engine", metavar="auto|docker|buildx|podman", envvar="IMGKIT_ENGINE",
    help="buildx: one `docker buildx bake` on a BuildKit builder, the CA bundle and index as "
         "build secrets; docker: Docker's legacy builder, driven by imgkit; podman: Podman's "
         "builder through its API socket (IMGKIT_ENGINE=podman points every command there); "
         "auto: podman when the engine is Podman, else buildx wherever it can build here "
         "(the buildx plugin, and engine 23 or later for its own builder), else docker.")]
Builder = Annotated[Optional[str], typer.Option(
    "--builder", metavar="NAME", help="The buildx builder to build on (default: buildx's "
                                      "current one).")]
RefreshBase = Annotated[bool, typer.Option(
    "--refresh-base", help="Make each base OS image again, so the chain above it rebuilds on "
                           "today's packages (a family's max_base_age does it when the base "
                           "is older).")]
BuildCandidates = Annotated[Optional[Path], path_option(
    "--candidates", metavar="DIR", help="The `imgkit publish --candidate --json` files of "
    "earlier CI jobs: the images they staged are pulled by digest and built on.")]

# render
ContextsOut = Annotated[Path, path_option(
    "--out", metavar="DIR", help="The folder to write one build context per image into.")]
RenderEngine = Annotated[str, typer.Option(
    "--engine", metavar="auto|docker|buildx",
    help="The builder the contexts are for: buildx mounts the CA bundle and index as "
         "secrets; docker is `imgkit build`'s own form; auto: whichever this host's "
         "`docker build` uses.")]

# lock, outdated
Check = Annotated[bool, typer.Option(
    "--check", help="Write nothing: exit 1 naming each image whose lock is missing or no "
                    "longer what the matrix says.")]
CiCheck = Annotated[bool, typer.Option(
    "--check", help="Write nothing: exit 1 when the pipeline file at --out is no longer what "
                    "the matrix and these options write (a CI job's drift check).")]
Resolve = Annotated[bool, typer.Option(
    "--resolve", help="With --check: resolve again too, and exit 1 naming what moved on the "
                      "index or the mirror since the locks were written.")]
Pip = Annotated[bool, typer.Option(
    "--pip/--no-pip", help="Also ask the package index for newer patch releases of each "
                           "Python distribution.")]
LocalImages = Annotated[Optional[list[str]], typer.Argument(
    metavar="TAG", help="Local images (default: the matrix's images that are here).",
    show_default=False)]

# list --stats
Stats = Annotated[bool, typer.Option(
    "--stats", help="Instead: what the matrix costs (images, shared layers, bytes, the "
                    "critical path, a build farm, a GPU pool).")]
FromBuild = Annotated[Optional[Path], path_option(
    "--from-build", metavar="FILE", help="With --stats: the sizes and seconds `imgkit build "
                                         "--json FILE` measured (the layer model fills the rest).")]
Farm = Annotated[list[int], typer.Option(
    "--farm", metavar="N", min=1, help="With --stats: a build farm of N builders (repeatable).")]
Known = Annotated[bool, typer.Option(
    "--known", help="Print what builds on which CUDA instead: every framework build with the "
                    "CUDA, cuDNN, NCCL and python it needs, and every CUDA release's drivers "
                    "and pins (your compat.yaml merged in).")]
GpuPool = Annotated[list[int], typer.Option(
    "--gpu-pool", metavar="N", min=1, help="With --stats: a pool of N GPUs (repeatable).")]

# verify, attest, check-signed
Image = Annotated[str, typer.Argument(
    metavar="IMAGE", help="A local image (paddle:2.6.2-gpu-cuda11.8-cudnn8) or a registry "
                          "reference (HOST/REPO@sha256:... or HOST/REPO:TAG).",
    show_default=False)]
RemoteImage = Annotated[str, typer.Argument(
    metavar="IMAGE", help="A registry reference: HOST/REPO@sha256:... or HOST/REPO:TAG (with "
                          "--candidates: the matrix's tag of an image they staged).",
    show_default=False)]
Gpus = Annotated[str, typer.Option(
    "--gpus", metavar="GPUS", callback=plain_gpus,
    help="The container's GPUs: none, all, a count, device ids (docker's count=N and "
         "device=IDS too), or CDI names (nvidia.com/gpu=all). all and ids go through "
         "NVIDIA's CDI spec when the engine has it, else its hook.")]
Expect = Annotated[list[str], typer.Option(
    "--expect", metavar="KEY=VALUE", help="A claim to hold the image to, over its labels and "
    "tag, e.g. cuda=12.4, cudnn=9, tf32=on (repeatable).")]
Checks = Annotated[Optional[Path], path_option(
    "--checks", metavar="FILE", show_default=False,
    help="Your own checks, in container-structure-test's YAML (schemaVersion 2.0.0): command, "
         "file, file-content and metadata tests, judged in the verdict as `check: NAME`.")]
Min = Annotated[list[str], typer.Option(
    "--min", metavar="KEY=SHARE", help="A throughput bar: gemm=0.5 (share of the GPU's dense "
    "peak), conv=0.25 (of its FP16 peak), amp-speedup=1.2 (over FP32; 0 reports only). "
    "Repeatable; defaults gemm=0.5 conv=0.25 amp-speedup=0.")]
ImagePlatform = Annotated[Optional[str], typer.Option(
    "--platform", metavar="PLATFORM", help="The platform the image must be, linux/amd64 or "
    "linux/arm64 (default: whatever it is); another than the host's runs under QEMU, with "
    "--gpus none.")]
Reference = Annotated[Optional[Path], path_option(
    "--reference", metavar="FILE", help="Also hold the report to this verdict's numbers (the "
    "`imgkit verify --json` of the verdict the image was promoted with): each throughput "
    "within --margin of its share of peak, TF32 in effect where it was. A node that falls "
    "short is the host's fault (exit 3).")]
JudgeMargin = Annotated[float, typer.Option(
    "--margin", metavar="SHARE", min=0.0, max=0.9, help="How far under the reference's "
    "share of peak a throughput may fall (0.1: 10%).")]
ReportPlatform = Annotated[Optional[str], typer.Option(
    "--platform", metavar="PLATFORM", help="The platform the report was made on, linux/amd64 "
    "or linux/arm64: which image of a multi-platform reference it is held to (default: any).")]
Timeout = Annotated[int, typer.Option(
    "--timeout", metavar="SECONDS", min=10, help="How long the probe may run.")]
ShmSize = Annotated[Optional[str], typer.Option(
    "--shm-size", metavar="SIZE", help="/dev/shm of the probe's container, e.g. 8g (Docker's "
                                       "and Podman's default: 64m).")]
FromReport = Annotated[Optional[Path], path_option(
    "--from-report", metavar="FILE", help="Judge the probe's report in FILE (the log of a Job "
                                          "of `imgkit export k8s`) instead of running it here.")]
Report = Annotated[Path, path_argument(
    metavar="REPORT", show_default=False,
    help="The probe's report: the log of a Job of `imgkit export k8s`, or what `imgkit probe` "
         "printed inside the image (anything else the image printed around it is ignored).")]
Junit = Annotated[Optional[Path], output_option(
    "--junit", metavar="FILE", help="Also write the verdict as JUnit XML to FILE ('-': to "
    "stdout).")]
Markdown = Annotated[Optional[Path], output_option(
    "--markdown", metavar="FILE", help="Also write the verdict as a Markdown table to FILE "
                                       "('-': stdout; and append it to $GITHUB_STEP_SUMMARY "
                                       "when set).")]
ScanMetrics = Annotated[Optional[str], typer.Option(
    "--metrics", metavar="FILE|URL", help="Also write the scan as Prometheus metrics (findings "
    "by severity and gate verdict): into FILE, replaced whole, or pushed to the Pushgateway "
    "at an http(s) URL, grouped by image and host.")]
Metrics = Annotated[Optional[str], typer.Option(
    "--metrics", metavar="FILE|URL", help="Also write the verdict as Prometheus metrics: into "
    "FILE, replaced whole (for node_exporter's textfile collector), or pushed to the "
    "Pushgateway at an http(s) URL, grouped by image and host.")]

# publish, merge, promote
LocalTags = Annotated[Optional[list[str]], typer.Argument(
    metavar="TAG", help="Local images (default: the matrix's images in the selection).",
    show_default=False)]
PublishTo = Annotated[list[str], typer.Option(
    "--to", metavar="REGISTRY[/NAMESPACE]", help="Where to publish (repeatable): pushed to "
                                                 "the first, copied by digest to the rest.")]
Candidate = Annotated[bool, typer.Option(
    "--candidate", help="Stage: push without the verdict gate, under the id tag only (no "
                        "human tags, no verdict), to verify by digest later.")]
StagedCandidates = Annotated[Path, path_option(
    "--candidates", metavar="DIR", help="The `imgkit publish --candidate --json` files of "
    "each platform's build job.")]
Source = Annotated[str, typer.Argument(
    metavar="SOURCE", help="The candidate by digest, HOST/REPO@sha256:... (with --candidates: "
                           "the matrix's tag of an image they staged).", show_default=False)]
PromoteTo = Annotated[list[str], typer.Option(
    "--to", metavar="HOST/REPO", help="A repository to promote to (repeatable).")]
Tag = Annotated[list[str], typer.Option(
    "--tag", metavar="TAG", help="A tag to point at the digest in every destination, moved "
                                 "last (repeatable).")]

# reproduce
OtherEngine = Annotated[Optional[str], typer.Option(
    "--on", metavar="ADDRESS", help="Build again on another Docker engine, by its DOCKER_HOST "
    "address (ssh://user@host, tcp://host:2376, unix:///path): another machine's. The base "
    "is copied there under a throwaway name; nothing else of this machine's is.",
    show_default=False)]
MatrixImage = Annotated[str, typer.Argument(
    metavar="IMAGE", help="An image of the matrix, by its tag, built here before, e.g. "
                          "paddle:2.6.2-gpu-cuda11.8-cudnn8.", show_default=False)]

# size, sbom
OneImage = Annotated[str, typer.Argument(
    metavar="IMAGE", help="A local image, e.g. paddle:2.6.2-gpu-cuda11.8-cudnn8.",
    show_default=False)]
Top = Annotated[int, typer.Option("--top", metavar="N", min=1,
                                  help="How many of the heaviest steps to list.")]
SbomOut = Annotated[Path, output_option("--out", metavar="FILE",
                                       help="The CycloneDX JSON file to write ('-': stdout).")]

# ci
CiPlatform = Annotated[str, typer.Argument(metavar="github|gitlab", help="The CI it is for.",
                                           show_default=False)]
CiRegistry = Annotated[Optional[str], typer.Option(
    "--registry", metavar="REGISTRY[/NAMESPACE]", show_default=False,
    help="Where verified images are promoted (default: the project file's `registry`, or "
         "IMGKIT_REGISTRY).")]
ReleaseBranch = Annotated[str, typer.Option(
    "--release-branch", metavar="BRANCH", help="The branch whose pushes promote, as well as "
    "build and verify as every branch's do (default: the repository's default branch).",
    show_default=False)]
Pages = Annotated[bool, typer.Option(
    "--pages", help="Also publish the verdict site (`imgkit site`) of the release branch's "
    "runs as the platform's Pages: the verify jobs keep their verdicts, a `pages` job makes "
    "the site of them, failed ones included (GitHub: deployed by actions/deploy-pages).")]
PipelineOut = Annotated[Optional[Path], path_option(
    "--out", metavar="FILE", help="The pipeline file to write (default: where the platform "
                                  "reads it, at the repository's root: "
                                  ".github/workflows/images.yml or .gitlab-ci.yml).")]
Staging = Annotated[Optional[str], typer.Option(
    "--staging", metavar="REGISTRY[/NAMESPACE]", help="Where candidates wait for their "
    "verdicts (default: REGISTRY/staging).")]
GpuRunner = Annotated[str, typer.Option(
    "--gpu-runner", metavar="LABEL", help="The runner label (GitHub) or tag (GitLab) of the "
                                          "machines with GPUs that verify.")]
GpuArm64Runner = Annotated[str, typer.Option(
    "--gpu-arm64-runner", metavar="LABEL", help="The same, of the arm64 machines with GPUs "
                                                "that verify linux/arm64 images.")]
CpuRunner = Annotated[str, typer.Option(
    "--cpu-runner", metavar="LABEL", help="The runner of the build and promote jobs "
    "(default: ubuntu-latest on GitHub, untagged on GitLab).", show_default=False)]
Arm64Runner = Annotated[str, typer.Option(
    "--arm64-runner", metavar="LABEL", show_default=False,
    help="The arm64 runners that build linux/arm64 images natively (default: ubuntu-24.04-arm "
         "on GitHub, saas-linux-small-arm64 on GitLab.com).")]
EmulateArm64 = Annotated[bool, typer.Option(
    "--emulate-arm64", help="Build the linux/arm64 images beside the amd64 ones on the CPU "
                            "runners, under QEMU (slow), instead of on arm64 runners.")]
Install = Annotated[str, typer.Option(
    "--install", metavar="COMMAND", show_default=False,
    help="The shell command each job installs imgkit with (default: pip install of this "
         "imgkit's release).")]
VerifyGpus = Annotated[str, typer.Option(
    "--verify-gpus", metavar="GPUS", callback=plain_gpus,
    help="The GPUs of the verify jobs; none makes a pipeline "
    "that cannot prove the GPU, whose promote accepts verdicts without GPU checks.")]
CiSigningKey = Annotated[str, typer.Option(
    "--signing-key", metavar="KEY", show_default=False,
    help="The cosign key the verify jobs sign with, as the runners see it, e.g. "
         "env://COSIGN_PRIVATE_KEY or a KMS URI (default: keyless, the CI's OIDC identity).")]
CiMaxAge = Annotated[str, typer.Option(
    "--max-age", metavar="AGE", show_default=False,
    help="How old a signed verdict may be and still count, e.g. 7d: each verify job keeps "
         "the one its image carries when this imgkit made it that recently with the same "
         "checks (an image production holds unchanged is then neither pulled nor probed). "
         "Default: every image judged each run.")]
CiTrustedKey = Annotated[str, typer.Option(
    "--trusted-key", metavar="KEY", show_default=False,
    help="Its public half, for the promote job: a path in the repository, env://VAR or a KMS "
         "URI.")]

# site
Verdicts = Annotated[Optional[Path], path_option(
    "--verdicts", metavar="DIR", help="The folder of `imgkit verify --json` files (searched "
    "recursively); the newest verdict of each image and platform is shown. Default: the "
    "verdicts recorded on this machine, each image judged by the one of the image id its tag "
    "points at now.")]
Outdated = Annotated[Optional[Path], path_option(
    "--outdated", metavar="FILE", help="The file `imgkit outdated --json FILE` wrote: each "
    "image's pending security updates in the grid, and every waiting update on its page "
    "(default: not shown).")]
SiteOut = Annotated[Path, path_option("--out", metavar="DIR", help="The folder to write the "
                                                                      "site into (index.html).")]
SiteRegistry = Annotated[Optional[str], typer.Option(
    "--registry", metavar="REGISTRY[/NAMESPACE]", help="Where verified images are promoted: "
    "each final image's digest there and whether a signed, passing verdict about it verifies "
    "against --trusted-key (or a keyless identity), in the grid and on its page (default: not "
    "shown).")]

# scan
ScanImage = Annotated[Optional[str], typer.Argument(
    metavar="IMAGE", help="A local image, e.g. paddle:2.6.2-gpu-cuda11.8-cudnn8, or a registry "
                          "reference (HOST/REPO:TAG or @sha256:...), pulled by digest first "
                          "(left out with --update-db: the database is fetched, nothing is "
                          "scanned).",
    show_default=False)]
UpdateDb = Annotated[bool, typer.Option("--update-db", help=(
    "First fetch the scanner's database into the database folder: for osv-scanner, osv.dev's "
    "zips missing or older than a day (PyPI's and the matrix's distributions'); trivy's own."))]
AdvisoryDb = Annotated[Optional[Path], path_option(
    "--db", metavar="DIR", help="The advisory database, in the scanner's own layout: "
    "osv.dev's zips as DIR/osv-scalibr/<Ecosystem>/all.zip, or trivy's DIR/db/trivy.db "
    "(default: IMGKIT_VULNERABILITY_DB, else the project file's vulnerability_db).",
    show_default=False)]
ScannerName = Annotated[Optional[str], typer.Option(
    "--scanner", metavar="osv-scanner|trivy", help="The scanner to run (default: "
    "IMGKIT_SCANNER, else the project file's scanner, else osv-scanner).", show_default=False)]
FailOn = Annotated[Optional[str], typer.Option(
    "--fail-on", metavar="low|medium|high|critical", help="The severity a finding fails "
    "from, unless waived (default: IMGKIT_FAIL_ON, else the project file's fail_on, else "
    "high).", show_default=False)]

# probe
NoGpu = Annotated[bool, typer.Option("--no-gpu", help="Skip the GPU work.")]
GemmSize = Annotated[int, typer.Option("--gemm-size", metavar="N", min=1,
                                       help="The square GEMM's size for throughput.")]
