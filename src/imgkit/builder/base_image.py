"""A team's own base image (`base:`), read through the engine: pulled when it is not here,
asked what it holds by a throwaway container (POSIX sh only: a base need have nothing
else), and kept in the cache by image id, so a later `imgkit list` reads no image again and
works with the engine down. given_base.py makes the answers an OS release."""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

from ..cache import cache_dir
from ..engine import Engine, RunSpec, connect
from ..errors import ContainerFailed, EngineUnavailable, HostError, ImgkitError
from ..matrix.given_base import BaseFacts, facts_from, parse_probe

# what the base holds, as key=value lines; every line may be missing
PROBE = r"""
. /etc/os-release 2>/dev/null
echo "id=$ID"; echo "like=$ID_LIKE"; echo "codename=$VERSION_CODENAME"
echo "version=$VERSION_ID"; echo "pretty=$PRETTY_NAME"
echo "glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null)"
echo "python=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)"
for f in /usr/local/cuda/lib64/lib*.so.* /usr/local/cuda/targets/*/lib/lib*.so.* \
         /usr/lib/*/libcu*.so.* /usr/lib/*/libnv*.so.* /usr/lib64/libcu*.so.*; do
  [ -e "$f" ] && echo "lib=$f"
done
exit 0
"""


def _cached(ref: str) -> Path:
    return cache_dir() / "bases" / f"{hashlib.sha256(ref.encode()).hexdigest()[:24]}.json"


def _from_cache(ref: str) -> BaseFacts | None:
    try:
        kept = json.loads(_cached(ref).read_text())
        libs = tuple((str(name), str(version)) for name, version in kept.pop("cuda_libs"))
        return BaseFacts(**kept, cuda_libs=libs)
    except (OSError, ValueError, TypeError, KeyError):
        return None                     # none yet, or written by an imgkit that read less


def _pinned(ref: str, digests: tuple[str, ...]) -> str:
    """REPO@sha256:... of the ref's repository, else the ref as written (built here)."""
    if "@" in ref:
        return ref
    last = ref.rsplit("/", 1)[-1]
    repository = ref[: len(ref) - len(last)] + last.split(":", 1)[0]
    return next((d for d in digests if d.split("@", 1)[0] == repository), ref)


def pull_base(engine: Engine, ref: str) -> None:
    """A team's own base, pulled as named (imgkit never makes one in its place)."""
    if not engine.pull(ref):
        raise HostError(f"the base {ref} is not here and could not be pulled",
                        hint="check the name, and `docker login` to its registry")


def read_base(engine: Engine, ref: str) -> BaseFacts:
    """What `ref` holds: from the cache when the engine's image is the one read before."""
    info = engine.image(ref)
    if info is None:
        pull_base(engine, ref)
        info = engine.image(ref)
        if info is None:
            raise HostError(f"{ref} was pulled, but the engine does not show it")
    cached = _from_cache(ref)
    if cached is not None and cached.image_id == info.id:
        return cached
    try:
        run = engine.run_container(RunSpec(image=ref, entrypoint=("/bin/sh", "-c"),
                                           command=(PROBE,), timeout=120, memory="512m",
                                           stdout_limit=64 << 10))
    except ContainerFailed as exc:
        raise HostError(f"could not look inside the base {ref}: {exc.message}",
                        hint="a base needs /bin/sh") from None
    if run.exit_code != 0:
        raise HostError(f"looking inside the base {ref} failed (exit {run.exit_code}): "
                        f"{run.stderr.strip()[-300:]}")
    facts = facts_from(ref, _pinned(ref, info.digests), info.id, dict(info.env),
                       parse_probe(run.stdout))
    path = _cached(ref)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(facts), indent=2))
    return facts


def read_bases(refs: list[str]) -> dict[str, BaseFacts | ImgkitError]:
    """Each base's facts, or why they could not be read. With no engine, what the cache
    holds (as read last time)."""
    try:
        engine: Engine | None = connect()
    except EngineUnavailable as exc:
        engine, down = None, exc
    found: dict[str, BaseFacts | ImgkitError] = {}
    for ref in refs:
        if engine is None:
            found[ref] = _from_cache(ref) or EngineUnavailable(
                f"cannot read what {ref} holds: {down.message}",
                hint="start the Docker engine once: imgkit reads a base and keeps what it found")
            continue
        try:
            found[ref] = read_base(engine, ref)
        except ImgkitError as exc:
            found[ref] = exc
    return found
