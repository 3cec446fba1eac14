"""Versions compared as versions (packaging), on the host side. The probe stays stdlib-only
and reports strings; this is where they are judged."""
from __future__ import annotations

from packaging.version import InvalidVersion, Version


def parse(text: str) -> Version | None:
    try:
        return Version(text)
    except (InvalidVersion, TypeError):
        return None


def in_series(measured: str, expected: str) -> bool:
    """Whether `measured` is the version `expected` names, to the precision it names:
    '8.6.0' is in '8', '8.6', '8.6.0' and a label's '8.6.0.163'; '2.6.20' is not in '2.6.2';
    '2.5.1+cu124' is in '2.5.1', and in '2.5.1+cu124' but not in '2.5.1+cu121'."""
    m, e = parse(measured), parse(expected)
    if m is None or e is None:
        return measured.strip() == expected.strip()
    if e.local is not None and m.local != e.local:
        return False
    width = min(len(m.release), len(e.release))
    return m.release[:width] == e.release[:width]


def at_least(version: str, floor: str) -> bool:
    v, f = parse(version), parse(floor)
    return v is not None and f is not None and v >= f


def major(text: str) -> int | None:
    v = parse(text)
    return v.major if v is not None else None


def major_minor(text: str) -> str | None:
    v = parse(text)
    return f"{v.major}.{v.minor}" if v is not None else None


def releases_around(asked: str, offered: list[str]) -> tuple[Version | None, Version | None]:
    """(the newest release at or below `asked`, the newest release of all) among the versions
    `offered`, pre- and dev releases left out; None where there is none (or `asked` is not a
    version)."""
    releases = [v for v in map(parse, offered)
                if v is not None and not v.is_prerelease and not v.is_devrelease]
    newest = max(releases, default=None)
    wanted = parse(asked)
    below = max((v for v in releases if v <= wanted), default=None) if wanted else None
    return below, newest
