"""`imgkit site`: read the verdicts, lay out the grid, write the pages."""
from __future__ import annotations

from pathlib import Path

from ..console import stderr_line
from ..errors import UsageError
from ..matrix.load import load_plan
from ..matrix.targets import Plan
from ..options import Trust
from ..outputs import output_folder
from ..registry.destination import Destination
from ..selection import Selection
from .grid import rows
from .inputs import Found, OutdatedRecord, from_record, read_outdated, read_verdicts
from .pages import write_site
from .scans import ScanView
from .signatures import Signed, signer


def site(selection: Selection, *, verdicts: Path | None, out: Path,
         outdated: Path | None = None, registry: Destination | None = None,
         trust: Trust = Trust()) -> int:
    """The site of the selection's images from the verify --json files under `verdicts`
    (a file that cannot be read is named and left out, never counted as a pass), or else
    from the verdicts this machine recorded; with `outdated`, what waits for each image;
    with `registry`, whether each promoted image there carries a signed, passing verdict
    that verifies against `trust`."""
    _refuse_mistakes(verdicts, out, outdated, registry, trust)     # before any verdict is read
    plan = load_plan(selection)
    found, skipped = read_verdicts(verdicts) if verdicts is not None else recorded(plan)
    waiting: list[OutdatedRecord] | None = None
    if outdated is not None:
        waiting, unread = read_outdated(outdated)
        skipped = [*skipped, *unread]
    for line in skipped:
        stderr_line(f"skipped {line}")
    from .images import image_facts
    from .locks import lock_views
    locks, unread_locks = lock_views(selection.images, plan)
    skipped = [*skipped, *unread_locks]
    locked = any(view.state != "no lock" for view in locks.values())   # a matrix that locks
    signed = None
    if registry is not None:
        from ..project import scan_required
        from .signatures import read
        signed = read(plan, registry, trust, scans=scan_required())
    scans = _scans(found, signed)
    laid_out = rows(plan, found, image_facts(plan), waiting, locks if locked else None, signed,
                    scans)
    written = write_site(out, laid_out, verdicts=len(found), skipped=skipped,
                         outdated=outdated is not None, locked=locked,
                         signer=signer(trust) if registry is not None else "")
    where = f"{len(found)} verdict file(s)" if verdicts is not None else \
        f"{len(found)} verdict(s) recorded here"
    stderr_line(f"wrote {len(written)} pages to {out} ({len(laid_out)} images, {where}); "
                f"open {out / 'index.html'}")
    return 0


def _refuse_mistakes(verdicts: Path | None, out: Path, outdated: Path | None,
                     registry: Destination | None, trust: Trust) -> None:
    """The arguments' mistakes, exit 2 before anything is read or written."""
    if verdicts is not None and not verdicts.is_dir():
        raise UsageError(f"--verdicts {verdicts}: no such folder",
                         hint="give the folder the `imgkit verify --json FILE` files are in")
    output_folder(out, "--out")
    if outdated is not None and not outdated.is_file():
        raise UsageError(f"--outdated {outdated}: no such file",
                         hint="give the file `imgkit outdated --json FILE` wrote")
    if registry is not None and not trust.configured:
        raise UsageError(f"--registry {registry} needs the signer to trust: --trusted-key "
                         "cosign.pub, or --certificate-identity and --certificate-oidc-issuer",
                         hint="the key or identity promote checks the verdicts with")
    if registry is None and trust.configured:
        raise UsageError("--trusted-key and --certificate-identity say whose signature a "
                         "verdict in the registry needs: give the registry with --registry")


def _scans(found: list[Found], signed: dict[tuple[str, str], Signed] | None) -> dict[str, ScanView]:
    """image id -> the scan its page shows: production's signed one, else one kept here."""
    from .scans import kept_scans
    scans = kept_scans({f.verdict.image_id for f in found})
    for mark in (signed or {}).values():
        if mark.scan is not None:
            scans[mark.scan[0]] = mark.scan[1]
    return scans


def recorded(plan: Plan) -> tuple[list[Found], list[str]]:
    """Each image's verdict as publishing would see it: the one recorded for the image id
    its tag points at now in the engine (a tag rebuilt since its verify has none), and the
    verdicts of the ids it pointed at before, as its history. Each verify keeps its whole
    verdict beside the ticket; a ticket from before that shows its checks alone."""
    from dataclasses import replace

    from ..engine import connect
    from ..verify import tickets
    from .grid import is_of
    engine = connect()
    folder = tickets.file_folder()
    files, skipped = read_verdicts(folder) if folder.is_dir() else ([], [])
    found = []
    for target in plan.targets:
        info = engine.image(target.tag)
        now = info.id if info is not None else None
        mine = [f for f in files if is_of(f.verdict, target.tag)]
        found += [replace(f, stale=f.verdict.image_id != now) for f in mine]
        if info is None or any(f.verdict.image_id == now for f in mine):
            continue
        record = tickets.document(info.id)
        if record is not None:
            found.append(Found(from_record(record, info.platform, info.size), tickets.path_of(info.id),
                               record.recorded_at))
    return found, skipped
