"""Docker image references, checked the way the engine and registries parse them
(the grammar of github.com/distribution/reference): `[domain/]path[:tag]`, and references
that name a registry (`HOST/REPO@sha256:...`, `HOST/REPO:TAG`)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import UsageError

ALNUM = r"[a-z0-9]+"
SEPARATOR = r"(?:[._]|__|[-]+)"
PATH_COMPONENT = rf"{ALNUM}(?:{SEPARATOR}{ALNUM})*"
DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
DOMAIN = rf"(?:{DOMAIN_COMPONENT}(?:\.{DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
NAME = re.compile(rf"^(?:{DOMAIN}/)?{PATH_COMPONENT}(?:/{PATH_COMPONENT})*$")
REPOSITORY = re.compile(rf"^{PATH_COMPONENT}(?:/{PATH_COMPONENT})*$")
TAG = re.compile(r"^[\w][\w.-]{0,127}$")
NAME_MAX = 255


def problem(reference: str) -> str | None:
    """Why `reference` (name:tag) is not a valid image reference, or None when it is."""
    name, colon, tag = reference.rpartition(":")
    if not colon or "/" in tag:
        return "it has no tag (expected name:tag)"
    if not TAG.match(tag):
        return (f"the tag {tag!r} is not valid: up to 128 letters, digits, '_', '.' and '-', "
                "not starting with '.' or '-'")
    if len(name) > NAME_MAX:
        return f"the name is {len(name)} characters long, more than {NAME_MAX}"
    if not NAME.match(name):
        return f"the name {name!r} is not valid: " + (upper_case(name) or (
            "lowercase path components of letters and digits, joined by '.', '_', '__' or "
            "'-', separated by '/'"))
    return None


def upper_case(name: str) -> str | None:
    """Why `name` (a repository, with or without its registry host) is refused when
    upper-case letters in its path are all that is wrong with it, else None."""
    host, slash, path = name.partition("/")
    if not (slash and is_registry_host(host)):
        host, path = "", name
    if path != path.lower() and REPOSITORY.match(path.lower()):
        return (f"repository names are lowercase: {path!r} has upper-case letters "
                f"(try {path.lower()!r})")
    return None


def is_registry_host(component: str) -> bool:
    """Docker's rule: a first path component is a registry host when it has a '.' or a
    ':' or is 'localhost'; otherwise it is part of a Docker Hub repository name."""
    return "." in component or ":" in component or component == "localhost"


DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class RemoteRef:
    registry: str
    repository: str
    reference: str          # the tag or digest the user named
    digest: str = ""        # what it resolved to
    local_ref: str = ""     # how the engine knows the pulled image

    @property
    def by_digest(self) -> bool:
        return bool(DIGEST.match(self.reference))

    def __str__(self) -> str:
        """As the user wrote it: HOST/REPO@sha256:... or HOST/REPO:TAG."""
        return f"{self.registry}/{self.repository}{'@' if self.by_digest else ':'}{self.reference}"


def remote_ref(text: str) -> RemoteRef | None:
    """HOST/REPO@sha256:... or HOST/REPO:TAG as a registry reference; None for a local name."""
    name, at, digest = text.partition("@")
    if at:
        if not DIGEST.match(digest):
            raise UsageError(f"{text!r}: a digest is sha256: and 64 hex digits")
        reference = digest
    else:
        last = name.rsplit("/", 1)[-1]
        name, reference = (name.rsplit(":", 1) if ":" in last else (name, "latest"))
    first, _, path = name.partition("/")
    if not path or not is_registry_host(first):
        if at:
            raise UsageError(f"{text!r}: name the registry, e.g. registry.example.com/ml/paddle@...")
        return None
    if upper_case(path):
        raise UsageError(f"{text!r}: {upper_case(path)}")
    return RemoteRef(registry=first, repository=path, reference=reference)
