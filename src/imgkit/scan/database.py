"""`imgkit scan --update-db`: osv.dev's advisory zips fetched into the database folder, in
the layout osv-scanner reads (DIR/osv-scalibr/<Ecosystem>/all.zip), each one only when the
copy there is missing or older than a day (osv.dev rebuilds them daily). A zip is written
whole or not at all: a download that fails leaves the copy before it."""
from __future__ import annotations

import os
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable, Iterable

from ..errors import HostError
from .scanner import DB_HOST, DB_LAYOUT

SOURCE_ENV = "IMGKIT_OSV_SOURCE"     # a mirror of osv.dev's bucket (its <Ecosystem>/all.zip)
FRESH_FOR = 86400.0
TIMEOUT = 120
# which osv.dev ecosystem holds the advisories of a distribution imgkit builds on
DISTRO_ECOSYSTEMS = {"debian": "Debian", "ubuntu": "Ubuntu"}


def ecosystems_for(distros: Iterable[str]) -> tuple[str, ...]:
    """PyPI (every image's venv) and the ecosystem of each distribution the images stand on
    (Debian when none is known)."""
    found = {DISTRO_ECOSYSTEMS[d] for d in distros if d in DISTRO_ECOSYSTEMS} or {"Debian"}
    return ("PyPI", *sorted(found))


def update(db: Path, ecosystems: Iterable[str], *, log: Callable[[str], None],
           now: float | None = None) -> list[str]:
    """Fetch each ecosystem's zip that `db` lacks or holds from more than a day ago; the
    ecosystems fetched. No answer from the source is exit 3, naming it."""
    source = os.environ.get(SOURCE_ENV, DB_HOST).rstrip("/")
    when = time.time() if now is None else now
    fetched = []
    for ecosystem in ecosystems:
        target = db / DB_LAYOUT / ecosystem / "all.zip"
        if target.is_file() and when - target.stat().st_mtime < FRESH_FOR:
            continue
        url = f"{source}/{ecosystem}/all.zip"
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name("all.zip.part")
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT) as answer, part.open("wb") as out:
                while block := answer.read(1 << 20):
                    out.write(block)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            part.unlink(missing_ok=True)
            raise HostError(f"could not fetch {ecosystem}'s advisories from {url}: {exc}",
                            hint=f"where this machine has no way out, copy the zips into {db} "
                                 "(docs/vulnerabilities.md)") from None
        part.replace(target)
        log(f"advisories: {ecosystem} fetched from {url} ({target.stat().st_size // 1024} KB)")
        fetched.append(ecosystem)
    return fetched
