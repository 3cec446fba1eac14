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
from typing import Callable, Iterable

from .. import labels
from ..engine import Engine
from ..errors import RegistryAuthError, RegistryError
from .candidates import Candidate
from .client import RegistryClient, endpoint_of
from .destination import Destination, split_ref

# a short look: production is asked as a shortcut, a slow answer is no answer
ASK_FOR = 20.0


def look_up(engine: Engine, destination: Destination, tags: Iterable[str],
            log: Callable[[str], None]) -> dict[str, tuple[Candidate, dict[str, str]]]:
    """Each tag the production registry holds (under the name `publish`/`promote` give it):
    (its digest there as a candidate, its image config's labels). A repository we may not
    read is one it does not hold for us (many registries answer 401 for a name they do not
    have); a registry that does not answer is not asked again."""
    found: dict[str, tuple[Candidate, dict[str, str]]] = {}
    with RegistryClient(endpoint_of(engine, destination.registry),
                        retry_for=ASK_FOR, timeout=10.0) as client:
        for tag in tags:
            repository, name = destination.repository(tag), split_ref(tag)[1]
            try:
                manifest = client.manifest(repository, name)
                image_id = manifest.config_digest if manifest is not None else None
                if manifest is None or image_id is None:     # absent, or an index: not reused
                    continue
                config = json.loads(client.blob(repository, image_id))
                labels_there = (config.get("config") or {}).get("Labels") or {}
            except RegistryAuthError:
                continue
            except (RegistryError, ValueError, AttributeError) as exc:
                log(f"could not read what {destination} holds ({exc}): nothing more is "
                    "reused from it")
                break
            found[tag] = (Candidate(image=tag, image_id=image_id,
                                    repository=f"{destination.registry}/{repository}",
                                    digest=manifest.digest), dict(labels_there))
    return found


def unchanged(engine: Engine, destination: Destination, wanted: dict[str, str],
              log: Callable[[str], None]) -> dict[str, Candidate]:
    """`wanted`: tag -> the input hash it renders now. The ones production holds built from
    exactly those inputs."""
    return {tag: candidate for tag, (candidate, found) in
            look_up(engine, destination, wanted, log).items()
            if found.get(labels.INPUT_HASH) == wanted[tag]}


def same_image(engine: Engine, destination: Destination, wanted: dict[str, str],
               log: Callable[[str], None]) -> dict[str, Candidate]:
    """`wanted`: tag -> local image id. The ones whose production tag is that very image."""
    return {tag: candidate for tag, (candidate, _) in
            look_up(engine, destination, wanted, log).items()
            if candidate.image_id == wanted[tag]}
