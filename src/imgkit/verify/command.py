"""`imgkit verify` and `imgkit judge`: judge one image (local, or by registry digest) from
a probe run here or from a report made elsewhere, and keep the verdict as the ticket of the
image id judged. Attaching verdicts and reading signed ones is attach.py's.

Each walks downhill: resolve the image (subject.py: one look-up, a pull by digest for a
registry reference), run the probe once (or read the report), judge, keep the ticket,
write what was asked for."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .. import labels
from ..console import Activity, print_warning, stderr_line
from ..engine import Engine
from ..errors import EXIT_FAILED, EXIT_HOST, EXIT_OK, HostError, Inconsistent, UsageError
from ..options import PUBLISH_DEFAULTS, VerifyOptions
from .run import judge_report
from .run import verify as run_verify
from .subject import Subject, hint_for, resolve
from .verdict import Verdict

if TYPE_CHECKING:
    from ..matrix.checkfile import CheckFile
    from .attestation import VerdictRecord


@dataclass(frozen=True)
class Outputs:
    """The files a verdict is also written to (whatever it says)."""
    json: Path | None = None
    junit: Path | None = None
    markdown: Path | None = None
    metrics: str | None = None      # a file (Prometheus' text format) or a Pushgateway's URL


def verify(*, image: str, options: VerifyOptions, outputs: Outputs = Outputs(),
           retry_for: float = PUBLISH_DEFAULTS.retry_for) -> int:
    """Run the probe in a container of `image` (a registry reference is pulled by digest
    first), judge it and keep the verdict as its ticket; every output asked for is written
    whatever the verdict."""
    declared = declared_file(options.checks)                 # bad file: exit 2, first
    engine, subject = resolve(image, options, None, retry_for)
    if declared is None:                        # inside its project: its family's checks
        found = project_checks(subject)
        options = replace(options, checks=found) if found is not None else options
        declared = declared_file(found)
    # a verdict file lists what is installed (read beside the frameworks' import), so that
    # `imgkit site` can say which packages moved between two of them
    verdict = verdict_of(engine, subject, options, None, declared=declared,
                         with_inventory=outputs.json is not None)
    verdict = named(verdict, subject)
    keep_ticket_or_say(verdict, options)
    return written(verdict, outputs, subject)


def judge(*, image: str, report_file: Path, options: VerifyOptions, outputs: Outputs = Outputs(),
          retry_for: float = PUBLISH_DEFAULTS.retry_for, reference: Path | None = None,
          margin: float = 0.1) -> int:
    """Judge the probe's report in `report_file` (a Kubernetes Job's log) as verify would,
    running no probe, and keep the verdict as the image's ticket. With `reference` (a fleet
    check), the report is also held to that verdict's numbers, within `margin`."""
    declared = declared_file(options.checks)                 # bad file: exit 2
    held_to = None
    if reference is not None:
        from .fleet import read_reference
        held_to = read_reference(reference)                   # bad file: exit 2
    engine, subject = resolve(image, options, None, retry_for, hint_for(report_file),
                              engine_optional=declared is None)
    verdict = verdict_of(engine, subject, options, report_file, declared=declared)
    if held_to is not None:
        from .fleet import fleet_checks
        verdict = replace(verdict, checks=verdict.checks + tuple(fleet_checks(
            verdict, held_to, margin)))
    verdict = named(verdict, subject)
    keep_ticket_or_say(verdict, options)
    return written(verdict, outputs, subject)


def project_checks(subject: Subject) -> Path | None:
    """The check file the project's family of this image names, when verify runs inside
    the project that declares it (the family an image carries is its label): the checks
    its CI verify job judges. Said on stderr, so that a run never judges them unseen."""
    family = subject.info.labels.get(labels.FAMILY)
    if not family:
        return None
    from ..matrix.family_checks import family_checks
    from ..project import selection_from
    found = family_checks(selection_from().images, family)
    if found is not None:
        stderr_line(f"judging {found} too: the checks family {family} declares "
                    "(--checks FILE judges another file instead)")
    return found


# The team's checks are read with pydantic models, whose import and schema building cost a
# plain verify (the command CI runs most) about a tenth of a second: imported only when
# asked for.
def declared_file(path: Path | None) -> CheckFile | None:
    if path is None:
        return None
    from ..matrix.checkfile import load_checks
    return load_checks(path)


def verdict_of(engine: Engine | None, subject: Subject, options: VerifyOptions,
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
            from .declared.in_probe import extra_seconds, probe_environment
            gpu = options.gpus != "none"
            riders = probe_environment(declared, gpu=gpu, timeout=options.timeout)
            probe_options = replace(options, timeout=options.timeout + extra_seconds(
                declared, gpu=gpu, timeout=options.timeout))
        with Activity() as shown:        # in a terminal: the probe's time while it runs
            shown.start(subject.ref, "the probe runs in a container of it" + (
                "" if options.gpus == "none" else ", on the GPU"))
            verdict = run_verify(engine, subject.ref, probe_options, info=subject.info,
                                 with_inventory=with_inventory, environment=riders)
    if declared is not None and engine is not None:
        from .declared.checks import with_declared
        verdict = with_declared(engine, verdict, declared, options.timeout)
    return verdict


def keep_ticket_or_say(verdict: Verdict, options: VerifyOptions) -> None:
    """keep_ticket, where a cache this user cannot write is a warning: the verdict stands,
    and is printed and written all the same (a judge in a locked-down pod)."""
    try:
        keep_ticket(verdict, options)
    except HostError as exc:
        print_warning(f"not recorded as the ticket of {verdict.image_id[:19]}: {exc.message}",
                      exc.hint)


def keep_ticket(verdict: Verdict, options: VerifyOptions) -> VerdictRecord:
    """Record the verdict as the ticket of the image id judged (what publish gates on);
    the ticket document, as it is attached."""
    from . import report, tickets  # pydantic's models: imported while the probe ran
    from .kept import judged_by
    expect = options.expect
    document = tickets.make_document(verdict, expect, judged_by(options))  # as this run judged
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


def named(verdict: Verdict, subject: Subject) -> Verdict:
    """The verdict with what the image is called by its own label and how big it is
    unpacked (what a site shows of it, whatever reference verify was given)."""
    return replace(verdict, title=subject.info.labels.get(labels.TAG, ""),
                   size=subject.info.size if subject.in_engine else None)


def written(verdict: Verdict, outputs: Outputs, subject: Subject) -> int:
    """Print the verdict and write the files asked for; the exit code it means."""
    from . import report
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


def report_text(path: Path) -> str:
    """A Job's log: the probe's framed report, with whatever else the image printed."""
    try:
        return path.read_text(errors="replace")
    except OSError as exc:
        raise UsageError(f"report {path}: {exc.strerror}")
