"""One error hierarchy for imgkit. Each error carries its evidence and its exit code.

Exit codes: 0 ok, 1 the image (or a build) failed, 2 bad input/usage, 3 the host cannot
do the job (no engine, no NVIDIA runtime, driver too old), 130 interrupted.
"""
from __future__ import annotations

from typing import Sequence

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_HOST = 3
EXIT_INTERRUPTED = 130


def first_line(exc: BaseException) -> str:
    """An exception's first line of text (its type's name when it has none), for messages."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class ImgkitError(Exception):
    """Base of every error imgkit reports to a user (never shown as a traceback)."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class SpecError(ImgkitError):
    """A file of the user's (a family file, a check file, a settings table) is malformed or
    a value is not allowed; names file, line and key."""

    exit_code = EXIT_USAGE

    def __init__(self, file: str, key: str, reason: str, *, hint: str = "",
                 line: int | None = None) -> None:
        super().__init__(f"{file}{f':{line}' if line else ''}: {key}: {reason}", hint=hint)
        self.file = file
        self.key = key
        self.reason = reason
        self.line = line


class SpecErrors(SpecError):
    """Every problem found in the user's files, reported at once (file, line, key, hint);
    as a SpecError it is the first of them."""

    def __init__(self, problems: Sequence[SpecError]) -> None:
        first = problems[0]
        super().__init__(first.file, first.key, first.reason, hint=first.hint, line=first.line)
        files = len({p.file for p in problems})
        self.problems = tuple(problems)
        self.message = (f"{len(problems)} problems in {files} "
                        f"file{'s' if files > 1 else ''}:\n"
                        + "\n".join(f"  {p.message}" + (f"\n      hint: {p.hint}" if p.hint else "")
                                    for p in problems))
        self.hint = ""


def every_problem(problems: Sequence[SpecError]) -> SpecError:
    """One error for one problem, else all of them at once."""
    return problems[0] if len(problems) == 1 else SpecErrors(problems)


class CompatError(ImgkitError):
    """A combination that is known not to work (or is unknown), with what would work."""

    exit_code = EXIT_USAGE


class CompatErrors(CompatError):
    """Every problem of one matrix point, found at once (a python the OS lacks and a
    framework built for another CUDA); as a CompatError it is the first of them."""

    def __init__(self, problems: Sequence[CompatError]) -> None:
        super().__init__(problems[0].message, hint=problems[0].hint)
        self.problems = tuple(problems)


def every_incompatibility(problems: Sequence[CompatError]) -> CompatError:
    """One error for one problem of a point, else all of them at once."""
    return problems[0] if len(problems) == 1 else CompatErrors(problems)


class UsageError(ImgkitError):
    exit_code = EXIT_USAGE


class Inconsistent(ImgkitError):
    """Something imgkit's own code guarantees did not hold: a bug in imgkit, reported with
    what was found instead of a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(message, hint="this is a bug in imgkit: please report it with the "
                                       "command that was run")


class ImageError(ImgkitError):
    """The image itself cannot do what was asked (its probe cannot run or report)."""

    exit_code = EXIT_FAILED


class EngineUnavailable(ImgkitError):
    """The Docker engine cannot be reached."""

    exit_code = EXIT_HOST


class HostError(ImgkitError):
    """The host cannot run the job (no NVIDIA runtime, driver too old, no debootstrap...)."""

    exit_code = EXIT_HOST


class BuildFailed(ImgkitError):
    """One image failed to build: which image, which step, the last log lines, and the
    images its steps made (to be removed: no <none> image is left behind)."""

    def __init__(self, tag: str, step: str, reason: str, log_tail: list[str],
                 images: tuple[str, ...] = (), hint: str = "") -> None:
        super().__init__(f"{tag}: {step}: {reason}", hint=hint)
        self.tag = tag
        self.step = step
        self.reason = reason
        self.log_tail = log_tail
        self.images = images


class RegistryError(ImgkitError):
    """A registry refused or failed an operation; `transient` when trying again may help
    (connection reset, 5xx, 429, an upload the registry forgot)."""

    def __init__(self, registry: str, message: str, *, transient: bool = False,
                 hint: str = "") -> None:
        super().__init__(f"{registry}: {message}", hint=hint)
        self.registry = registry
        self.transient = transient


class RegistryAuthError(RegistryError):
    """The registry refused our credentials (401/403/denied): retrying cannot help."""

    exit_code = EXIT_HOST

    def __init__(self, registry: str, message: str) -> None:
        super().__init__(registry, message,
                         hint=f"log in with `docker login {registry}` (`podman login` when the "
                              "engine is Podman): imgkit reads Docker's config and its credential "
                              "helpers, and on Podman its auth file first")


class Cancelled(ImgkitError):
    """The build was stopped on request (Ctrl-C); carries the images its steps made."""

    def __init__(self, message: str, images: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.images = images


class ContainerFailed(ImgkitError):
    """The engine refused to create or start a container; carries its explanation."""

    def __init__(self, explanation: str) -> None:
        super().__init__(f"the container could not start: {explanation.strip()[:300]}")
        self.explanation = explanation


class RegistryUnreachable(RegistryError):
    """Nothing answers at the registry's address (connection refused, a name that does not
    resolve): no retry can help, and the host is what must change."""

    exit_code = EXIT_HOST

    def __init__(self, registry: str, reason: str) -> None:
        super().__init__(registry, f"cannot connect: {reason}",
                         hint=f"check the address {registry!r} and that the registry is running "
                              "and reachable from this host")


class SigstoreError(ImgkitError):
    """Sigstore's public services (Fulcio, Rekor, the OIDC sign-in, the TUF trust root)
    failed or cannot be reached: neither the image nor the registry is at fault."""

    exit_code = EXIT_HOST
