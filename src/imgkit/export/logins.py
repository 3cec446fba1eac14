"""Who a pipeline's jobs log in to registries as. A registry the CI platform runs gives each
job a token for it, so a team adds no secret: GitHub's ghcr.io (the workflow's GITHUB_TOKEN,
with the job's `packages` permission), and on GitLab the instance's own registry
($CI_REGISTRY: registry.gitlab.com, or a self-managed instance's host, known only when the
job runs), with the job's CI_REGISTRY_USER/CI_REGISTRY_PASSWORD where the team gave no
variables of its own (a deploy token, for another project's registry). Any other registry
takes the repository's secrets: REGISTRY_USERNAME/REGISTRY_PASSWORD for production, STAGING_*
for a staging registry on another host."""
from __future__ import annotations

from .jobs import CiSettings

# the token each job of the platform is given, and the registry it reaches that is known
# when the file is written (GitLab's own may have another host: $CI_REGISTRY, at run time)
JOB_TOKEN = {"github": ("${{ github.actor }}", "${{ secrets.GITHUB_TOKEN }}"),
             "gitlab": ("$CI_REGISTRY_USER", "$CI_REGISTRY_PASSWORD")}
OWN_REGISTRY = {"github": "ghcr.io", "gitlab": "registry.gitlab.com"}
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


def github_credentials(host: str, secret: str) -> tuple[str, str]:
    """(username, password) of docker/login-action for `host`."""
    if host == OWN_REGISTRY["github"]:
        return JOB_TOKEN["github"]
    return f"${{{{ secrets.{secret}_USERNAME }}}}", f"${{{{ secrets.{secret}_PASSWORD }}}}"


def gitlab_login(host: str, secret: str) -> str:
    """The before_script line logging in to `host`: with the team's variables where it gave
    them, else, where `host` is the instance's own registry, with the job's token."""
    def login(user: str, password: str) -> str:
        return f'echo "{password}" | docker login --username "{user}" --password-stdin {host}'
    token = login(*JOB_TOKEN["gitlab"])
    given = login(f"${secret}_USERNAME", f"${secret}_PASSWORD")
    return (f'if [ -z "${{{secret}_USERNAME:-}}" ] && [ "${{CI_REGISTRY:-}}" = "{host}" ]; '
            f"then {token}; else {given}; fi")


def secrets_needed(platform: str, settings: CiSettings) -> list[str]:
    """The secrets (GitHub) or CI/CD variables (GitLab) a team must add for the logins
    (GitLab: unless the host is the instance's own registry, which the job's token reaches)."""
    return [f"{secret}_{part}" for host, secret in logins(settings)
            if host != OWN_REGISTRY[platform] for part in ("USERNAME", "PASSWORD")]


def github_packages(kind: str, settings: CiSettings) -> dict[str, str]:
    """The `packages` permission a GitHub job needs for ghcr.io with the workflow's token:
    write where it pushes, read where it only pulls; none for another registry."""
    if not any(host == OWN_REGISTRY["github"] for host, _ in logins(settings)):
        return {}
    return {"packages": "write"} if kind in PUSHES else {"packages": "read"} if kind in READS else {}
