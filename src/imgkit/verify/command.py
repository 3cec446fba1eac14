"""`imgkit verify`, `imgkit attest` and `imgkit check-signed`: judge one image (local,
staged, or by registry digest) and keep its verdict as the ticket of the image id judged;
attach that verdict and the image's SBOM next to the digest, signed; or, running no probe,
check the signed verdict a registry image carries.

Each walks downhill: resolve the image (one look-up, a pull by digest for a registry
reference), run the probe once, judge, keep the ticket, then attach and sign."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .. import labels
from ..console import stderr_line
from ..engine import Engine, ImageInfo, connect
from ..errors import (
    EXIT_FAILED,
    EXIT_HOST,
    EXIT_OK,
    EngineUnavailable,
    HostError,
    Inconsistent,
    RegistryError,
    UsageError,
)
from ..options import PUBLISH_DEFAULTS, Signer, Trust, VerifyOptions
from ..registry.reference import RemoteRef, remote_ref
from ..selection import Selection
from . import report, tickets
from .expect import check_gpus, parse_expect_options
from .run import BUILD_HINT, REPORT_HINT, inventory, judge_report, known
from .run import verify as run_verify
from .verdict import Verdict

if TYPE_CHECKING:
    from .attestation import VerdictRecord
    from .cst import CheckFile


# The team's checks and the staged candidates are read with pydantic models, whose import and
# schema building cost a plain verify (the command CI runs most) about a tenth of a second:
# imported only when asked for.
def _checks(path: Path | None) -> CheckFile | None:
    from .cst import load_checks
    return load_checks(path) if path else None


def _staged(candidates: Path, image: str, platform: str | None) -> str:
    from ..registry.candidates import lookup
    return lookup(candidates, image, platform).reference


@dataclass(frozen=True)
class Outputs:
    """The files a verdict is also written to (whatever it says)."""
    json: Path | None = None
    junit: Path | None = None
    markdown: Path | None = None
    metrics: str | None = None      # a file (Prometheus' text format) or a Pushgateway's URL


@dataclass(frozen=True)
class Subject:
    """The image judged: how the engine names it, what the engine said of it (asked once),
    and the registry digest it was pulled by (None for a local image)."""
    ref: str
    info: ImageInfo
    remote: RemoteRef | None = None
    in_engine: bool = True     # False: `info` is the registry's (its size is compressed bytes)


def verify(*, image: str, options: VerifyOptions, outputs: Outputs = Outputs(),
           candidates: Path | None = None, from_report: Path | None = None,
           retry_for: float = PUBLISH_DEFAULTS.retry_for, reference: Path | None = None,
           margin: float = 0.1) -> int:
    """Judge one image and keep the verdict as its ticket; every output asked for is
    written whatever the verdict. With `candidates`, `image` is the matrix's tag of an
    image an earlier job staged: that digest is judged. With `reference` (a fleet check),
    the report is also held to that verdict's numbers, within `margin`."""
    declared = _checks(options.checks)                       # bad file: exit 2
    held_to = None
    if reference is not None:
        from .fleet import read_reference
        held_to = read_reference(reference)                   # bad file: exit 2
    engine, subject = resolve(image, options, candidates, retry_for, hint_for(from_report),
                              engine_optional=from_report is not None and declared is None)
    # a verdict file lists what is installed (read beside the frameworks' import), so that
    # `imgkit site` can say which packages moved between two of them
    verdict = judge(engine, subject, options, from_report, declared=declared,
                    with_inventory=outputs.json is not None)
    if held_to is not None:
        from .fleet import fleet_checks
        verdict = replace(verdict, checks=verdict.checks + tuple(fleet_checks(
            verdict, held_to, margin)))
    verdict = named(verdict, subject)
    keep_ticket(verdict, options.expect)
    return written(verdict, outputs, subject)


def attest(*, image: str, options: VerifyOptions, signer: Signer, outputs: Outputs = Outputs(),
           candidates: Path | None = None, from_report: Path | None = None,
           retry_for: float = PUBLISH_DEFAULTS.retry_for) -> int:
    """verify, then attach the verdict (and, when it passed, the SBOM read in the same
    probe run) next to the digest judged, signed by `signer` when it signs."""
    if remote_ref(image) is None and candidates is None:
        raise UsageError(f"attest needs a registry reference, not {image!r}",
                         hint="e.g. imgkit attest registry.example.com/ml/paddle@sha256:...")
    declared = _checks(options.checks)                       # bad file: exit 2
    engine, subject = resolve(image, options, candidates, retry_for, hint_for(from_report))
    verdict = judge(engine, subject, options, from_report, with_inventory=True, declared=declared)
    verdict = named(verdict, subject)
    document = keep_ticket(verdict, options.expect)
    if subject.remote is not None and engine is not None:    # resolve always gives attest one
        attach(engine, subject, verdict, document, signer, retry_for)
    return written(verdict, outputs, subject)


def check_signed(*, image: str, trust: Trust, allow_gpu_unverified: bool = False,
                 max_age: float | None = None, candidates: Path | None = None,
                 retry_for: float = PUBLISH_DEFAULTS.retry_for) -> int:
    """Whether the registry image's signed verdict lets it through (exit 0), or not (1)."""
    if not trust.configured:
        raise UsageError("check-signed needs a public key (--trusted-key cosign.pub) or a "
                         "keyless identity (--certificate-identity and "
                         "--certificate-oidc-issuer)")
    if candidates is not None:
        image = _staged(candidates, image, None)                 # not staged: exit 2
    remote = remote_ref(image)
    if remote is None:
        raise UsageError(f"check-signed needs a registry reference, not {image!r}",
                         hint="e.g. imgkit check-signed registry.example.com/ml/paddle@sha256:... "
                              "--trusted-key cosign.pub")
    from ..registry.client import RegistryClient, endpoint_of
    from . import signed
    with RegistryClient(endpoint_of(connect(), remote.registry), retry_for=retry_for) as client:
        manifest = client.manifest(remote.repository, remote.reference)
        if manifest is None:
            raise UsageError(f"{remote} is not in the registry")
        image_id = manifest.config_digest or ""
        why = signed.check(client, remote.repository, manifest.digest, image_id, trust,
                           allow_gpu_unverified=allow_gpu_unverified, max_age=max_age)
    if why is not None:
        print(f"refused: {why}")
        return EXIT_FAILED
    print(f"{remote.registry}/{remote.repository}@{manifest.digest}: a signed, passing verdict "
          f"for image {image_id[:19]} is attached")
    return EXIT_OK


def resolve(image: str, options: VerifyOptions, candidates: Path | None, retry_for: float,
            missing_hint: str = BUILD_HINT, engine_optional: bool = False,
            ) -> tuple[Engine | None, Subject]:
    """The image to judge, looked up once: a staged candidate or a registry reference is
    pulled by digest first. Bad options are refused before the engine is asked; a local
    image the engine lacks is refused with `missing_hint`. `engine_optional` (a report
    judged elsewhere): with no engine, a registry reference is read from the registry."""
    check_gpus(options.gpus)                                  # bad --gpus: exit 2 first
    parse_expect_options(options.expect)                      # bad --expect: exit 2 first
    if candidates is not None:
        image = _staged(candidates, image, options.platform)     # not staged: exit 2
    remote = remote_ref(image)
    try:
        engine = connect()
    except EngineUnavailable:
        if not engine_optional or remote is None:
            raise
        return None, from_registry(remote, options, retry_for)
    if remote is None:
        return engine, Subject(image, known(engine, image, missing_hint))
    from ..registry.remote import fetch  # requests and the registry client: only here
    try:
        remote, info = fetch(engine, remote, retry_for=retry_for, platform=options.platform)
    except RegistryError as exc:
        if exc.exit_code != EXIT_FAILED:
            raise
        # the registry failed, not the image: no verdict, and exit 3 like any host fault
        raise HostError(f"cannot fetch {remote}: {exc.message}", hint=exc.hint or (
            "the registry kept failing; try again later or give it more --retry-for"))
    return engine, Subject(remote.local_ref, info, remote)


def from_registry(remote: RemoteRef, options: VerifyOptions, retry_for: float) -> Subject:
    """The image as its registry describes it (a judge with no engine, as in a fleet
    check's pod): its config read, nothing pulled."""
    from ..registry.remote import facts
    try:
        remote, info = facts(remote, retry_for=retry_for, platform=options.platform)
    except RegistryError as exc:
        if exc.exit_code != EXIT_FAILED:
            raise
        raise HostError(f"cannot read {remote} from its registry: {exc.message}",
                        hint=exc.hint or "the registry kept failing; try again later")
    return Subject(remote.local_ref, info, remote, in_engine=False)


def hint_for(from_report: Path | None) -> str:
    """What to do about a local image the engine lacks: judging a Job's report needs the
    image pulled; a run here, built or pulled."""
    return REPORT_HINT if from_report is not None else BUILD_HINT


def judge(engine: Engine | None, subject: Subject, options: VerifyOptions,
          from_report: Path | None, with_inventory: bool = False,
          declared: CheckFile | None = None) -> Verdict:
    """The verdict of one probe run (here, or a Job's report), with the inventory of what
    is installed when asked (for the SBOM), and the team's declared checks when given.
    Only a report made elsewhere is judged with no engine (`engine` None)."""
    if from_report is not None:                               # a Job ran the probe elsewhere
        verdict = judge_report(engine, subject.ref, report_text(from_report), options,
                               info=subject.info)
    elif engine is None:
        raise Inconsistent(f"{subject.ref}: a probe run was asked for with no engine")
    else:
        riders: dict[str, str] = {}
        probe_options = options
        if declared is not None:          # the team's tests that run in the probe's container
            from .in_probe import extra_seconds, probe_environment
            gpu = options.gpus != "none"
            riders = probe_environment(declared, gpu=gpu, timeout=options.timeout)
            probe_options = replace(options, timeout=options.timeout + extra_seconds(
                declared, gpu=gpu, timeout=options.timeout))
        verdict = run_verify(engine, subject.ref, probe_options, info=subject.info,
                             with_inventory=with_inventory, environment=riders)
    if declared is not None and engine is not None:
        verdict = with_declared(engine, verdict, declared, options.timeout)
    return with_updates(engine, verdict) if options.updates and engine is not None else verdict


def with_declared(engine: Engine, verdict: Verdict, declared: CheckFile, timeout: int) -> Verdict:
    """The verdict with the team's declared checks of the very image it judged."""
    from .declared import declared_checks
    from .in_probe import gpu_test_checks
    ran = verdict.facts.commands if verdict.facts is not None else None
    checks = declared_checks(engine, verdict.image_id, declared, timeout, ran=ran)
    checks += gpu_test_checks(declared.gpu_tests, verdict)
    return replace(verdict, checks=verdict.checks + tuple(checks))


def keep_ticket(verdict: Verdict, expect: tuple[str, ...]) -> VerdictRecord:
    """Record the verdict as the ticket of the image id judged (what publish gates on);
    the ticket document, as it is attached."""
    document = tickets.make_document(verdict, expect)         # judged as this run judged it
    if tickets.keep(document) is None:
        stderr_line(f"not recorded as the ticket of {verdict.image_id[:19]}: a plain "
                    "`imgkit verify` recorded one, and --expect judged this run by other "
                    "claims than the image's labels and tag")
        return document
    # and the whole verdict beside it, for `imgkit site`'s pages
    tickets.keep_file(verdict.image_id, report.verdict_json(verdict))
    if expect:
        stderr_line(f"recorded as the ticket of {verdict.image_id[:19]}, judged with "
                    f"--expect {' '.join(expect)} (the ticket says so)")
    return document


def attach(engine: Engine, subject: Subject, verdict: Verdict, document: VerdictRecord,
           signer: Signer, retry_for: float) -> None:
    """The verdict next to the digest judged; the SBOM too when it passed (what promotion
    copies along); both signed when `signer` signs (what promotion trusts)."""
    from ..registry import cosign
    from ..registry.remote import attach_sbom, attach_verdict, sign
    from . import attestation
    remote = subject.remote
    if remote is None:
        raise Inconsistent(f"{subject.ref}: attach was asked for a local image")
    tag = attach_verdict(engine, remote, verdict.image_id, document.model_dump(mode="json"),
                         retry_for=retry_for)
    stderr_line(f"attached the verdict to {remote.registry}/{remote.repository}@"
                f"{remote.digest} ({tag})")
    sbom_bytes = b""
    if not verdict.failed:
        sbom_bytes = sbom_of(engine, subject, verdict)
        tag = attach_sbom(engine, remote, sbom_bytes, retry_for=retry_for)
        stderr_line(f"attached the SBOM ({tag})")
    if signer.signs:
        tag = sign(engine, remote, attestation.predicate(document), cosign.VERDICT_TYPE, signer)
        if sbom_bytes:
            sign(engine, remote, sbom_bytes, cosign.SBOM_TYPE, signer)
        stderr_line(f"signed the verdict{' and the SBOM' if sbom_bytes else ''} ({tag})")


def sbom_of(engine: Engine, subject: Subject, verdict: Verdict) -> bytes:
    """The SBOM from the verdict's own probe run; a report made elsewhere without the
    inventory (a Job's) has the inventory read in a throwaway container here."""
    from .sbom import sbom as sbom_json  # cyclonedx and pydantic: not on a plain verify's start-up
    facts = verdict.facts
    if facts is None or facts.inventory is None:
        return sbom_document(engine, subject.ref, subject.info)
    return sbom_json(subject.ref, subject.info.id, subject.info.labels, facts.libraries,
                     facts.inventory).encode()


def named(verdict: Verdict, subject: Subject) -> Verdict:
    """The verdict with what the image is called by its own label and how big it is
    unpacked (what a site shows of it, whatever reference verify was given)."""
    return replace(verdict, title=subject.info.labels.get(labels.TITLE, ""),
                   size=subject.info.size if subject.in_engine else None)


def written(verdict: Verdict, outputs: Outputs, subject: Subject) -> int:
    """Print the verdict and write the files asked for; the exit code it means."""
    report.write_verdict(verdict, json_file=outputs.json, junit_file=outputs.junit,
                         markdown_file=outputs.markdown)
    if outputs.metrics is not None:
        from . import metrics  # prometheus_client: only when asked
        metrics.send_metrics(outputs.metrics, verdict, metrics.Identity(
            digest_of(subject), subject.info.platform, metrics.node_name()))
    if verdict.host_failure:
        return EXIT_HOST
    return EXIT_FAILED if verdict.failed else EXIT_OK


def digest_of(subject: Subject) -> str:
    """The registry digest judged: the one pulled by, else one the engine knows the image
    by (pushed before); "" for an image never pushed."""
    if subject.remote is not None:
        return subject.remote.digest
    return next((d.partition("@")[2] for d in subject.info.digests), "")


def with_updates(engine: Engine, verdict: Verdict) -> Verdict:
    """The verdict and an informational line: the security updates that wait for the image
    (they never fail it: `imgkit outdated` is the gate for that)."""

    from .outdated import ask_image
    from .verdict import INFO, Check
    waiting = [u for u in ask_image(engine, verdict.image_id)[0] if u.security]
    measured = (f"{len(waiting)} waiting: " + ", ".join(
        f"{u.package} {u.installed} -> {u.available}" for u in waiting)) if waiting else "none waiting"
    check = Check("updates.security", INFO, "none waiting", measured,
                  diagnosis="rebuild on fresh packages (imgkit build --refresh-base, or relock)"
                  if waiting else "", required=False)
    return replace(verdict, checks=verdict.checks + (check,))


def report_text(path: Path) -> str:
    """A Job's log: the probe's framed report, with whatever else the image printed."""
    try:
        return path.read_text(errors="replace")
    except OSError as exc:
        raise UsageError(f"--from-report {path}: {exc.strerror}")


def sbom_document(engine: Engine, ref: str, info: ImageInfo, timeout: int = 600) -> bytes:
    """The CycloneDX SBOM of the image `info` describes (named `ref` in it), read inside a
    throwaway container of exactly that image."""
    from .sbom import sbom as sbom_json  # cyclonedx and pydantic: not on a plain verify's start-up
    facts = inventory(engine, info, VerifyOptions(timeout=timeout), name=ref)
    if facts.inventory is None:
        raise Inconsistent(f"{ref}: the probe's inventory went missing after it was checked")
    return sbom_json(ref, info.id, info.labels, facts.libraries, facts.inventory).encode()


def sbom(*, image: str, out: Path, timeout: int) -> None:
    """Write the image's CycloneDX SBOM to `out`."""
    engine = connect()                                        # unreachable: exit 3
    document = sbom_document(engine, image, known(engine, image), timeout)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(document)
    stderr_line(f"wrote {out}")


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
        info = known(engine, ref)
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
