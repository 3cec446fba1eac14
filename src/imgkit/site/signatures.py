"""Whether each image in production carries a signed, passing verdict: read from the
registry `imgkit site --registry` names, where the pipeline's promote job puts the matrix's
final images. For each one, its tag's digest there (each platform's, for an index), then
the rule `imgkit check-signed` and promote apply (verify/signed.py: cosign verifies the
signatures against the trust given, and the newest verdict about that very digest must
pass). A registry that cannot be read is said per image; the rest of the site goes on."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import RegistryError
from ..matrix.targets import Plan
from ..options import Trust
from ..registry.destination import Destination, split_ref

if TYPE_CHECKING:       # the registry client (requests): imported only when a registry is read
    from ..registry.client import RegistryClient
    from .scans import ScanView

RETRY_FOR = 10.0        # seconds a registry fault may heal in: the site is no gate, it says so


@dataclass(frozen=True)
class Signed:
    """What the registry holds of one image and platform, and whether it may be trusted."""
    reference: str          # HOST/REPO@sha256:... judged, or HOST/REPO:TAG when not there
    ok: bool                # a signed, passing verdict about that digest verifies
    said: str               # why not, in words ("" when ok)
    scan: tuple[str, ScanView] | None = None   # the newest signed scan of it: image id, view

    @property
    def digest(self) -> str:
        return self.reference.partition("@")[2]


def signer(trust: Trust) -> str:
    """Who a verdict was checked against, in words: the key, or the keyless identity."""
    return f"the key {trust.key}" if trust.key else f"{trust.identity} (issuer {trust.issuer})"


def read(plan: Plan, destination: Destination, trust: Trust,
         scans: bool = False) -> dict[tuple[str, str], Signed]:
    """(tag, platform) -> what the registry holds of each final image of the plan (the
    images a pipeline promotes) and whether its verdict is signed and passing; `scans`
    (a project that gates on them): with its newest signed scan too."""
    from ..engine import connect
    from ..errors import EngineUnavailable
    from ..registry.client import RegistryClient, endpoint_of
    from ..registry.remote import offline_endpoint
    try:
        endpoint = endpoint_of(connect(), destination.registry)
    except EngineUnavailable:     # made where no engine runs: Docker's own defaults
        endpoint = offline_endpoint(destination.registry)
    found: dict[tuple[str, str], Signed] = {}
    with RegistryClient(endpoint, retry_for=RETRY_FOR) as client:
        for tag in plan.finals:
            target = plan.get(tag)
            repository = destination.repository(tag)
            version = split_ref(tag)[1]
            named = f"{destination.registry}/{repository}:{version}"
            try:
                for platform, signed in _judged(client, repository, version, target.platforms,
                                                trust, scans):
                    found[(tag, platform)] = signed
            except RegistryError as exc:     # the registry failed: say so, go on
                for platform in target.platforms:
                    found[(tag, platform)] = Signed(named, False, f"not read: {exc.message}")
    return found


def _judged(client: RegistryClient, repository: str, version: str, platforms: tuple[str, ...],
            trust: Trust, scans: bool) -> list[tuple[str, Signed]]:
    """Each platform's image that `repository:version` names, and whether it may be trusted."""
    from ..registry import index
    from ..verify import signed
    where = f"{client.endpoint.registry}/{repository}"
    named = f"{where}:{version}"
    manifest = client.manifest(repository, version)
    if manifest is None:
        return [(p, Signed(named, False, "not in the registry (not promoted)")) for p in platforms]
    if index.is_index(manifest):
        images = [(e.platform, client.manifest(repository, e.digest)) for e in index.entries(manifest)]
    else:
        images = [(platforms[0], manifest)]
    judged = []
    for platform, image in images:
        if image is None or platform not in platforms:
            continue
        reference = f"{where}@{image.digest}"
        why = signed.check(client, repository, image.digest, image.config_digest or "", trust,
                           allow_gpu_unverified=True, max_age=None)
        scan = _signed_scan(client, repository, image.digest, trust) if scans else None
        judged.append((platform, Signed(reference, why is None, _short(why, reference), scan)))
    return judged


def _signed_scan(client: RegistryClient, repository: str, digest: str,
                 trust: Trust) -> tuple[str, ScanView] | None:
    from ..scan.attested import signed_result
    from .scans import signed_view
    found = signed_result(client, repository, digest, trust)
    return None if found is None else signed_view(*found)


def _short(why: str | None, reference: str) -> str:
    """signed.check's refusal without the reference it starts with (the page shows it)."""
    if why is None:
        return ""
    return why[len(reference) + 2:] if why.startswith(reference + ": ") else why
