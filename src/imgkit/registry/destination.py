"""Where images go: `--to REGISTRY[/NAMESPACE]`, validated, and the name a local image
gets there (its repository path under the namespace, its registry host dropped)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import UsageError
from .reference import DOMAIN, PATH_COMPONENT, is_registry_host, problem, upper_case

REGISTRY = re.compile(rf"^{DOMAIN}$")
NAMESPACE = re.compile(rf"^{PATH_COMPONENT}(?:/{PATH_COMPONENT})*$")


# Hosted registries whose first path part is an account, not a folder of yours: a name
# straight under the host (`ghcr.io/staging`) is someone else's, or nobody's.
ACCOUNT_HOSTS = {"ghcr.io": "GitHub user or organisation",
                 "docker.io": "Docker Hub account", "index.docker.io": "Docker Hub account",
                 "registry-1.docker.io": "Docker Hub account",
                 "quay.io": "Quay organisation or user", "nvcr.io": "NGC org",
                 "registry.gitlab.com": "GitLab group or user"}


@dataclass(frozen=True)
class Destination:
    registry: str       # host[:port], as Docker names it
    namespace: str      # repository prefix there ("" for none)

    def __str__(self) -> str:
        return f"{self.registry}/{self.namespace}" if self.namespace else self.registry

    def repository(self, local_ref: str) -> str:
        """The repository path (without the host) `local_ref` is published under."""
        name = split_ref(local_ref)[0]
        first, _, rest = name.partition("/")
        if rest and is_registry_host(first):
            name = rest
        return f"{self.namespace}/{name}" if self.namespace else name


def doubled(destination: Destination, local_ref: str) -> str:
    """The namespace both the destination and the image's repository carry, one after the
    other (`--to HOST/ml` and `ml/x` would make HOST/ml/ml/x), or ""."""
    ours = [p for p in destination.namespace.split("/") if p]
    theirs = destination.repository(local_ref).split("/")[len(ours):-1]
    for width in range(min(len(ours), len(theirs)), 0, -1):
        if ours[-width:] == theirs[:width]:
            return "/".join(theirs[:width])
    return ""


def check_names(destinations: list[Destination], local_refs: list[str], flag: str = "--to") -> None:
    """One rule for registry names, kept before anything is pushed: an image goes to
    REGISTRY/NAMESPACE/REPOSITORY, and a namespace said twice (in --to and in the family's
    `repository:`) is refused, naming the two ways out."""
    for destination in destinations:
        for ref in local_refs:
            _check_account(destination, ref, flag)
            twice = doubled(destination, ref)
            if twice:
                name = split_ref(ref)[0]
                shorter = destination.namespace[:-len(twice)].rstrip("/")
                drop = f"drop {twice + '/'!r} from the family's repository"
                account = ACCOUNT_HOSTS.get(destination.registry) if not shorter else None
                raise UsageError(
                    f"{name} would be pushed to {destination.registry}/"
                    f"{destination.repository(ref)}: {twice!r} is both the end of {flag} "
                    f"{destination} and the start of the repository",
                    hint=f"{drop}: {flag} {destination} names the {account} already" if account else
                         f"use {flag} {destination.registry}{'/' + shorter if shorter else ''} "
                         f"(the repository names {twice!r}), or {drop}")


def _check_account(destination: Destination, local_ref: str, flag: str) -> None:
    """An image whose whole name would sit straight under an account host (`paddle` to
    ghcr.io: ghcr.io/paddle) would go to the account of that name."""
    account = ACCOUNT_HOSTS.get(destination.registry)
    name = destination.repository(local_ref)
    if account and "/" not in name:
        raise UsageError(f"{split_ref(local_ref)[0]} would be pushed to {destination.registry}/"
                         f"{name}, the {account} called {name!r}",
                         hint=f"name yours: {flag} {destination.registry}/OWNER")


def split_ref(ref: str) -> tuple[str, str]:
    """`name:tag` -> (name, tag)."""
    name, _, tag = ref.rpartition(":")
    if not name or "/" in tag:
        raise UsageError(f"{ref!r} is not a name:tag reference")
    return name, tag


def parse_destination(text: str, flag: str = "--to") -> Destination:
    registry, _, namespace = text.strip().rstrip("/").partition("/")
    if not REGISTRY.match(registry) or not is_registry_host(registry):
        bare = re.sub(r"^[a-z][a-z0-9+.-]*://", "", text.strip(), flags=re.I).rstrip("/")
        variable = re.search(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", text)
        hint = (f"without the scheme: {flag} {bare}" if bare != text.strip().rstrip("/") and bare
                else f"${variable.group(1)} was not expanded (quoted, or not set here): give "
                     "the registry itself, or run this where the variable is set" if variable
                else "name the registry as Docker does: host[:port][/namespace], e.g. "
                     "registry.example.com/ml or 127.0.0.1:5000 (Docker Hub: docker.io/NAME)")
        raise UsageError(f"{flag} {text!r}: {registry!r} is not a registry host", hint=hint)
    if namespace and not NAMESPACE.match(namespace):
        raise UsageError(f"{flag} {text!r}: " + (upper_case(namespace) or (
            f"namespace {namespace!r} is not a repository path (lowercase letters and digits, "
            "joined by '.', '_', '-', and '/')")))
    return Destination(registry=registry, namespace=namespace)


def destination_ref(destination: Destination, local_ref: str, tag: str) -> str:
    ref = f"{destination.registry}/{destination.repository(local_ref)}:{tag}"
    why = problem(ref)
    if why is not None:
        raise UsageError(f"{local_ref} cannot be published to {destination} as {ref!r}: {why}")
    return ref
