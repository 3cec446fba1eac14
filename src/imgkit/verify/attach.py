"""`imgkit attest`, `imgkit check-signed` and `imgkit sbom`: what travels with an image in
its registry. attest judges a registry image as verify does and attaches the verdict (and,
when it passed, the SBOM read in the same probe run) next to the digest judged, signed;
check-signed runs no probe and says whether the signed verdict a registry image carries
lets it through; sbom writes an image's CycloneDX SBOM."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..console import stderr_line
from ..engine import Engine, ImageInfo, connect
from ..errors import EXIT_FAILED, EXIT_OK, Inconsistent, UsageError
from ..options import PUBLISH_DEFAULTS, Signer, Trust, VerifyOptions
from ..outputs import STDOUT, write_output
from ..registry.reference import remote_ref
from .command import Outputs, declared_file, keep_ticket, named, verdict_of, written
from .run import inventory
from .subject import Subject, hint_for, reference_to_judge, resolve, staged
from .verdict import Verdict

if TYPE_CHECKING:
    from ..registry.client import RegistryClient
    from .attestation import VerdictRecord
    from .kept import Kept
    # (client, repository, digest, image id, trust) -> why refused, or None
    ScanCheck = Callable[[RegistryClient, str, str, str, Trust], "str | None"]


@dataclass(frozen=True)
class Keep:
    """attest --max-age: the age up to which a signed verdict the image carries is kept
    instead of judging the image again (kept.py), and whose signature counts."""
    max_age: float
    trust: Trust


def attest(*, image: str, options: VerifyOptions, signer: Signer, outputs: Outputs = Outputs(),
           candidates: Path | None = None, from_report: Path | None = None,
           retry_for: float = PUBLISH_DEFAULTS.retry_for, keep: Keep | None = None,
           scan_of: Callable[[str], bytes | None] = lambda _: None) -> int:
    """verify, then attach the verdict (and, when it passed, the SBOM read in the same
    probe run) next to the digest judged, signed by `signer` when it signs, with the scan
    `scan_of` gives for the image id (cosign's vuln predicate: scan/record.py's). With
    `keep`, a fresh enough signed verdict the image carries is reported instead."""
    if remote_ref(image) is None and candidates is None:
        raise UsageError(f"attest needs a registry reference, not {image!r}",
                         hint="e.g. imgkit attest registry.example.com/ml/paddle@sha256:...")
    declared = declared_file(options.checks)                 # bad file: exit 2
    if keep is not None:
        if not keep.trust.configured:
            raise UsageError("attest --max-age needs a public key (--trusted-key cosign.pub) or "
                             "a keyless identity (--certificate-identity and "
                             "--certificate-oidc-issuer): only a verdict whose signature "
                             "verifies is kept")
        if from_report is not None:
            raise UsageError("attest: --max-age keeps a verdict instead of judging, "
                             "--from-report judges one: pass one of them")
        kept = kept_verdict(image, options, candidates, keep, retry_for)
        if kept is not None:
            return written(kept.verdict, outputs, kept.subject)
    engine, subject = resolve(image, options, candidates, retry_for, hint_for(from_report))
    verdict = verdict_of(engine, subject, options, from_report, with_inventory=True,
                         declared=declared)
    verdict = named(verdict, subject)
    document = keep_ticket(verdict, options)
    if subject.remote is not None and engine is not None:    # resolve always gives attest one
        attach(engine, subject, verdict, document, signer, retry_for,
               scan_of(verdict.image_id) if signer.signs else None)
    return written(verdict, outputs, subject)


def kept_verdict(image: str, options: VerifyOptions, candidates: Path | None, keep: Keep,
                 retry_for: float) -> Kept | None:
    """The signed verdict `image` carries when it may be kept, else None, saying why."""
    from .kept import look
    ref = reference_to_judge(image, options, candidates)      # bad options: exit 2 first
    remote = remote_ref(ref)
    if remote is None:
        raise UsageError(f"attest needs a registry reference, not {ref!r}")
    found = look(remote, options, keep.trust, keep.max_age, retry_for)
    if isinstance(found, str):
        stderr_line(f"judging it now: {found}")
        return None
    stderr_line(f"kept the signed verdict {found.subject.ref} carries: judged by this imgkit "
                "with the same claims, bars and checks, and within --max-age")
    return found


def check_signed(*, image: str, trust: Trust, allow_gpu_unverified: bool = False,
                 max_age: float | None = None, candidates: Path | None = None,
                 retry_for: float = PUBLISH_DEFAULTS.retry_for,
                 scan_check: ScanCheck | None = None) -> int:
    """Whether the registry image's signed verdict lets it through (exit 0), or not (1);
    with `scan_check` (scan/attested.py's, where the project gates on scans) its signed scan
    must too."""
    if not trust.configured:
        raise UsageError("check-signed needs a public key (--trusted-key cosign.pub) or a "
                         "keyless identity (--certificate-identity and "
                         "--certificate-oidc-issuer)")
    if candidates is not None:
        image = staged(candidates, image, None)                 # not staged: exit 2
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
        if why is None and scan_check is not None:
            why = scan_check(client, remote.repository, manifest.digest, image_id, trust)
    if why is not None:
        print(f"refused: {why}")
        return EXIT_FAILED
    what = "verdict and scan are" if scan_check is not None else "verdict is"
    print(f"{remote.registry}/{remote.repository}@{manifest.digest}: a signed, passing {what} "
          f"attached for image {image_id[:19]}")
    return EXIT_OK


def sbom(*, image: str, out: Path, timeout: int) -> None:
    """Write the image's CycloneDX SBOM to `out`."""
    engine = connect()                                        # unreachable: exit 3
    document = sbom_document(engine, image, engine.known(image), timeout)
    write_output(out, document, "--out", required=True)
    if out != STDOUT:
        stderr_line(f"wrote {out}")


def attach(engine: Engine, subject: Subject, verdict: Verdict, document: VerdictRecord,
           signer: Signer, retry_for: float, scan: bytes | None = None) -> None:
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
        if scan is not None:      # the scan kept for this id travels too (what promote asks for)
            sign(engine, remote, scan, cosign.VULN_TYPE, signer)
        stderr_line(f"signed the verdict{' and the SBOM' if sbom_bytes else ''}"
                    f"{' and the scan' if scan is not None else ''} ({tag})")


def sbom_of(engine: Engine, subject: Subject, verdict: Verdict) -> bytes:
    """The SBOM from the verdict's own probe run; a report made elsewhere without the
    inventory (a Job's) has the inventory read in a throwaway container here."""
    from .sbom import sbom as sbom_json  # cyclonedx and pydantic: not on a plain verify's start-up
    facts = verdict.facts
    if facts is None or facts.inventory is None:
        return sbom_document(engine, subject.ref, subject.info)
    return sbom_json(subject.ref, subject.info.id, subject.info.labels, facts.libraries,
                     facts.inventory).encode()


def sbom_document(engine: Engine, ref: str, info: ImageInfo, timeout: int = 600) -> bytes:
    """The CycloneDX SBOM of the image `info` describes (named `ref` in it), read inside a
    throwaway container of exactly that image."""
    from .sbom import sbom as sbom_json  # cyclonedx and pydantic: not on a plain verify's start-up
    facts = inventory(engine, info, VerifyOptions(timeout=timeout), name=ref)
    if facts.inventory is None:
        raise Inconsistent(f"{ref}: the probe's inventory went missing after it was checked")
    return sbom_json(ref, info.id, info.labels, facts.libraries, facts.inventory).encode()
