"""What production already holds, read by tag from the registry (`--reuse-from
REGISTRY[/NAMESPACE]`): an image of the matrix whose production tag carries the input hash
this checkout renders need not be built again (`build`), and an image whose production tag
is that very image need not be staged again (`publish --candidate`): the later jobs take
the production digest as the candidate, so an unchanged image keeps its digest.

Asking is an optimisation, never a gate: a registry that does not answer (or refuses our
credentials) is reported and everything is built and staged as if it held nothing.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Iterable

from .. import labels
from ..engine import Engine
from ..errors import RegistryAuthError, RegistryError
from . import index
from .candidates import Candidate
from .client import RegistryClient, endpoint_of
from .destination import Destination, split_ref

# a short look: production is asked as a shortcut, a slow answer is no answer
ASK_FOR = 20.0


@dataclass(frozen=True)
class Held:
    """What production holds under a tag: an image, or an index of several platforms'."""
    candidate: Candidate            # its digest there (an index's: platforms set, no id)
    input_hashes: frozenset[str]    # of every image it is (one, when they agree)
    images: dict[str, str]          # platform -> image id ({"": id} for a plain image)


def look_up(engine: Engine, destination: Destination, tags: Iterable[str],
            log: Callable[[str], None]) -> dict[str, Held]:
    """Each tag the production registry holds (under the name `publish`/`promote` give it).
    A repository we may not read is one it does not hold for us (many registries answer 401
    for a name they do not have); a registry that does not answer is not asked again."""
    found: dict[str, Held] = {}
    with RegistryClient(endpoint_of(engine, destination.registry),
                        retry_for=ASK_FOR, timeout=10.0) as client:
        for tag in tags:
            repository, name = destination.repository(tag), split_ref(tag)[1]
            try:
                held = _held(client, repository, name, f"{destination.registry}/{repository}", tag)
            except RegistryAuthError:
                continue
            except (RegistryError, ValueError, AttributeError, KeyError) as exc:
                log(f"could not read what {destination} holds ({exc}): nothing more is "
                    "reused from it")
                break
            if held is not None:
                found[tag] = held
    return found


def _held(client: RegistryClient, repository: str, name: str, where: str,
          tag: str) -> Held | None:
    manifest = client.manifest(repository, name)
    if manifest is None:
        return None
    if index.is_index(manifest):
        images: dict[str, str] = {}
        hashes = set()
        for entry in index.entries(manifest):
            child = client.manifest(repository, entry.digest)
            if child is None or child.config_digest is None:
                return None
            images[entry.platform] = child.config_digest
            hashes.add(_input_hash(client, repository, child.config_digest))
        return Held(Candidate(image=tag, image_id="", repository=where, digest=manifest.digest,
                              platforms=tuple(images)), frozenset(hashes), images)
    if manifest.config_digest is None:
        return None
    return Held(Candidate(image=tag, image_id=manifest.config_digest, repository=where,
                          digest=manifest.digest),
                frozenset({_input_hash(client, repository, manifest.config_digest)}),
                {"": manifest.config_digest})


def _input_hash(client: RegistryClient, repository: str, config_digest: str) -> str:
    config = json.loads(client.blob(repository, config_digest))
    return str(((config.get("config") or {}).get("Labels") or {}).get(labels.INPUT_HASH, ""))


def unchanged(engine: Engine, destination: Destination, wanted: dict[str, str],
              log: Callable[[str], None]) -> dict[str, Candidate]:
    """`wanted`: tag -> the input hash it renders now. The ones production holds built from
    exactly those inputs (an index: every image of it)."""
    return {tag: held.candidate for tag, held in look_up(engine, destination, wanted, log).items()
            if held.input_hashes == {wanted[tag]}}


def same_images(engine: Engine, destination: Destination, wanted: dict[str, dict[str, str]],
                log: Callable[[str], None]) -> dict[str, Candidate]:
    """`wanted`: tag -> {platform: local image id} ({"": id} for an image of one platform).
    The ones whose production tag is those very images (an index of exactly them)."""
    return {tag: held.candidate for tag, held in look_up(engine, destination, wanted, log).items()
            if held.images == wanted[tag]}
