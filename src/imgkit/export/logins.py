"""Who a pipeline's jobs log in to registries as. A registry the CI platform runs gives each
job a token for it, so a team adds no secret: GitHub's ghcr.io (the workflow's GITHUB_TOKEN,
with the job's `packages` permission) and gitlab.com's registry (the job's
CI_REGISTRY_USER/CI_REGISTRY_PASSWORD, for the project's own registry). Any other registry
takes the repository's secrets: REGISTRY_USERNAME/REGISTRY_PASSWORD for production, STAGING_*
for a staging registry on another host."""
from __future__ import annotations

from .jobs import CiSettings

OWN_TOKEN = {
    "github": {"ghcr.io": ("${{ github.actor }}", "${{ secrets.GITHUB_TOKEN }}")},
    "gitlab": {"registry.gitlab.com": ("$CI_REGISTRY_USER", "$CI_REGISTRY_PASSWORD")},
}
# what each kind of job does with the registries: pushes (stages, signs, promotes) or reads
PUSHES = ("build", "verify", "promote")
READS = ("site", "rescan")


def logins(settings: CiSettings) -> list[tuple[str, str]]:
    """(registry host, secret name prefix): production's, and staging's where it is another
    host."""
    hosts = [(settings.registry.registry, "REGISTRY")]
    if settings.staging.registry != settings.registry.registry:
        hosts.append((settings.staging.registry, "STAGING"))
    return hosts


def credentials(platform: str, host: str, secret: str) -> tuple[str, str]:
    """(user, password) as the platform's pipeline file writes them, for `host`."""
    if host in OWN_TOKEN[platform]:
        return OWN_TOKEN[platform][host]
    if platform == "github":
        return f"${{{{ secrets.{secret}_USERNAME }}}}", f"${{{{ secrets.{secret}_PASSWORD }}}}"
    return f"${secret}_USERNAME", f"${secret}_PASSWORD"


def secrets_needed(platform: str, settings: CiSettings) -> list[str]:
    """The secrets (GitHub) or CI/CD variables (GitLab) a team must add for the logins."""
    return [f"{secret}_{part}" for host, secret in logins(settings)
            if host not in OWN_TOKEN[platform] for part in ("USERNAME", "PASSWORD")]


def github_packages(kind: str, settings: CiSettings) -> dict[str, str]:
    """The `packages` permission a GitHub job needs for ghcr.io with the workflow's token:
    write where it pushes, read where it only pulls; none for another registry."""
    if not any(host in OWN_TOKEN["github"] for host, _ in logins(settings)):
        return {}
    return {"packages": "write"} if kind in PUSHES else {"packages": "read"} if kind in READS else {}
