"""`imgkit verify` and `imgkit sbom`: judge one image (local, staged, or by registry digest)
and keep its verdict as the ticket of the image id judged; the image's CycloneDX SBOM."""
from __future__ import annotations

from pathlib import Path

from .. import labels, report
from ..engine import Engine, connect
from ..errors import EXIT_FAILED, EXIT_HOST, EXIT_OK, HostError, Inconsistent, RegistryError, UsageError
from ..options import PUBLISH_DEFAULTS, Signer, Trust, VerifyOptions
from ..registry.candidates import lookup
from ..registry.reference import RemoteRef, remote_ref
from ..selection import Selection
from . import tickets
from .expect import check_gpus, parse_expect_options
from .run import inventory, judge_report
from .run import verify as run_verify
from .verdict import Verdict


def verify(*, image: str, options: VerifyOptions, json_file: Path | None = None,
           junit_file: Path | None = None, markdown_file: Path | None = None,
           attest: bool = False, candidates: Path | None = None,
           from_report: Path | None = None,
           retry_for: float = PUBLISH_DEFAULTS.retry_for,
           signer: Signer = Signer(), require_signed: Trust | None = None,
           allow_gpu_unverified: bool = False, max_age: float | None = None) -> int:
    """Judge one image; every output the user asked for is written whatever the verdict.
    A registry reference is pulled by digest first; with `attest` the verdict is attached
    next to that digest in its registry. With `candidates`, `image` is the matrix's tag of
    an image an earlier job staged: that digest is judged. With `signer`, what is attached
    is signed too. With `require_signed`, no probe runs: the image's signed verdict is
    checked against that trust (exit 0 when it allows the image through, else 1)."""
    check_gpus(options.gpus)                                  # bad --gpus: exit 2 first
    parse_expect_options(options.expect)                      # bad --expect: exit 2 first
    if candidates is not None:
        image = lookup(candidates, image, options.platform).reference   # not staged: exit 2
    remote = remote_ref(image)
    if attest and remote is None:
        raise UsageError(f"--attest needs a registry reference, not {image!r}",
                         hint="e.g. imgkit verify registry.example.com/ml/paddle@sha256:... --attest")
    if require_signed is not None:
        if remote is None:
            raise UsageError(f"--require-signed needs a registry reference, not {image!r}",
                             hint="e.g. imgkit verify registry.example.com/ml/paddle@sha256:... "
                                  "--require-signed --key cosign.pub")
        return check_signed(remote, require_signed, allow_gpu_unverified=allow_gpu_unverified,
                            max_age=max_age, retry_for=retry_for)
    engine = connect()
    if remote is not None:
        from ..registry.remote import fetch  # requests and the registry client: only here
        try:
            remote = fetch(engine, remote, retry_for=retry_for,   # pull by digest
                           platform=options.platform)
        except RegistryError as exc:
            if exc.exit_code != EXIT_FAILED:
                raise
            # the registry failed, not the image: no verdict, and exit 3 like any host fault
            raise HostError(f"cannot fetch {remote}: {exc.message}", hint=exc.hint or (
                "the registry kept failing; try again later or give it more --retry-for"))
    local = image if remote is None else remote.local_ref
    if from_report is not None:                               # a Job ran the probe elsewhere
        verdict = judge_report(engine, local, report_text(from_report), options)
    else:
        verdict = run_verify(engine, local, options)
    if options.updates:
        verdict = with_updates(engine, verdict)
    document = tickets.make_document(verdict, options.expect)   # judged as this run judged it
    if tickets.keep(document) is None:                        # what publish gates on
        report.stderr_line(f"not recorded as the ticket of {verdict.image_id[:19]}: a plain "
                           "`imgkit verify` recorded one, and --expect judged this run by other "
                           "claims than the image's labels and tag")
    elif options.expect:
        report.stderr_line(f"recorded as the ticket of {verdict.image_id[:19]}, judged with "
                           f"--expect {' '.join(options.expect)} (the ticket says so)")
    if attest and remote is not None:
        from ..registry import cosign
        from ..registry.remote import attach_sbom, attach_verdict, sign
        from . import attestation
        tag = attach_verdict(engine, remote, verdict.image_id, document, retry_for=retry_for)
        report.stderr_line(f"attached the verdict to {remote.registry}/{remote.repository}@"
                           f"{remote.digest} ({tag})")
        sbom_bytes = b""
        if not verdict.failed:                                # what promotion copies along
            sbom_bytes = sbom_document(engine, image, verdict.image_id)
            tag = attach_sbom(engine, remote, sbom_bytes, retry_for=retry_for)
            report.stderr_line(f"attached the SBOM ({tag})")
        if signer.signs:                                      # what promotion trusts
            tag = sign(engine, remote, attestation.predicate(document), cosign.VERDICT_TYPE, signer)
            if sbom_bytes:
                sign(engine, remote, sbom_bytes, cosign.SBOM_TYPE, signer)
            report.stderr_line(f"signed the verdict{' and the SBOM' if sbom_bytes else ''} ({tag})")
    report.write_verdict(verdict, json_file=json_file, junit_file=junit_file,
                         markdown_file=markdown_file)
    if verdict.host_failure:
        return EXIT_HOST
    return EXIT_FAILED if verdict.failed else EXIT_OK


def with_updates(engine: Engine, verdict: Verdict) -> Verdict:
    """The verdict and an informational line: the security updates that wait for the image
    (they never fail it: `imgkit outdated` is the gate for that)."""
    from dataclasses import replace

    from .outdated import ask_image
    from .verdict import INFO, Check
    waiting = [u for u in ask_image(engine, verdict.image_id)[0] if u.security]
    measured = (f"{len(waiting)} waiting: " + ", ".join(
        f"{u.package} {u.installed} -> {u.available}" for u in waiting)) if waiting else "none waiting"
    check = Check("updates.security", INFO, "none waiting", measured,
                  diagnosis="rebuild on fresh packages (imgkit build --refresh-base, or relock)"
                  if waiting else "", required=False)
    return replace(verdict, checks=verdict.checks + (check,))


def check_signed(remote: RemoteRef, trust: Trust, *, allow_gpu_unverified: bool,
                 max_age: float | None, retry_for: float) -> int:
    """`verify --require-signed`: whether the image's signed verdict lets it through."""
    if not trust.configured:
        raise UsageError("--require-signed needs a public key (--key cosign.pub) or a keyless "
                         "identity (--certificate-identity and --certificate-oidc-issuer)")
    from ..registry.client import RegistryClient, endpoint_of
    from . import signed
    engine = connect()
    with RegistryClient(endpoint_of(engine, remote.registry), retry_for=retry_for) as client:
        manifest = client.manifest(remote.repository, remote.reference)
        if manifest is None:
            raise UsageError(f"{remote} is not in the registry")
        image_id = manifest.config_digest or ""
        why = signed.check(client, remote.repository, manifest.digest, image_id, trust,
                           allow_gpu_unverified=allow_gpu_unverified, max_age=max_age)
    reference = f"{remote.registry}/{remote.repository}@{manifest.digest}"
    if why is not None:
        print(f"refused: {why}")
        return EXIT_FAILED
    print(f"{reference}: a signed, passing verdict for image {image_id[:19]} is attached")
    return EXIT_OK


def report_text(path: Path) -> str:
    """A Job's log: the probe's framed report, with whatever else the image printed."""
    try:
        return path.read_text(errors="replace")
    except OSError as exc:
        raise UsageError(f"--from-report {path}: {exc.strerror}")


def sbom_document(engine: Engine, ref: str, image_id: str, timeout: int = 600) -> bytes:
    """The CycloneDX SBOM of image `image_id` (named `ref` in it), read inside a throwaway
    container of exactly that image."""
    from .sbom import sbom as sbom_json  # cyclonedx and pydantic: not on a plain verify's start-up
    info, facts = inventory(engine, image_id, VerifyOptions(timeout=timeout), name=ref)
    if facts.inventory is None:
        raise Inconsistent(f"{ref}: the probe's inventory went missing after it was checked")
    return sbom_json(ref, info.id, info.labels, facts.libraries, facts.inventory).encode()


def sbom(*, image: str, out: Path, timeout: int) -> None:
    """Write the image's CycloneDX SBOM to `out`."""
    engine = connect()                                        # unreachable: exit 3
    info = engine.image(image)
    if info is None:
        raise UsageError(f"image {image!r} not found in the local engine",
                         hint="build it (imgkit build) or pull it first")
    document = sbom_document(engine, image, info.id, timeout)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(document)
    report.stderr_line(f"wrote {out}")


def outdated(*, images: list[str], selection: Selection, json_file: Path | None = None,
             index_url: str | None = None, pip: bool = True) -> int:
    """What waits for each image; exit 1 when security updates do. No image named: the
    images the matrix (selection) names that are here."""
    import datetime as dt

    from . import outdated as waiting
    engine = connect()                                        # unreachable: exit 3
    if not images:
        from ..matrix.load import load_plan
        images = [t for t in load_plan(selection).finals if engine.image(t) is not None]
        if not images:
            raise UsageError("none of the matrix's images is here", hint="build them, or name TAGs")
    found = []
    for ref in images:
        info = engine.image(ref)
        if info is None:
            raise UsageError(f"image {ref!r} not found in the local engine",
                             hint="build it (imgkit build) or pull it first")
        apt, dists = waiting.ask_image(engine, info.id)
        result = waiting.Outdated(ref, apt)
        if pip:
            result.pip = waiting.patch_releases(dists, index_url)
        result.base_created, result.base_days = waiting.base_age(engine, info.id,
                                                                 dt.datetime.now(dt.timezone.utc).date())
        result.base_release = info.labels.get(labels.BASE_RELEASE_DATE, "")
        found.append(result)
        report.print_outdated(result)
    if json_file is not None:
        json_file.write_text(report.outdated_json(found))
    return EXIT_FAILED if any(r.security for r in found) else EXIT_OK
