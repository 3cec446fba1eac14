"""`imgkit promote`: declarations only, as in commands.py (one call into publish/)."""
from __future__ import annotations

from ..options import PUBLISH_DEFAULTS, PublishOptions
from ..project import scan_required
from . import flags
from .commands import command
from .framework import SHIP
from .values import seconds_of
from .values import trust_of as trust


@command(SHIP, "Copy a verified candidate to production, by digest.")
def promote(source: flags.Source, to: flags.PromoteTo = [], tag: flags.Tag = [],
            trusted_key: flags.TrustedKey = None, certificate_identity: flags.Identity = None,
            certificate_oidc_issuer: flags.Issuer = None, max_age: flags.MaxAge = None,
            allow_gpu_unverified: flags.AllowGpuUnverified = False,
            allow_unsigned: flags.AllowUnsigned = False, tlog: flags.Tlog = None,
            require_reproduced: flags.RequireReproduced = False,
            candidates: flags.Candidates = None,
            retry_for: flags.RetryFor = PUBLISH_DEFAULTS.retry_for,
            json_file: flags.Json = None) -> int:
    """Copy a verified candidate by digest to production repositories, only when a signed,
    passing verdict about that digest (and a signed scan, where the project gates on scans)
    verifies against --trusted-key or a keyless identity; attestations travel, tags last.

    Exit 0: promoted; 1: refused or failed; 2: bad usage; 3: a registry refused the
    credentials."""
    from ..publish.command import promote as run
    return run(source=source, to=to, tags=tag, candidates=candidates, json_file=json_file,
               options=PublishOptions(
                   trust=trust(trusted_key, certificate_identity, certificate_oidc_issuer, tlog),
                   allow_unsigned=allow_unsigned, allow_gpu_unverified=allow_gpu_unverified,
                   max_age=seconds_of("--max-age", max_age), retry_for=retry_for,
                   require_scan=scan_required(), require_reproduced=require_reproduced))
