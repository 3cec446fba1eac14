"""Which image a verify judges, looked up once: a local image, a staged candidate, or a
registry reference pulled by digest (or, with no engine, read from its registry)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..engine import Engine, ImageInfo, connect
from ..errors import EXIT_FAILED, EngineUnavailable, HostError, RegistryError
from ..options import VerifyOptions
from ..registry.reference import RemoteRef, remote_ref
from .expect import check_gpus, parse_expect_options
from .run import BUILD_HINT, REPORT_HINT


@dataclass(frozen=True)
class Subject:
    """The image judged: how the engine names it, what the engine said of it (asked once),
    and the registry digest it was pulled by (None for a local image)."""
    ref: str
    info: ImageInfo
    remote: RemoteRef | None = None
    in_engine: bool = True     # False: `info` is the registry's (its size is compressed bytes)


def staged(candidates: Path, image: str, platform: str | None) -> str:
    """The digest an earlier job staged for the matrix's tag `image` (not staged: exit 2).
    The candidates are read with pydantic, whose import a plain verify does not pay."""
    from ..registry.candidates import lookup
    return lookup(candidates, image, platform).reference


def reference_to_judge(image: str, options: VerifyOptions, candidates: Path | None) -> str:
    """The reference to judge: a staged candidate's digest, else `image`; bad options are
    refused first (exit 2), before any registry or engine is asked."""
    check_gpus(options.gpus)                                  # bad --gpus: exit 2 first
    parse_expect_options(options.expect)                      # bad --expect: exit 2 first
    if candidates is not None:
        return staged(candidates, image, options.platform)      # not staged: exit 2
    return image


def resolve(image: str, options: VerifyOptions, candidates: Path | None, retry_for: float,
            missing_hint: str = BUILD_HINT, engine_optional: bool = False,
            ) -> tuple[Engine | None, Subject]:
    """The image to judge, looked up once: a staged candidate or a registry reference is
    pulled by digest first. Bad options are refused before the engine is asked; a local
    image the engine lacks is refused with `missing_hint`. `engine_optional` (a report
    judged elsewhere): with no engine, a registry reference is read from the registry."""
    image = reference_to_judge(image, options, candidates)
    remote = remote_ref(image)
    try:
        engine = connect()
    except EngineUnavailable:
        if not engine_optional or remote is None:
            raise
        return None, from_registry(remote, options, retry_for)
    if remote is None:
        return engine, Subject(image, engine.known(image, missing_hint))
    from ..registry.remote import fetch_or_host_fault  # requests and the registry client: only here
    remote, info = fetch_or_host_fault(        # the registry failing: no verdict, exit 3
        engine, remote, retry_for=retry_for, platform=options.platform,
        hint="the registry kept failing; try again later or give it more --retry-for")
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
