"""`imgkit lock`: resolve every image of the selection to exact versions with hashes and
write one lock per image; `--check`: exit 1 naming each image whose lock is missing or no
longer what the matrix says; `--check --resolve`: also resolve again, write nothing, and
exit 1 naming what moved on the index or the mirror since the locks were written.
`imgkit outdated`: what waits for an image that its lock does not hold yet (outdated.py)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from .. import labels, platforms
from ..console import Activity, stderr_line
from ..engine import Engine
from ..errors import EXIT_FAILED, EXIT_OK, SpecError, UsageError
from ..matrix.compat import OsRelease
from ..matrix.extension import canonical
from ..matrix.load import load_plan
from ..matrix.plan import Plan, Target, lineage
from ..matrix.targets import given_base
from ..outputs import write_output
from ..project import setting_or
from ..selection import Selection
from .apt import simulate
from .files import (
    Pinned,
    apt_pins,
    apt_requests,
    inputs_digest,
    lock_path,
    lock_states,
    parse_lock,
    render_lock,
    requirements,
    root_of,
)
from .resolve import NoSuchVersion, nearest, resolve


def check_locks(selection: Selection) -> int:
    plan = load_plan(selection)
    states = lock_states(selection.images, plan)
    bad = [s for s in states if s.problem]
    for state in bad:
        stderr_line(f"{state.tag}: {state.problem} ({state.path})")
    stderr_line(f"imgkit lock --check: {len(states) - len(bad)} of {len(states)} locks "
                "match the matrix" + ("; run `imgkit lock` and review the diff" if bad else ""))
    return EXIT_FAILED if bad else EXIT_OK


MakeBase = Callable[[Engine, str, OsRelease], object]


def lock_command(selection: Selection, *, check: bool = False, resolve: bool = False,
                 index_url: str | None = None, make_base: MakeBase | None = None) -> int:
    """`imgkit lock`: write the locks; with `check`, compare them with the matrix (and
    with `resolve`, with what resolving again gives) and write nothing."""
    if resolve and not check:
        raise UsageError("--resolve says what --check looks at", hint="add --check")
    if check and not resolve:
        return check_locks(selection)
    return lock(selection, index_url=index_url, write=not check, make_base=make_base)


def lock(selection: Selection, *, index_url: str | None = None, write: bool = True,
         make_base: MakeBase | None = None) -> int:
    """Parents first, so each image is resolved on top of its parents' pins. `write=False`:
    the locks must match the matrix, and resolving again must give them back. `make_base`
    (the builder's): makes a base that is not here, as a build would."""
    if not write and check_locks(selection) != EXIT_OK:
        return EXIT_FAILED
    plan = load_plan(selection)
    indexes = (index_url, setting_or(None, "extra_index_url"))   # and the project's second
    apt = resolve_apt(plan, make_base)                        # the engine and the mirror
    by_tag = {t.tag: t for t in plan.targets}
    made: dict[str, bytes] = {}
    pins: dict[str, list[Pinned]] = {}
    moved: list[str] = []
    for target in plan.targets:
        wanted = requirements(target)
        if not (wanted or apt_requests(target)):
            continue
        glibc = _glibc(target, plan)
        pinned: list[Pinned] = []
        if wanted:
            below = [p for t in list(lineage(target, by_tag))[1:]
                     for p in pins.get(t.tag, _locked(selection, t.tag))]
            pinned = _shown_resolving(selection.images, target, wanted, below, glibc, indexes)
        pins[target.tag] = pinned
        # the inputs digest is of the parent's lock as written: this run's or the file
        parent_lock = made.get(target.parent or "") or _file(selection, target.parent)
        text = render_lock(target, inputs_digest(target, plan, parent_lock), pinned, glibc,
                           apt.get(target.tag), base=given_base(target, plan))
        path = lock_path(selection.images, target.tag)
        old = path.read_bytes() if path.is_file() else None
        made[target.tag] = text.encode()
        if not write:
            if old != text.encode():
                moved.append(target.tag)
                stderr_line(f"{target.tag}: {what_moved(old, text)} ({path})")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        state = "unchanged" if old == text.encode() else ("written" if old is None else "changed")
        debs = len(apt.get(target.tag, {}))
        stderr_line(f"{state} {path} ({len(pinned)} distribution{'s' if len(pinned) != 1 else ''}, "
                    f"{debs} apt package{'s' if debs != 1 else ''})")
    if write:
        return EXIT_OK
    stderr_line(f"imgkit lock --check --resolve: {len(made) - len(moved)} of {len(made)} "
                "locks resolve as written" + ("; run `imgkit lock` and review the diff"
                                                     if moved else ""))
    return EXIT_FAILED if moved else EXIT_OK


def _shown_resolving(images: Path, target: Target, wanted: tuple[str, ...], below: list[Pinned],
                     glibc: str, indexes: tuple[str | None, str | None]) -> list[Pinned]:
    """_resolved, with the image and how long pip's resolver has taken shown in a terminal;
    a pin the index has no such version of said at its line in `images`, where it has one."""
    with Activity() as shown:
        shown.start(target.tag, f"pip's resolver: {len(wanted)} requirements on {len(below)} "
                                "pins below")
        try:
            return _resolved(target, wanted, below, glibc, indexes)
        except NoSuchVersion as exc:
            raise _at_the_pin(images, target, exc) from None


def _resolved(target: Target, wanted: tuple[str, ...], below: list[Pinned], glibc: str,
              indexes: tuple[str | None, str | None]) -> list[Pinned]:
    """The image's pins, resolved for each of its platforms on its parents' (`below`),
    from the index and the extra index."""
    index_url, extra_index_url = indexes
    return _merged(target, [resolve(wanted, [p for p in below if _applies(p, platform)],
                                    python=target.python, platform=platform, glibc=glibc,
                                    index_url=index_url, extra_index_url=extra_index_url,
                                    what=target.tag, whose=_whose(target))
                            for platform in target.platforms])


def _at_the_pin(images: Path, target: Target, exc: NoSuchVersion) -> Exception:
    """A pin the index has no such version of, said at its line in the family file that
    wrote it (a framework's own pins, from the compat data, have none: said as pip said)."""
    from ..matrix.spec import read_matrix
    from ..yamlload import read_with_lines
    asked = _named(exc.requirement)
    family = next((f for f in read_matrix(images).spec.families if f.name == target.family),
                  None)
    pins = (family.extension.pip if family.extension else family.pip) if family else ()
    written = [(i, pin) for i, pin in enumerate(pins) if _named(pin) == asked]
    if family is None or not written or target.layer not in ("framework", "extension"):
        return exc
    index, pin = written[0]
    _, lines = read_with_lines(Path(family.file))
    return SpecError(family.file, f"pip[{index}]", f"{pin}: the package index has no such "
                     f"version for CPython {target.python} ({target.tag})",
                     hint=nearest(pin, exc.versions) + f"; `pip index versions {asked}` "
                     "lists them all", line=lines.get(("pip", index)))


def _named(requirement: str) -> str:
    """The distribution a requirement names, as pip compares names (`Foo_Bar[x]>=1`: foo-bar)."""
    return canonical(re.split(r"[=<>!~ \[;]", requirement.strip(), maxsplit=1)[0])


def _whose(target: Target) -> str:
    """Where an image's pip pins were written, as a lock's failure names it."""
    if target.layer in ("framework", "extension"):
        return f"family {target.family}'s (its pip: list, and the framework's compat entry)"
    return f"the compat data's for CUDA {target.cuda} ({target.layer} layer)"


def what_moved(old: bytes | None, new: str) -> str:
    """What a fresh resolution changed in a lock, in a line: versions, new and dropped
    distributions and apt packages, files whose hashes changed."""
    if old is None:
        return "no lock"
    before_pins, after_pins = parse_lock("", old.decode())[1], parse_lock("", new)[1]
    before = {canonical(p.name): (p.version, p.hashes) for p in before_pins}
    after = {canonical(p.name): (p.version, p.hashes) for p in after_pins}
    before.update({f"apt {n}": (v, ()) for n, _, v in
                   (a.partition("=") for a in apt_pins(old.decode()))})
    after.update({f"apt {n}": (v, ()) for n, _, v in (a.partition("=") for a in apt_pins(new))})
    changes = []
    for name in sorted(before.keys() | after.keys()):
        was, now = before.get(name), after.get(name)
        if was is None and now is not None:
            changes.append(f"+{name} {now[0]}")
        elif now is None and was is not None:
            changes.append(f"-{name} {was[0]}")
        elif was is not None and now is not None and was[0] != now[0]:
            changes.append(f"{name} {was[0]} -> {now[0]}")
        elif was != now:
            changes.append(f"{name} {now[0] if now else ''}: other files (hashes)")
    return ("moved: " + ", ".join(changes)) if changes else "moved: its parent's lock moved"


def resolve_apt(plan: Plan, make_base: MakeBase | None = None) -> dict[str, dict[str, str]]:
    """Each image's own apt pins (what its apt step installs or upgrades on top of what its
    parents' steps did), resolved on its base, one container per base."""
    from ..engine import connect
    wanting = [t for t in plan.targets if apt_requests(t)]
    if not wanting:
        return {}
    engine = connect()                                        # unreachable: exit 3
    by_base: dict[str, list[Target]] = {}
    for target in wanting:
        root = root_of(target, plan)
        if root.base is None or root.os_release is None:
            continue
        if engine.image(root.base) is None:     # a fresh CI runner has none: made as a build would
            if make_base is None:
                raise UsageError(f"{target.tag}: its base {root.base} is not here; apt resolves "
                                 "against it", hint=f"make it with `imgkit build --only "
                                                    f"'{root.tag}'`, or pull and tag one")
            make_base(engine, root.base, root.os_release)
        by_base.setdefault(root.base, []).append(target)
    out: dict[str, dict[str, str]] = {}
    by_tag = {t.tag: t for t in plan.targets}
    for base, targets in by_base.items():
        chains = [[t for t in reversed(list(lineage(target, by_tag))) if apt_requests(t)]
                  for target in targets]
        requests = [[p for t in chain for p in apt_requests(t)] for chain in chains]
        for target, chain, found in zip(targets, chains, simulate(engine, base, requests)):
            below = {tag: v for t in chain[:-1] for tag, v in out.get(t.tag, {}).items()}
            out[target.tag] = {name: v for name, v in found.items() if name not in below}
    return out


def _file(selection: Selection, tag: str | None) -> bytes | None:
    if tag is None:
        return None
    path = lock_path(selection.images, tag)
    return path.read_bytes() if path.is_file() else None


def _locked(selection: Selection, tag: str) -> list[Pinned]:
    """An ancestor outside this run: its lock file's pins, if it has one."""
    content = _file(selection, tag)
    return parse_lock(str(lock_path(selection.images, tag)), content.decode())[1] if content else []


def _glibc(target: Target, plan: Plan) -> str:
    root = root_of(target, plan)
    if root.os_release is None or root.os_release.glibc is None:
        raise UsageError(f"{target.tag}: the compat data gives {target.os} no glibc",
                         hint=f"add glibc: \"2.NN\" to os.{target.os} in your compat.yaml")
    return root.os_release.glibc


def _applies(pin: Pinned, platform: str) -> bool:
    return not pin.marker or f'"{platforms.machine(platform)}"' in pin.marker


def _merged(target: Target, per_platform: list[list[Pinned]]) -> list[Pinned]:
    """One platform: its pins. Several: one version per distribution for all of them (else
    the image is not one stack), hashes of every platform's files, and a marker on what only
    some platforms need."""
    if len(per_platform) == 1:
        return per_platform[0]
    found: dict[str, dict[str, Pinned]] = {}
    for platform, pinned in zip(target.platforms, per_platform):
        for pin in pinned:
            found.setdefault(canonical(pin.name), {})[platform] = pin
    out = []
    for name, by_platform in sorted(found.items()):
        versions = {p.version for p in by_platform.values()}
        if len(versions) > 1:
            raise UsageError(f"{target.tag}: {name} resolves to "
                             + ", ".join(f"{p.version} on {pl}" for pl, p in by_platform.items())
                             + ": one tag cannot name both", hint="pin it in the family")
        first = next(iter(by_platform.values()))
        hashes = tuple(sorted({h for p in by_platform.values() for h in p.hashes}))
        marker = "" if len(by_platform) == len(target.platforms) else " or ".join(
            f'platform_machine == "{platforms.machine(pl)}"' for pl in sorted(by_platform))
        out.append(Pinned(first.name, first.version, hashes, marker))
    return out



def outdated(*, images: list[str], selection: Selection, json_file: Path | None = None,
             index_url: str | None = None, pip: bool = True) -> int:
    """What waits for each image; exit 1 when security updates do. No image named: the
    images the matrix (selection) names that are here."""
    import datetime as dt

    from ..engine import connect
    from . import outdated as waiting
    engine = connect()                                        # unreachable: exit 3
    if not images:
        images = [t for t in load_plan(selection).finals if engine.image(t) is not None]
        if not images:
            raise UsageError("none of the matrix's images is here", hint="build them, or name TAGs")
    found = []
    today = dt.datetime.now(dt.timezone.utc).date()
    for ref in images:
        info = engine.known(ref)
        apt, dists = waiting.ask_image(engine, info.id)
        result = waiting.Outdated(ref, apt)
        if pip:
            result.pip = waiting.patch_releases(dists, index_url)
        result.base_created, result.base_days = waiting.base_age(engine, info.id, today)
        result.base_release = info.labels.get(labels.BASE_RELEASE_DATE, "")
        found.append(result)
        print(waiting.outdated_line(result), flush=True)
    if json_file is not None:
        write_output(json_file, waiting.outdated_json(found), "--json")
    return EXIT_FAILED if any(r.security for r in found) else EXIT_OK
