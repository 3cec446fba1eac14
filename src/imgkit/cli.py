"""The command line: the only module that imports typer. Thin: parse, make the Selection
once, call the stage's command (imported inside each command, so start-up stays lazy in
this one place), map ImgkitError to its exit code.

Where each command lives: list -> matrix/command.py; render -> render/command.py;
build, size -> builder/command.py; verify, sbom -> verify/command.py; publish, promote ->
publish/command.py; ci, export bake, export k8s -> export/command.py; probe -> probe/."""
from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

import typer

from . import report
from .errors import EXIT_INTERRUPTED, ImgkitError, UsageError
from .options import (
    BUILD_DEFAULTS,
    DEFAULTS,
    PUBLISH_DEFAULTS,
    BuildOptions,
    CiSettings,
    PublishOptions,
    Signer,
    Thresholds,
    Trust,
    VerifyOptions,
)
from .selection import DEFAULT_IMAGES, DEFAULT_NAMESPACE, Selection

if TYPE_CHECKING:
    from .registry.destination import Destination

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Build and verify GPU container images from a declared matrix.")
F = TypeVar("F", bound=Callable[..., Any])
SIZE = re.compile(r"^[1-9][0-9]{0,12}[bkmg]?$")

IMAGES = typer.Option(DEFAULT_IMAGES, "--images",
                      help="Directory of matrix files (*.yaml).")
TEMPLATES = typer.Option(None, "--templates",
                         help="Template directory (default: templates/ beside --images, else the "
                              "templates imgkit ships).")
NAMESPACE = typer.Option(DEFAULT_NAMESPACE, "--namespace",
                         help="Repository prefix of shared layers.")
CUDA = typer.Option(None, "--cuda", help="Only images of this CUDA version, e.g. 11.8.")
ONLY = typer.Option([], "--only", help="Only tags matching this glob, plus their parents "
                    "(repeatable: any of the globs).")
JSON = typer.Option(None, "--json", help="Also write the result as JSON to this file.")
CANDIDATES = "Directory of `imgkit publish --candidate --json` files from earlier CI jobs"
REUSE_FROM = typer.Option(
    None, "--reuse-from", metavar="REGISTRY[/NAMESPACE]",
    help="Where the matrix's images are published: an image whose tag there was built from "
         "the inputs this checkout renders is pulled by digest, not built again.")
RETRY_FOR = typer.Option(PUBLISH_DEFAULTS.retry_for, "--retry-for", min=0,
                         help="Seconds to keep retrying a registry failure that may heal (timeouts, "
                              "5xx, 429); a refused connection or an unknown host fails at once.")
SIGNING_KEY = typer.Option(
    None, "--key", help="Sign what is attached (verdict, SBOM, build provenance) with this "
                        "cosign key: a key file, env://VAR or a KMS URI (an encrypted key's "
                        "passphrase only from COSIGN_PASSWORD).")
KEYLESS = typer.Option(False, "--keyless", help="Sign keyless instead: Fulcio and Rekor, with "
                                                "the CI's OIDC token.")
TRUSTED_KEY = typer.Option(
    None, "--key", help="Accept only verdicts signed with this cosign public key (a file, "
                        "env://VAR or a KMS URI).")
IDENTITY = typer.Option(None, "--certificate-identity", envvar="IMGKIT_CERTIFICATE_IDENTITY",
                        help="Keyless: the signer identity a verdict's certificate must name.")
ISSUER = typer.Option(None, "--certificate-oidc-issuer", envvar="IMGKIT_CERTIFICATE_OIDC_ISSUER",
                      help="Keyless: the OIDC issuer that must have vouched for that identity.")
MAX_AGE = typer.Option(None, "--max-age", help="Refuse a signed verdict older than this: "
                                               "e.g. 90m, 12h or 7d.")
TLOG = typer.Option(None, "--tlog/--no-tlog", help="Use the Rekor transparency log (default: "
                                                   "off with a key, on keyless).")
ALLOW_UNSIGNED = typer.Option(
    False, "--allow-unsigned", help="Accept an unsigned verdict (anyone who can push to the "
                                    "source repository could have forged it).")
ON_PLATFORMS = typer.Option(
    [], "--platform", metavar="PLATFORM",
    help="Only the images of this platform, linux/amd64 or linux/arm64 (repeatable; default: "
         "every platform the matrix makes each image for): a CI job on a runner of one "
         "platform.")
AGE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([smhd]?)$")


def seconds_of(option: str, text: str | None) -> float | None:
    """90m, 12h, 7d (or plain seconds) -> seconds; anything else is exit 2."""
    if text is None:
        return None
    match = AGE.match(text.strip())
    if not match:
        raise UsageError(f"{option} {text!r}: expected a duration such as 90m, 12h or 7d")
    return float(match[1]) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match[2]]


def signer_of(key: str | None, keyless: bool, tlog: bool | None) -> Signer:
    if key and keyless:
        raise UsageError("--key and --keyless: sign one way")
    return Signer(key=_checked_key(key), keyless=keyless, tlog=tlog)


def destination_of(reuse_from: str | None) -> Destination | None:
    """--reuse-from REGISTRY[/NAMESPACE], as publish's --to takes it (bad: exit 2)."""
    from .registry.destination import parse_destination
    return None if reuse_from is None else parse_destination(reuse_from, "--reuse-from")


def trust_of(key: str | None, identity: str | None, issuer: str | None,
             tlog: bool | None) -> Trust:
    if bool(identity) != bool(issuer):
        raise UsageError("keyless trust needs both --certificate-identity and "
                         "--certificate-oidc-issuer")
    return Trust(key=_checked_key(key), identity=identity, issuer=issuer, tlog=tlog)


def _platform(text: str | None) -> str | None:
    from .platforms import KNOWN
    if text is not None and text not in KNOWN:
        raise UsageError(f"--platform {text!r}: expected one of {', '.join(KNOWN)}")
    return text


def _platforms(texts: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(p for p in map(_platform, texts) if p))


def _checked_key(key: str | None) -> str | None:
    if not key:
        return None
    from .registry.cosign import check_key  # the registry client: only when a key is named
    return check_key("--key", key)


COMPAT = typer.Option(None, "--compat", help="Your compatibility data (new CUDA releases, framework "
                      "builds), merged over the shipped data (default: compat.yaml in --images).")


def prose(doc: str | None) -> str | None:
    """A docstring as --help shows it: paragraphs (blank-line separated) joined into single
    lines, so the terminal wraps them to its width instead of at the source's line breaks."""
    if doc is None:
        return None
    paragraphs: list[list[str]] = [[]]
    for line in doc.strip().splitlines():
        if line.strip():
            paragraphs[-1].append(line.strip())
        elif paragraphs[-1]:
            paragraphs.append([])
    return "\n\n".join(" ".join(words) for words in paragraphs if words)


def reports_errors(func: F) -> F:
    """Turn ImgkitError into a one-paragraph message and its exit code; never a traceback.
    (Every command goes through it: its docstring becomes prose for --help here too.)"""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ImgkitError as exc:
            report.print_error(exc.message, exc.hint)
            raise typer.Exit(exc.exit_code)
        except KeyboardInterrupt:
            report.console(stderr=True).print("interrupted: stopped cleanly")
            raise typer.Exit(EXIT_INTERRUPTED)
    wrapper.__doc__ = prose(func.__doc__)
    return wrapper  # type: ignore[return-value]


@app.command()
@reports_errors
def build(
    cuda: Optional[str] = CUDA,
    only: list[str] = ONLY,
    jobs: int = typer.Option(BUILD_DEFAULTS.jobs, "--jobs", "-j", min=1, help="Images built at once."),
    force: bool = typer.Option(False, "--force", help="Rebuild the selection's images, even "
                               "up-to-date ones, without the layer cache (fresh apt and pip "
                               "packages), parents included."),
    keep_parents: bool = typer.Option(False, "--keep-parents", help="With --force: rebuild "
                                      "anew only the images --cuda/--only select; their "
                                      "parents are reused when up to date."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what would be built; build nothing."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Stream full build logs."),
    images: Path = IMAGES,
    templates: Optional[Path] = TEMPLATES,
    namespace: str = NAMESPACE,
    ca_bundle: Optional[str] = typer.Option(
        None, "--ca-bundle", envvar="IMGKIT_CA_BUNDLE",
        help="Extra CA bundle trusted by pip during builds only (default: the host's "
             "/etc/ssl/certs/ca-certificates.crt when present; 'none' to disable)."),
    index_url: Optional[str] = typer.Option(None, "--index-url", envvar="IMGKIT_INDEX_URL",
                                            help="Package index for pip during builds."),
    base_source: str = typer.Option("auto", "--base-source",
                                    help="Base OS image: auto, pull or debootstrap."),
    mirror: Optional[list[str]] = typer.Option(
        None, "--mirror", envvar="IMGKIT_MIRROR",
        help="Distro mirror debootstrap makes a base from when no registry answers: URL, "
             "DISTRO=URL or DISTRO-security=URL (debian, ubuntu; repeatable). Default: the "
             "host's apt sources."),
    compat_file: Optional[Path] = COMPAT,
    json_file: Optional[Path] = JSON,
    candidates: Optional[Path] = typer.Option(
        None, "--candidates", help=f"{CANDIDATES}: the images they staged are pulled by "
                                   "digest and built on, never rebuilt."),
    retry_for: float = RETRY_FOR,
    engine: str = typer.Option(
        BUILD_DEFAULTS.engine, "--engine",
        help="docker: imgkit drives the engine's builder through its API (the default); "
             "buildx: one `docker buildx bake` on a BuildKit builder, the CA bundle and index "
             "as build secrets."),
    builder: Optional[str] = typer.Option(
        None, "--builder", help="With --engine buildx: the buildx builder (a docker-container, "
                                "kubernetes or remote driver; default: buildx's current one)."),
    refresh_base: bool = typer.Option(
        False, "--refresh-base", help="Make each base OS image again (pull or debootstrap), so "
                                      "the chain above it rebuilds on today's packages; a "
                                      "family's max_base_age: does it when the base is older."),
    reuse_from: Optional[str] = REUSE_FROM,
    on: list[str] = ON_PLATFORMS,
) -> None:
    """Render and build the matrix (or a slice of it); skip what is up to date."""
    if keep_parents and not force:
        raise UsageError("--keep-parents only says what --force rebuilds", hint="add --force")
    if engine not in ("docker", "buildx"):
        raise UsageError(f"--engine {engine}: unknown build engine", hint="docker or buildx")
    if builder is not None and engine != "buildx":
        raise UsageError("--builder names a buildx builder", hint="add --engine buildx")
    from .builder.command import build as run
    code = run(Selection(images, namespace, cuda, tuple(only), templates, compat_file,
                         _platforms(on)),
               options=BuildOptions(jobs=jobs, force=force, keep_parents=keep_parents,
                                    dry_run=dry_run, engine=engine, builder=builder,
                                    refresh_base=refresh_base),
               verbose=verbose,
               ca_bundle=ca_bundle, index_url=index_url, base_source=base_source,
               mirrors=mirror or [], json_file=json_file, candidates=candidates,
               retry_for=retry_for, reuse_from=destination_of(reuse_from))
    raise typer.Exit(code)


@app.command()
@reports_errors
def render(
    out: Path = typer.Option(..., "--out", help="Directory to write one build context per image."),
    cuda: Optional[str] = CUDA,
    only: list[str] = ONLY,
    images: Path = IMAGES,
    templates: Optional[Path] = TEMPLATES,
    namespace: str = NAMESPACE,
    compat_file: Optional[Path] = COMPAT,
    engine: str = typer.Option(
        "auto", "--engine",
        help="Which builder the contexts are for. buildx: BuildKit (the pip steps mount the CA "
             "bundle and index as `--secret`s); docker: the legacy builder (`imgkit build`'s "
             "own form); auto: whichever this host's `docker build` uses."),
) -> None:
    """Write each image's self-contained build context (Dockerfile and files)."""
    from .render.command import render as run
    run(Selection(images, namespace, cuda, tuple(only), templates, compat_file), out=out,
        form=engine)


@app.command()
@reports_errors
def lock(
    cuda: Optional[str] = CUDA,
    only: list[str] = ONLY,
    images: Path = IMAGES,
    namespace: str = NAMESPACE,
    compat_file: Optional[Path] = COMPAT,
    check: bool = typer.Option(False, "--check", help="Write nothing: exit 1 naming each image "
                               "whose lock is missing or no longer what the matrix says."),
    resolve: bool = typer.Option(False, "--resolve", help="With --check: also resolve again "
                                 "(index and mirror) and exit 1 naming what moved since the "
                                 "locks were written (a CI gate for stale locks)."),
    index_url: Optional[str] = typer.Option(None, "--index-url", envvar="IMGKIT_INDEX_URL",
                                            help="Package index to resolve against (default: "
                                                 "pip's own configuration)."),
) -> None:
    """Resolve what each image's pip step installs to exact versions with hashes (for the
    image's python and platform) and what its apt step installs to exact versions (apt-get -s
    on its base, in a throwaway container), and write one lock per image
    (images/locks/<image>.txt).

    Builds then install exactly the lock (pip --no-deps --require-hashes, apt-get install
    name=version) and its content is part of the image's input hash; a lock the matrix no
    longer matches is refused. A base that is not here is made first, as `imgkit build`
    would make it. Exit 0: written (or, with --check, every lock matches); 1: --check found
    a missing or stale lock (or, with --resolve, one that no longer resolves as written); 2:
    the matrix cannot be resolved; 3: no engine, index or mirror."""
    if resolve and not check:
        raise UsageError("--resolve says what --check looks at", hint="add --check")
    selection = Selection(images, namespace, cuda, tuple(only), compat_file=compat_file)
    from .lock.command import check as run_check
    from .lock.command import lock as run
    if check and not resolve:
        raise typer.Exit(run_check(selection))
    from .builder.base import ensure_base, parse_mirrors

    def make_base(engine: Any, ref: str, os_release: Any) -> str:
        return ensure_base(engine, ref, os_release, mirrors=parse_mirrors([]),
                           log=lambda m: report.stderr_line(f"base: {m}"))
    raise typer.Exit(run(selection, index_url=index_url, write=not check, make_base=make_base))


@app.command()
@reports_errors
def outdated(
    images_: Optional[list[str]] = typer.Argument(
        None, metavar="[TAG]...", help="Local images (default: the matrix's images that are here)."),
    cuda: Optional[str] = CUDA,
    only: list[str] = ONLY,
    images: Path = IMAGES,
    namespace: str = NAMESPACE,
    compat_file: Optional[Path] = COMPAT,
    json_file: Optional[Path] = JSON,
    index_url: Optional[str] = typer.Option(None, "--index-url", envvar="IMGKIT_INDEX_URL",
                                            help="Package index asked for newer releases "
                                                 "(default: pip's own configuration)."),
    pip: bool = typer.Option(True, "--pip/--no-pip", help="Also ask the package index for "
                             "newer patch releases of each Python distribution."),
) -> None:
    """What waits for each image: the package updates its apt sources have now (security
    ones apart), newer patch releases of its Python distributions within their minor, and
    how old its base is.

    The mirror is asked from a throwaway container of the image (as root, on the Docker
    bridge, with the image's own apt sources; nothing is kept). Exit 0: no security update
    waits; 1: one does (a CI gate); 2: an unknown image; 3: no engine or no mirror."""
    from .verify.command import outdated as run
    raise typer.Exit(run(images=list(images_ or []), selection=Selection(
        images, namespace, cuda, tuple(only), compat_file=compat_file), json_file=json_file,
        index_url=index_url, pip=pip))


@app.command("list")
@reports_errors
def list_(
    cuda: Optional[str] = CUDA,
    only: list[str] = ONLY,
    images: Path = IMAGES,
    namespace: str = NAMESPACE,
    compat_file: Optional[Path] = COMPAT,
    json_file: Optional[Path] = JSON,
    stats: bool = typer.Option(False, "--stats", help="Instead: what the matrix costs (images, "
                               "shared layers, bytes, critical path, build farm, GPU pool)."),
    from_build: Optional[Path] = typer.Option(
        None, "--from-build", help="With --stats: sizes and seconds measured by `imgkit build "
                                   "--json FILE` (the layer model fills the rest)."),
    builders: list[int] = typer.Option([1, 4, 16], "--builders", min=1,
                                       help="With --stats: build farm sizes (repeatable)."),
    gpus: list[int] = typer.Option([1, 8], "--gpus", min=1,
                                   help="With --stats: GPU pool sizes (repeatable)."),
) -> None:
    """Validate the matrix and list its images, parents first (or, with --stats, what it costs)."""
    from .matrix.command import list_plan
    list_plan(Selection(images, namespace, cuda, tuple(only), compat_file=compat_file),
              json_file=json_file, with_stats=stats, from_build=from_build, builders=builders,
              gpus=gpus)


@app.command()
@reports_errors
def verify(
    image: str = typer.Argument(..., help="Image reference, e.g. paddle:2.6.2-gpu-cuda11.8-cudnn8."),
    gpus: str = typer.Option(DEFAULTS.gpus, "--gpus", help="GPUs for the container: none, all, N or ids."),
    expect: list[str] = typer.Option([], "--expect", help="KEY=VALUE, e.g. cuda=12.4, cudnn=9, "
                                     "tf32=on; overrides labels and tag."),
    json_file: Optional[Path] = typer.Option(None, "--json", help="Write the verdict as JSON."),
    junit_file: Optional[Path] = typer.Option(None, "--junit", help="Write the verdict as JUnit XML."),
    markdown_file: Optional[Path] = typer.Option(
        None, "--markdown", help="Write the verdict as a Markdown table (also appended to "
                                 "$GITHUB_STEP_SUMMARY when set)."),
    timeout: int = typer.Option(DEFAULTS.timeout, "--timeout", min=10, help="Seconds the probe may run."),
    shm_size: Optional[str] = typer.Option(
        DEFAULTS.shm_size, "--shm-size", help="/dev/shm of the probe's container, e.g. 8g "
                                              "(docker's default: 64m)."),
    min_gemm: float = typer.Option(DEFAULTS.thresholds.gemm, "--min-gemm",
                                   help="Share of dense peak GEMMs must reach."),
    min_conv: float = typer.Option(DEFAULTS.thresholds.conv, "--min-conv",
                                   help="Share of FP16 peak the conv must reach."),
    min_amp_speedup: float = typer.Option(
        DEFAULTS.thresholds.amp_speedup, "--min-amp-speedup",
        help="Speedup over FP32 each AMP training step must reach (0: reported only)."),
    attest: bool = typer.Option(
        False, "--attest", help="For a registry reference: attach the verdict next to the "
                                "digest that was verified (what `imgkit promote` checks)."),
    candidates: Optional[Path] = typer.Option(
        None, "--candidates", help=f"{CANDIDATES}: IMAGE is the matrix's tag of one they "
                                   "staged, verified by its staged digest."),
    from_report: Optional[Path] = typer.Option(
        None, "--from-report", help="Judge the probe's report from this file (the log of a "
                                    "Job of `imgkit export k8s`) instead of running it here."),
    key: Optional[str] = typer.Option(
        None, "--key", help="With --attest: sign what is attached with this cosign key (a file, "
                            "env://VAR or KMS URI; passphrase only from COSIGN_PASSWORD). With "
                            "--require-signed: the public key the verdict must be signed with."),
    keyless: bool = KEYLESS,
    require_signed: bool = typer.Option(
        False, "--require-signed", help="Run no probe: exit 0 only when the registry image has a "
                                        "signed, passing verdict (--key or a keyless identity)."),
    identity: Optional[str] = IDENTITY,
    issuer: Optional[str] = ISSUER,
    max_age: Optional[str] = MAX_AGE,
    allow_gpu_unverified: bool = typer.Option(
        False, "--allow-gpu-unverified", help="With --require-signed: accept a verdict whose "
                                              "GPU checks did not run."),
    tlog: Optional[bool] = TLOG,
    retry_for: float = RETRY_FOR,
    updates: bool = typer.Option(
        False, "--updates", help="Add an informational line with the security updates the "
                                 "image's own apt sources hold for it now (a throwaway "
                                 "container on the bridge network; as `imgkit outdated`)."),
    platform: Optional[str] = typer.Option(
        None, "--platform", help="The platform the image must be, linux/amd64 or linux/arm64 "
                                 "(default: whatever it is). Another than the host's runs "
                                 "under QEMU, with --gpus none."),
) -> None:
    """Prove an image's stack matches its tag and that the GPU really computes.

    IMAGE is a local image, or a registry reference (HOST/REPO@sha256:... or HOST/REPO:TAG)
    pulled by digest first. The verdict is kept as the ticket of the image id it judged
    (imgkit's cache).
    Exit 0: every required check passed; 1: the image failed; 2: bad usage or unknown
    image; 3: the host cannot run the check (no engine, no NVIDIA runtime, driver too old)."""
    if shm_size is not None and not SIZE.match(shm_size):
        raise UsageError(f"--shm-size {shm_size!r}: expected a size such as 512m or 8g")
    options = VerifyOptions(gpus=gpus, expect=tuple(expect), timeout=timeout, shm_size=shm_size,
                            thresholds=Thresholds(gemm=min_gemm, conv=min_conv,
                                                       amp_speedup=min_amp_speedup),
                            updates=updates, platform=_platform(platform))
    if require_signed and (attest or keyless):
        raise UsageError("--require-signed checks a signed verdict; --attest/--keyless make one")
    if (key or keyless) and not (attest or require_signed):
        raise UsageError("--key says how to sign what --attest attaches, or which key "
                         "--require-signed trusts", hint="add --attest or --require-signed")
    signer = signer_of(None if require_signed else key, keyless, tlog)
    trust = trust_of(key, identity, issuer, tlog) if require_signed else None
    from .verify.command import verify as run
    raise typer.Exit(run(image=image, options=options, json_file=json_file, junit_file=junit_file,
                         markdown_file=markdown_file, attest=attest, candidates=candidates,
                         from_report=from_report, retry_for=retry_for, signer=signer,
                         require_signed=trust, allow_gpu_unverified=allow_gpu_unverified,
                         max_age=seconds_of("--max-age", max_age)))


@app.command()
@reports_errors
def publish(
    tags: list[str] = typer.Argument(None, help="Local images (name:tag); default: the matrix's "
                                     "images in the --cuda/--only selection."),
    to: list[str] = typer.Option([], "--to", help="Registry to publish to: host, host:port or host/namespace "
                                 "(repeatable): pushed to the first, copied by digest to the rest."),
    cuda: Optional[str] = CUDA,
    only: list[str] = ONLY,
    allow_gpu_unverified: bool = typer.Option(
        False, "--allow-gpu-unverified",
        help="Accept verdicts whose GPU checks did not run (--gpus none); the attached "
             "verdict says so."),
    candidate: bool = typer.Option(
        False, "--candidate", help="Staging: push without the verdict gate, under the id tag "
                                   "only (no human tags, no verdict), to verify by digest later."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check the gate, say what would be "
                                                          "pushed; touch no registry."),
    key: Optional[str] = SIGNING_KEY,
    keyless: bool = KEYLESS,
    tlog: Optional[bool] = TLOG,
    retry_for: float = RETRY_FOR,
    images: Path = IMAGES,
    namespace: str = NAMESPACE,
    compat_file: Optional[Path] = COMPAT,
    json_file: Optional[Path] = JSON,
    reuse_from: Optional[str] = typer.Option(
        None, "--reuse-from", metavar="REGISTRY[/NAMESPACE]",
        help="With --candidate: an image whose tag there is this very image is not staged "
             "again; later jobs take that digest."),
    on: list[str] = typer.Option(
        [], "--platform", metavar="PLATFORM",
        help="With --candidate: stage only this platform's images (repeatable), each alone; "
             "`imgkit merge` puts their index once every platform's are staged."),
) -> None:
    """Push verified images to registries, by digest, with their verdicts attached.

    Every image needs a passing verdict for the id its tag points at now (`imgkit verify`);
    it is pushed once, copied by digest to further registries, read back everywhere, and
    only then do its tag and the matrix's aliases move. Credentials come from Docker's
    config (`docker login`). Exit 0: published; 1: refused or failed; 2: bad usage;
    3: a registry refused the credentials, or no engine."""
    options = PublishOptions(allow_gpu_unverified=allow_gpu_unverified, candidate=candidate,
                             dry_run=dry_run, retry_for=retry_for,
                             signer=signer_of(key, keyless, tlog))
    from .publish.command import publish as run
    if reuse_from is not None and not candidate:
        raise UsageError("--reuse-from only says what staging may skip", hint="add --candidate")
    if on and not candidate:
        raise UsageError("--platform stages one platform's images for a later merge: a "
                         "published tag names the images of every platform",
                         hint="add --candidate, or publish every platform's images together")
    raise typer.Exit(run(Selection(images, namespace, cuda, tuple(only), compat_file=compat_file,
                                   platforms=_platforms(on)),
                         tags=tags or [], to=to, options=options, json_file=json_file,
                         reuse_from=destination_of(reuse_from)))


@app.command()
@reports_errors
def merge(
    tags: list[str] = typer.Argument(None, help="The matrix's multi-platform images (default: "
                                     "the final ones in the --cuda/--only selection)."),
    candidates: Path = typer.Option(..., "--candidates", help=f"{CANDIDATES}: each platform's "
                                    "images, staged alone by a job on a runner of it."),
    cuda: Optional[str] = CUDA,
    only: list[str] = ONLY,
    retry_for: float = RETRY_FOR,
    images: Path = IMAGES,
    namespace: str = NAMESPACE,
    compat_file: Optional[Path] = COMPAT,
    json_file: Optional[Path] = JSON,
) -> None:
    """Stage one index per multi-platform image, from each platform's staged image.

    The pipeline's build jobs of each platform stage their images alone (`imgkit publish
    --candidate --platform P`); this puts the OCI index naming every platform's image by
    digest next to them, under its id tag, and writes it as `publish --candidate --json`
    would, so promote takes it whole. Exit 0: merged; 2: a platform not staged, or bad
    usage; 3: no engine, or a registry refused the credentials."""
    from .publish.merge import merge as run
    raise typer.Exit(run(Selection(images, namespace, cuda, tuple(only), compat_file=compat_file),
                         tags=tags or [], candidates=candidates, json_file=json_file,
                         retry_for=retry_for))


@app.command()
@reports_errors
def promote(
    source: str = typer.Argument(..., help="The candidate, by digest: HOST/REPO@sha256:... "
                                 "(with --candidates: the matrix's tag of a staged image)."),
    to: list[str] = typer.Option([], "--to", help="Repository to promote to: HOST/REPO "
                                 "(repeatable)."),
    tag: list[str] = typer.Option([], "--tag", help="Tag to point at the digest in every "
                                  "destination, moved last (repeatable)."),
    allow_gpu_unverified: bool = typer.Option(
        False, "--allow-gpu-unverified", help="Accept an attached verdict whose GPU checks did "
                                              "not run."),
    key: Optional[str] = TRUSTED_KEY,
    identity: Optional[str] = IDENTITY,
    issuer: Optional[str] = ISSUER,
    max_age: Optional[str] = MAX_AGE,
    allow_unsigned: bool = ALLOW_UNSIGNED,
    tlog: Optional[bool] = TLOG,
    retry_for: float = RETRY_FOR,
    json_file: Optional[Path] = JSON,
    candidates: Optional[Path] = typer.Option(
        None, "--candidates", help=f"{CANDIDATES}: SOURCE names one of the images they staged."),
) -> None:
    """Copy a verified candidate by digest to production repositories.

    Only when a signed, passing verdict is attached to that digest in the source (`imgkit
    verify SOURCE --attest --key cosign.key`) and its signature verifies against --key (or a
    keyless identity): it must be about that very digest and image, with the GPU checks run
    (unless --allow-gpu-unverified) and younger than --max-age. The signed attestations,
    verdict and SBOM are copied along, and the tags move only after every destination holds
    the digest. Exit 0: promoted; 1: refused or failed; 2: bad usage;
    3: a registry refused the credentials."""
    trust = trust_of(key, identity, issuer, tlog)
    if allow_unsigned and trust.configured:
        raise UsageError("--allow-unsigned and a trusted key or identity: choose one")
    options = PublishOptions(allow_gpu_unverified=allow_gpu_unverified, retry_for=retry_for,
                             trust=trust, allow_unsigned=allow_unsigned,
                             max_age=seconds_of("--max-age", max_age))
    from .publish.command import promote as run
    raise typer.Exit(run(source=source, to=to, tags=tag, options=options, json_file=json_file,
                         candidates=candidates))


@app.command()
@reports_errors
def size(
    image: str = typer.Argument(..., help="Local image, e.g. paddle:2.6.2-gpu-cuda11.8-cudnn8."),
    top: int = typer.Option(10, "--top", min=1, help="How many of the heaviest steps to list."),
    json_file: Optional[Path] = typer.Option(None, "--json", help="Write every step as JSON."),
) -> None:
    """List the steps that weigh most in an image, and what its own layers add to its parent."""
    from .builder.command import size as run
    run(image=image, top=top, json_file=json_file)


@app.command()
@reports_errors
def sbom(
    image: str = typer.Argument(..., help="Local image, e.g. paddle:2.6.2-gpu-cuda11.8-cudnn8."),
    out: Path = typer.Option(..., "--out", help="The CycloneDX JSON file to write."),
    timeout: int = typer.Option(DEFAULTS.timeout, "--timeout", min=10,
                                help="Seconds the probe may run."),
) -> None:
    """Write the image's CycloneDX SBOM: OS packages, Python distributions, NVIDIA libraries.

    Read inside a throwaway container of the image (no GPU), like the verifier's probe: the
    Debian packages from dpkg's status, every Python distribution's metadata, and each NVIDIA
    library with the version the library itself reports."""
    from .verify.command import sbom as run
    run(image=image, out=out, timeout=timeout)


@app.command()
@reports_errors
def ci(
    platform: str = typer.Argument(..., help="github or gitlab."),
    registry: str = typer.Option(..., "--registry", help="Where verified images are promoted: "
                                 "host, host:port or host/namespace."),
    out: Path = typer.Option(..., "--out", help="The pipeline file to write, e.g. "
                             ".github/workflows/images.yml or .gitlab-ci.yml."),
    staging: Optional[str] = typer.Option(
        None, "--staging", help="Where candidates wait for their verdicts (default: the "
                                "registry's staging namespace, REGISTRY/staging)."),
    cuda: Optional[str] = CUDA,
    only: list[str] = ONLY,
    gpu_runner: str = typer.Option(CiSettings.gpu_runner, "--gpu-runner",
                                   help="Runner label (GitHub, self-hosted) or tag (GitLab) of "
                                        "the machines with GPUs that verify."),
    gpu_arm64_runner: str = typer.Option(
        CiSettings.gpu_arm64_runner, "--gpu-arm64-runner",
        help="The same, of the arm64 machines (Grace) that verify a family's linux/arm64 "
             "images (with --verify-gpus none: any arm64 runner, or one with QEMU)."),
    cpu_runner: str = typer.Option(CiSettings.cpu_runner, "--cpu-runner",
                                   help="Runner label or tag for build and promote jobs "
                                        "(default: ubuntu-latest on GitHub, untagged on GitLab)."),
    arm64_runner: str = typer.Option(
        CiSettings.arm64_runner, "--arm64-runner", show_default=False,
        help="Runner label or tag of the arm64 machines that build a family's linux/arm64 "
             "images natively (default: ubuntu-24.04-arm on GitHub, saas-linux-small-arm64 "
             "on GitLab.com)."),
    emulate_arm64: bool = typer.Option(
        False, "--emulate-arm64",
        help="Build the linux/arm64 images beside the amd64 ones on the CPU runners, under "
             "QEMU (slow; the runners need QEMU's handlers), instead of on arm64 runners."),
    install: str = typer.Option(CiSettings.install, "--install", show_default=False,
                                help="Shell command each job installs imgkit with (default: "
                                     "pip install of this imgkit, imgkit-gpu==VERSION)."),
    verify_gpus: str = typer.Option(
        CiSettings.verify_gpus, "--verify-gpus",
        help="GPUs of the verify jobs; none makes a pipeline that cannot prove the GPU, and "
             "its promote then accepts verdicts without GPU checks."),
    signing_key: str = typer.Option(
        CiSettings.signing_key, "--signing-key", show_default=False,
        help="cosign key the verify jobs sign verdicts with, as the runners see it, e.g. "
             "env://COSIGN_PRIVATE_KEY or a KMS URI (default: keyless, the CI's OIDC identity)."),
    trusted_key: str = typer.Option(
        CiSettings.trusted_key, "--trusted-key", show_default=False,
        help="Its public half, for the promote job: a path in the repository, env://VAR or a "
             "KMS URI."),
    images: Path = IMAGES,
    namespace: str = NAMESPACE,
    compat_file: Optional[Path] = COMPAT,
) -> None:
    """Write the CI pipeline of the matrix: build, verify on GPU, promote.

    Build jobs on CPU runners, one per layer group (and platform: arm64 images build on
    arm64 runners), parents first, stage their images in the staging registry (`publish
    --candidate`); a verify job per image and platform on a GPU runner judges the staged
    digest and attaches its verdict, signed with cosign; the promote job merges each
    multi-platform image's index, copies each digest whose signed verdicts verify and
    passed to the registry and moves its tags. Credentials: the secrets or variables
    REGISTRY_USERNAME and REGISTRY_PASSWORD
    (STAGING_* for a separate staging host)."""
    from .export.command import ci as run
    run(Selection(images, namespace, cuda, tuple(only), compat_file=compat_file),
        platform=platform, registry=registry, staging=staging, gpu_runner=gpu_runner,
        gpu_arm64_runner=gpu_arm64_runner, cpu_runner=cpu_runner, arm64_runner=arm64_runner,
        emulate_arm64=emulate_arm64, install=install,
        verify_gpus=verify_gpus, out=out, signing_key=signing_key, trusted_key=trusted_key)


export_app = typer.Typer(no_args_is_help=True, help="Hand the matrix to other tools: BuildKit "
                         "bake files, Kubernetes Jobs, admission policies.")
app.add_typer(export_app, name="export")


@export_app.command("bake")
@reports_errors
def export_bake(
    out: Path = typer.Option(..., "--out", help="Directory for the contexts and docker-bake.json."),
    registry: Optional[str] = typer.Option(
        None, "--registry", help="Tag the images in this registry (host, host:port or "
                                 "host/namespace), what `bake --push` pushes; default: local names."),
    cuda: Optional[str] = CUDA,
    only: list[str] = ONLY,
    images: Path = IMAGES,
    templates: Optional[Path] = TEMPLATES,
    namespace: str = NAMESPACE,
    compat_file: Optional[Path] = COMPAT,
) -> None:
    """Write the build contexts and a docker-bake.json for `docker buildx bake`.

    One target per image; a parent is reached as a `target:` context, so BuildKit builds
    shared parents once and in order; a group per family and a default group. The CA
    bundle (IMGKIT_CA_BUNDLE, a path) and package index (IMGKIT_INDEX_URL) reach pip as
    BuildKit secrets of the pip steps, never a layer: run e.g. `cd DIR && docker buildx
    bake --push` (the contexts are paths relative to where bake runs)."""
    from .export.command import export_bake as run
    run(Selection(images, namespace, cuda, tuple(only), templates, compat_file), out=out,
        registry=registry)


@export_app.command("policy")
@reports_errors
def export_policy(
    out: Path = typer.Option(..., "--out", help="Directory for the policy files."),
    registry: list[str] = typer.Option([], "--registry", help="Registry whose images the policy "
                                       "covers: host, host:port or host/namespace (repeatable)."),
    key: Optional[Path] = typer.Option(None, "--key", help="The cosign public key (PEM) verdicts "
                                       "must be signed with."),
    identity: Optional[str] = IDENTITY,
    issuer: Optional[str] = ISSUER,
    kyverno: bool = typer.Option(False, "--kyverno", help="Only the Kyverno ClusterPolicy "
                                 "(default: Kyverno and sigstore both)."),
    sigstore: bool = typer.Option(False, "--sigstore", help="Only the sigstore "
                                  "policy-controller ClusterImagePolicy."),
    allow_gpu_unverified: bool = typer.Option(
        False, "--allow-gpu-unverified", help="Admit images whose verdict did not run the GPU "
                                              "checks."),
    tlog: bool = typer.Option(False, "--tlog", help="With --key: also demand a Rekor entry."),
) -> None:
    """Write admission policies that admit only images with a signed, passing verdict.

    A Kyverno ClusterPolicy (verifyImages with a condition on the verdict attestation), a
    sigstore policy-controller ClusterImagePolicy, and the same rule as CUE
    (imgkit-verdict.cue) for `cosign verify-attestation --type
    https://imgkit.dev/attestations/verdict/v1 --policy imgkit-verdict.cue`."""
    kinds = tuple(k for k, on in (("kyverno", kyverno), ("sigstore", sigstore)) if on) or (
        "kyverno", "sigstore")
    from .export.command import export_policy as run
    run(out=out, registries=registry, key=key, identity=identity, issuer=issuer,
        require_gpu=not allow_gpu_unverified, tlog=tlog, kinds=kinds)


@export_app.command("k8s")
@reports_errors
def export_k8s(
    out: Path = typer.Option(..., "--out", help="Directory for the ConfigMap and the Jobs."),
    registry: str = typer.Option(..., "--registry", help="Where the cluster pulls the images: "
                                 "host, host:port or host/namespace."),
    cuda: Optional[str] = CUDA,
    only: list[str] = ONLY,
    gpus: int = typer.Option(1, "--gpus", min=0, max=16, help="nvidia.com/gpu per Job; 0 runs "
                             "the probe without GPU work."),
    runtime_class: str = typer.Option("", "--runtime-class", help="runtimeClassName, e.g. nvidia."),
    node_selector: list[str] = typer.Option([], "--node-selector", help="KEY=VALUE (repeatable)."),
    toleration: list[str] = typer.Option([], "--toleration", help="KEY or KEY=VALUE, a colon, then "
                                         "the effect, e.g. nvidia.com/gpu:NoSchedule (repeatable)."),
    shm_size: str = typer.Option("8Gi", "--shm-size", help="/dev/shm of the probe (a Kubernetes "
                                 "quantity)."),
    deadline: int = typer.Option(1800, "--deadline", min=60, help="activeDeadlineSeconds."),
    ttl: int = typer.Option(86400, "--ttl", min=0, help="ttlSecondsAfterFinished."),
    k8s_namespace: str = typer.Option("", "--k8s-namespace", help="Kubernetes namespace of the "
                                      "manifests (default: kubectl's current one)."),
    candidates: Optional[Path] = typer.Option(
        None, "--candidates", help=f"{CANDIDATES}: images they staged are named by digest."),
    images: Path = IMAGES,
    namespace: str = NAMESPACE,
    compat_file: Optional[Path] = COMPAT,
) -> None:
    """Write a verification Job per image and the ConfigMap holding the probe.

    Each Job runs the probe on a GPU node (non-root, read-only root filesystem, no
    service-account token, a deadline); its log is the report:
    `kubectl logs job/NAME > r.json && imgkit verify --from-report r.json IMAGE`."""
    from .export.k8s import JobSettings, check_quantity, parse_selector, parse_toleration
    settings = JobSettings(
        gpus=gpus, runtime_class=runtime_class,
        node_selector=tuple(parse_selector(s) for s in node_selector),
        tolerations=tuple(parse_toleration(t) for t in toleration),
        shm_size=check_quantity("--shm-size", shm_size), deadline=deadline, ttl=ttl,
        namespace=k8s_namespace)
    from .export.command import export_k8s as run
    run(Selection(images, namespace, cuda, tuple(only), compat_file=compat_file), out=out,
        registry=registry, settings=settings, candidates=candidates)


@app.command()
@reports_errors
def probe(
    no_gpu: bool = typer.Option(False, "--no-gpu", help="Skip the GPU work."),
    gemm_size: int = typer.Option(8192, "--gemm-size", help="Square GEMM size for throughput."),
) -> None:
    """Run the probe on this host (no container) and print its JSON facts."""
    from .probe.__main__ import main as probe_main
    probe_main((["--no-gpu"] if no_gpu else []) + ["--gemm-size", str(gemm_size)])


def reference() -> str:
    """docs/cli.md: every command with every option and its help, from the CLI itself (a
    test re-makes it and fails on drift; `make docs` writes it)."""
    lines = ["# Command-line reference", "",
             "Generated from imgkit's own CLI (`make docs`); `tests/test_cli_reference.py` fails "
             "when it drifts. The README's command table is the overview.", ""]

    def walk(command: Any, path: list[str]) -> None:     # typer's (vendored) click objects
        if hasattr(command, "commands"):
            for name in sorted(command.commands):
                walk(command.commands[name], [*path, name])
            return
        lines.extend([f"## imgkit {' '.join(path)}", "", prose(command.help) or "", ""])
        for param in command.params:
            if param.param_type_name == "argument":
                said = getattr(param, "help", None)
                lines.append(f"- `{str(param.name).upper()}`" + (f": {said}" if said else ""))
            elif param.param_type_name == "option" and not param.hidden:
                flags = ", ".join(f"`{o}`" for o in (*param.opts, *param.secondary_opts))
                extra = []
                if param.envvar:
                    extra.append(f"env {param.envvar}")
                if param.show_default and param.default not in (None, (), [], False, ""):
                    extra.append(f"default {param.default}")
                lines.append(f"- {flags}: {param.help or ''}"
                             + (f" ({'; '.join(extra)})" if extra else ""))
        lines.append("")
    walk(typer.main.get_command(app), [])
    return "\n".join(lines).rstrip() + "\n"
