"""The command line's commands: declarations only. Each takes its options (cli/flags.py)
and makes one call into its stage, imported inside the command so start-up stays lazy.

Where each command lives: init -> starter/; list, schema -> matrix/; lock, outdated -> lock/;
render -> render/; build, size -> builder/; verify, judge -> verify/command.py; attest,
check-signed, sbom -> verify/attach.py; publish, merge, promote -> publish/; ci, export ->
export/; probe -> probe/."""
from __future__ import annotations

import sys
from pathlib import Path

import typer

from ..options import (
    BUILD_DEFAULTS,
    DEFAULTS,
    PUBLISH_DEFAULTS,
    BuildOptions,
    CiSettings,
    PublishOptions,
    VerifyOptions,
)
from ..project import scan_required, setting_or
from ..selection import Selection
from . import flags
from .framework import (
    CONTEXT,
    DEVELOP,
    INSPECT,
    MAKE,
    PROVE,
    SHIP,
    RootGroup,
    WordyGroup,
    commands_of,
    selects,
)
from .values import (
    compression_of,
    destination_of,
    docker_size,
    needing,
    platform_of,
    seconds_of,
    signer_of,
    thresholds_of,
)
from .values import trust_of as trust

app = typer.Typer(cls=RootGroup, context_settings=CONTEXT, no_args_is_help=True,
                  help="Build and verify GPU container images from a declared matrix.")
export_app = typer.Typer(cls=WordyGroup, context_settings=CONTEXT, no_args_is_help=True,
                         help="Hand the matrix to other tools: BuildKit bake files, Kubernetes "
                              "Jobs, admission policies.")
app.add_typer(export_app, name="export", rich_help_panel=SHIP,
              short_help="Hand the matrix to BuildKit, Kubernetes, admission, Prometheus.")
command, export_command = commands_of(app), commands_of(export_app)


@app.callback()
def imgkit(version: flags.Version = False) -> None:
    """Build and verify GPU container images from a declared matrix."""


@command(MAKE, "Start a project: imgkit.toml and a family of each kind.")
def init(folder: flags.InitFolder = Path("."), namespace: flags.Namespace = None,
         ci: flags.InitCi = None, registry: flags.InitRegistry = None) -> None:
    """Start a project in FOLDER: imgkit.toml, a commented family of each kind in images/
    (a small CUDA stack first, so the first build takes minutes), and the family files'
    JSON Schema for editors; with --ci, the CI pipeline too. --namespace goes into
    imgkit.toml and the families' repositories. Nothing is overwritten."""
    from ..starter.command import init as run
    run(folder, namespace, ci=ci, registry=registry)


@command(MAKE, "Validate the matrix and list its images, parents first.", name="list")
@selects()
def list_(selection: Selection, json_file: flags.Json = None, stats: flags.Stats = False,
          from_build: flags.FromBuild = None, farm: flags.Farm = [1, 4, 16],
          gpu_pool: flags.GpuPool = [1, 8], known: flags.Known = False) -> None:
    """Validate the matrix and list its images, parents first (or, with --stats, what it
    costs; with --known, what builds on which CUDA)."""
    from ..matrix.command import list_plan
    list_plan(selection, json_file=json_file, with_stats=stats, from_build=from_build,
              builders=farm, gpus=gpu_pool, known=known)


@command(MAKE, "Print the family files' JSON Schema, for editors.")
def schema() -> None:
    """Print the JSON Schema of family files (images/*.yaml), for editors and CI checks;
    docs/matrix.md is its reference."""
    from ..matrix.schema import schema_text
    print(schema_text(), end="")


@command(MAKE, "Pin every pip and apt package of each image.")
@selects()
def lock(selection: Selection, check: flags.Check = False, resolve: flags.Resolve = False,
         index_url: flags.IndexUrl = None) -> int:
    """Pin what each image's pip and apt steps install, and write one lock per image
    (images/locks/<image>.txt); builds then install exactly that.

    Exit 0: written (with --check: every lock matches); 1: --check found a missing or stale
    lock (with --resolve: one that no longer resolves as written); 2: the matrix cannot be
    resolved; 3: no engine, index or mirror."""
    from ..builder.base import make_missing_base
    from ..lock.command import lock_command
    return lock_command(selection, check=check, resolve=resolve, index_url=setting_or(index_url, "index_url"),
                        make_base=make_missing_base)


@command(MAKE, "Write each image's build context (Dockerfile and files).")
@selects("templates")
def render(selection: Selection, out: flags.ContextsOut,
           engine: flags.RenderEngine = "auto") -> None:
    """Write each image's self-contained build context (Dockerfile and files)."""
    from ..render.command import render as run
    run(selection, out=out, form=engine)


@command(MAKE, "Build what is out of date; skip what is up to date.")
@selects("templates", "platforms")
def build(selection: Selection, jobs: flags.Jobs = BUILD_DEFAULTS.jobs,
          force: flags.Force = False, keep_parents: flags.KeepParents = False,
          dry_run: flags.DryRun = False, verbose: flags.Verbose = False,
          engine: flags.BuildEngine = BUILD_DEFAULTS.engine, builder: flags.Builder = None,
          ca_bundle: flags.CaBundle = None, index_url: flags.IndexUrl = None,
          base_source: flags.BaseSource = "auto", mirror: flags.Mirror = None,
          refresh_base: flags.RefreshBase = False, reuse_from: flags.ReuseFrom = None,
          needed_by: flags.NeededBy = None, candidates: flags.BuildCandidates = None,
          json_file: flags.Json = None,
          retry_for: flags.RetryFor = PUBLISH_DEFAULTS.retry_for) -> int:
    """Render and build the matrix (or a slice of it); skip what is up to date.

    Exit 0: built or up to date; 1: an image failed (its dependents are skipped); 2: bad
    input; 3: no engine, or a registry that refuses our credentials."""
    from ..builder.command import build as run
    from ..builder.noopcache import entry_name, plain_build
    asked = plain_build(sys.argv[1:])     # what the next plain `imgkit build` answers from
    return run(selection, options=BuildOptions(
        jobs=jobs, force=force, keep_parents=keep_parents, dry_run=dry_run, engine=engine,
        builder=builder, refresh_base=refresh_base), verbose=verbose, ca_bundle=ca_bundle,
        index_url=setting_or(index_url, "index_url"), base_source=base_source,
        mirrors=mirror or [], json_file=json_file,
        candidates=candidates, retry_for=retry_for,
        reuse_from=destination_of("--reuse-from", reuse_from),
        needed_by=needing(needed_by, reuse_from),
        noop_name=entry_name(asked) if asked is not None else None)


@command(PROVE, "Prove an image's stack and that the GPU really computes.")
def verify(image: flags.Image, gpus: flags.Gpus = DEFAULTS.gpus, expect: flags.Expect = [],
           min_: flags.Min = [], platform: flags.ImagePlatform = None,
           timeout: flags.Timeout = DEFAULTS.timeout, shm_size: flags.ShmSize = DEFAULTS.shm_size,
           retry_for: flags.RetryFor = PUBLISH_DEFAULTS.retry_for, json_file: flags.Json = None,
           junit: flags.Junit = None, markdown: flags.Markdown = None,
           metrics: flags.Metrics = None, checks: flags.Checks = None) -> int:
    """Prove an image's stack matches its tag and that the GPU really computes.

    A registry reference is pulled by digest first. The verdict is kept as the ticket of the
    image id it judged (what `imgkit publish` gates on). Exit 0: every required check
    passed; 1: the image failed; 2: bad usage or unknown image; 3: the host cannot run the
    check (no engine, no NVIDIA runtime, driver too old)."""
    from ..verify.command import Outputs
    from ..verify.command import verify as run
    return run(image=image, options=VerifyOptions(
        gpus=gpus, expect=tuple(expect), thresholds=thresholds_of(min_),
        platform=platform_of(platform), timeout=timeout,
        shm_size=docker_size("--shm-size", shm_size), checks=checks),
        outputs=Outputs(json_file, junit, markdown, metrics), retry_for=retry_for)


@command(PROVE, "Judge a probe's report made elsewhere (a Kubernetes Job's).")
def judge(image: flags.Image, report: flags.Report, expect: flags.Expect = [],
          min_: flags.Min = [], reference: flags.Reference = None, margin: flags.JudgeMargin = 0.1,
          platform: flags.ReportPlatform = None, checks: flags.Checks = None,
          retry_for: flags.RetryFor = PUBLISH_DEFAULTS.retry_for, json_file: flags.Json = None,
          junit: flags.Junit = None, markdown: flags.Markdown = None,
          metrics: flags.Metrics = None) -> int:
    """Judge a probe's report made elsewhere (a Kubernetes Job's or fleet check's) as verify
    would, running no probe; with no engine, IMAGE's config is read from its registry."""
    from ..verify.command import Outputs
    from ..verify.command import judge as run
    return run(image=image, report_file=report, options=VerifyOptions(
        expect=tuple(expect), thresholds=thresholds_of(min_), platform=platform_of(platform),
        checks=checks), outputs=Outputs(json_file, junit, markdown, metrics),
        retry_for=retry_for, reference=reference, margin=margin)


@command(PROVE, "Verify a registry image and attach its signed verdict and SBOM.")
def attest(image: flags.RemoteImage, signing_key: flags.SigningKey = None,
           keyless: flags.Keyless = False, tlog: flags.Tlog = None,
           gpus: flags.Gpus = DEFAULTS.gpus, expect: flags.Expect = [],
           min_: flags.Min = [], platform: flags.ImagePlatform = None,
           timeout: flags.Timeout = DEFAULTS.timeout, shm_size: flags.ShmSize = DEFAULTS.shm_size,
           candidates: flags.Candidates = None, from_report: flags.FromReport = None,
           retry_for: flags.RetryFor = PUBLISH_DEFAULTS.retry_for, json_file: flags.Json = None,
           junit: flags.Junit = None, markdown: flags.Markdown = None,
           metrics: flags.Metrics = None, checks: flags.Checks = None,
           max_age: flags.MaxAge = None, trusted_key: flags.TrustedKey = None,
           certificate_identity: flags.Identity = None,
           certificate_oidc_issuer: flags.Issuer = None) -> int:
    """Verify a registry image; attach its verdict, SBOM and `imgkit scan` (made now where the
    project names a vulnerability_db and none is kept) beside it, signed (promote checks).

    The same probe and checks as `imgkit verify`; the SBOM is read in the same container
    run. Exit codes as `imgkit verify`. With --max-age and --trusted-key (or a keyless
    identity), an image that already carries a signed, passing verdict that young, made by
    this imgkit with the same --expect, --min and --checks, is not judged again: nothing is
    pulled, no probe runs, and that verdict is reported."""
    from ..scan.command import kept_or_scanned
    from ..verify.attach import Keep
    from ..verify.attach import attest as run
    from ..verify.command import Outputs
    age = seconds_of("--max-age", max_age)
    keep = None if age is None else Keep(age, trust(trusted_key, certificate_identity,
                                                    certificate_oidc_issuer, tlog))
    return run(image=image, options=VerifyOptions(
        gpus=gpus, expect=tuple(expect), thresholds=thresholds_of(min_),
        platform=platform_of(platform), timeout=timeout,
        shm_size=docker_size("--shm-size", shm_size), checks=checks),
        outputs=Outputs(json_file, junit, markdown, metrics), candidates=candidates,
        from_report=from_report, retry_for=retry_for, keep=keep,
        signer=signer_of(signing_key, keyless, tlog), scan_of=kept_or_scanned)


@command(PROVE, "Whether a registry image carries a signed, passing verdict.",
         name="check-signed")
def check_signed(image: flags.RemoteImage, trusted_key: flags.TrustedKey = None,
                 certificate_identity: flags.Identity = None,
                 certificate_oidc_issuer: flags.Issuer = None, max_age: flags.MaxAge = None,
                 allow_gpu_unverified: flags.AllowGpuUnverified = False, tlog: flags.Tlog = None,
                 candidates: flags.Candidates = None,
                 retry_for: flags.RetryFor = PUBLISH_DEFAULTS.retry_for) -> int:
    """Run no probe: exit 0 only when the registry image carries a signed, passing verdict
    about its very digest (and a signed scan, where the project gates on scans) that verifies
    against --trusted-key or a keyless identity. A deploy gate. Exit 1: refused, saying why."""
    from ..scan.attested import check as scan_check
    from ..verify.attach import check_signed as run
    return run(image=image, trust=trust(trusted_key, certificate_identity,
                                        certificate_oidc_issuer, tlog),
               allow_gpu_unverified=allow_gpu_unverified, max_age=seconds_of("--max-age", max_age),
               candidates=candidates, retry_for=retry_for,
               scan_check=scan_check if scan_required() else None)


@command(PROVE, "Known vulnerabilities: a real scanner, offline, held to waivers.")
def scan(image: flags.ScanImage = None, db: flags.AdvisoryDb = None, fail_on: flags.FailOn = None,
         json_file: flags.Json = None, metrics: flags.ScanMetrics = None,
         update_db: flags.UpdateDb = False, scanner: flags.ScannerName = None) -> int:
    """Scan an image for known vulnerabilities with osv-scanner (or trivy), offline,
    against the advisory database on disk; each finding at or above --fail-on fails unless the project's
    images/vulnerabilities.yaml waives it (a waiver that expired, or covers what a version
    now fixes, fails too).

    Each scan is kept by image id: where the project names a database, publish needs a
    passing one (docs/vulnerabilities.md). Exit 0: nothing fails; 1: a finding or a waiver
    fails; 2: bad input; 3: no engine, scanner or database (see --update-db), or it failed."""
    from ..scan.command import scan as run
    return run(image=image, db=db, fail_on=fail_on, json_file=json_file, update_db=update_db,
               metrics=metrics, scanner=scanner)


@command(SHIP, "Push verified images to registries, by digest.")
@selects("platforms")
def publish(selection: Selection, tags: flags.LocalTags = None, to: flags.PublishTo = [],
            candidate: flags.Candidate = False, reuse_from: flags.ReuseFrom = None,
            needed_by: flags.NeededBy = None,
            allow_gpu_unverified: flags.AllowGpuUnverified = False, dry_run: flags.DryRun = False,
            signing_key: flags.SigningKey = None, keyless: flags.Keyless = False,
            tlog: flags.Tlog = None, retry_for: flags.RetryFor = PUBLISH_DEFAULTS.retry_for,
            compression: flags.Compression = PUBLISH_DEFAULTS.compression,
            json_file: flags.Json = None) -> int:
    """Push verified images to registries, by digest, with their verdicts attached.

    Each image needs a passing verdict for the id its tag points at now (`imgkit verify`),
    and a passing scan (`imgkit scan`) where the project names an advisory database
    (vulnerability_db); it is pushed once, copied by digest to further registries, read back everywhere, and
    only then do its tags move. Credentials come from Docker's config. Exit 0: published;
    1: refused or failed; 2: bad usage; 3: a registry refused the credentials, or no engine."""
    from ..publish.command import publish as run
    return run(selection, tags=tags or [], to=to, options=PublishOptions(
        allow_gpu_unverified=allow_gpu_unverified, candidate=candidate, dry_run=dry_run,
        retry_for=retry_for, compression=compression_of(compression),
        signer=signer_of(signing_key, keyless, tlog), require_scan=scan_required()),
        json_file=json_file, reuse_from=destination_of("--reuse-from", reuse_from),
        needed_by=needing(needed_by, reuse_from))


@command(SHIP, "Stage one multi-platform index per image.")
@selects()
def merge(selection: Selection, candidates: flags.StagedCandidates,
          tags: flags.LocalTags = None, retry_for: flags.RetryFor = PUBLISH_DEFAULTS.retry_for,
          json_file: flags.Json = None) -> int:
    """Stage one index per multi-platform image, from each platform's staged image, and
    write it as a candidate for promote.

    Exit 0: merged; 2: a platform not staged, or bad usage; 3: no engine, or a registry
    refused the credentials."""
    from ..publish.merge import merge as run
    return run(selection, tags=tags or [], candidates=candidates, json_file=json_file,
               retry_for=retry_for)


@command(INSPECT, "What waits for an image: updates, patch releases, base age.")
@selects()
def outdated(selection: Selection, images_: flags.LocalImages = None,
             pip: flags.Pip = True, index_url: flags.IndexUrl = None,
             json_file: flags.Json = None) -> int:
    """What waits for each image: the updates its apt sources hold now (security ones
    apart), newer patch releases of its Python distributions, and its base's age.

    Exit 0: no security update waits; 1: one does (a CI gate); 2: an unknown image;
    3: no engine or no mirror."""
    from ..lock.command import outdated as run
    return run(images=list(images_ or []), selection=selection, json_file=json_file,
               index_url=setting_or(index_url, "index_url"), pip=pip)


@command(INSPECT, "The steps that weigh most in an image.")
def size(image: flags.OneImage, top: flags.Top = 10, json_file: flags.Json = None) -> None:
    """List the steps that weigh most in an image, and what its own layers add to its
    parent."""
    from ..builder.command import size as run
    run(image=image, top=top, json_file=json_file)


@command(INSPECT, "Write an image's CycloneDX SBOM.")
def sbom(image: flags.OneImage, out: flags.SbomOut,
         timeout: flags.Timeout = DEFAULTS.timeout) -> None:
    """Write the image's CycloneDX SBOM: OS packages, Python distributions, and each NVIDIA
    library with the version the library itself reports (read in a throwaway container)."""
    from ..verify.attach import sbom as run
    run(image=image, out=out, timeout=timeout)


@command(SHIP, "Write the CI pipeline that builds, verifies and promotes.")
@selects()
def ci(selection: Selection, platform: flags.CiPlatform, out: flags.PipelineOut = None,
       registry: flags.CiRegistry = None, staging: flags.Staging = None,
       gpu_runner: flags.GpuRunner = CiSettings.gpu_runner,
       gpu_arm64_runner: flags.GpuArm64Runner = CiSettings.gpu_arm64_runner,
       cpu_runner: flags.CpuRunner = CiSettings.cpu_runner,
       arm64_runner: flags.Arm64Runner = CiSettings.arm64_runner,
       emulate_arm64: flags.EmulateArm64 = False, install: flags.Install = CiSettings.install,
       verify_gpus: flags.VerifyGpus = CiSettings.verify_gpus,
       signing_key: flags.CiSigningKey = CiSettings.signing_key,
       trusted_key: flags.CiTrustedKey = CiSettings.trusted_key,
       release_branch: flags.ReleaseBranch = CiSettings.release_branch,
       pages: flags.Pages = False, compression: flags.Compression = CiSettings.compression,
       max_age: flags.CiMaxAge = CiSettings.max_age, check: flags.CiCheck = False) -> int:
    """Write the CI pipeline of the matrix: build on CPU runners, verify and sign on GPU
    runners, promote what passed.

    Build jobs per layer group (and platform) stage their images; a verify job per image
    and platform judges the staged digest and attaches its signed verdict; the promote job
    copies each digest whose signed verdicts verify. GitHub runs them in waves, each a
    matrix job (python roots, CUDA stacks, frameworks, extensions); GitLab jobs extend one
    template per kind. Every branch's pushes build and verify; the release branch's also
    promote. Credentials: the secrets REGISTRY_USERNAME and REGISTRY_PASSWORD (STAGING_* for a
    separate staging host); none for GitHub's ghcr.io or the GitLab instance's own registry,
    which the job's own token reaches."""
    from ..export.command import ci as run
    seconds_of("--max-age", max_age or None)                  # bad: exit 2
    return run(selection, platform=platform, registry=registry, staging=staging,
        gpu_runner=gpu_runner, gpu_arm64_runner=gpu_arm64_runner, cpu_runner=cpu_runner,
        arm64_runner=arm64_runner, emulate_arm64=emulate_arm64, install=install,
        verify_gpus=verify_gpus, out=out, signing_key=signing_key, trusted_key=trusted_key,
        release_branch=release_branch, pages=pages, compression=compression_of(compression),
        max_age=max_age, check=check)


@command(INSPECT, "Write a static site of every image's verdict.")
@selects()
def site(selection: Selection, out: flags.SiteOut, verdicts: flags.Verdicts = None,
         outdated: flags.Outdated = None, registry: flags.SiteRegistry = None,
         trusted_key: flags.TrustedKey = None, certificate_identity: flags.Identity = None,
         certificate_oidc_issuer: flags.Issuer = None, tlog: flags.Tlog = None) -> int:
    """Write a static site of the matrix's verdicts: a grid of every image by platform
    (passed, failed and why, GPU not verified, no verdict) with filters, and a page per
    image with its stack and checks. Self-contained: open index.html from disk or host it."""
    from ..site.command import site as run
    return run(selection, verdicts=verdicts, out=out, outdated=outdated,
               registry=destination_of("--registry", registry),
               trust=trust(trusted_key, certificate_identity, certificate_oidc_issuer, tlog))


@command(DEVELOP, "Run the probe on this host and print its JSON facts.")
def probe(no_gpu: flags.NoGpu = False, gemm_size: flags.GemmSize = 8192) -> None:
    """Run the probe on this host (no container) and print its JSON facts."""
    from ..probe.__main__ import main as probe_main
    probe_main((["--no-gpu"] if no_gpu else []) + ["--gemm-size", str(gemm_size)])

