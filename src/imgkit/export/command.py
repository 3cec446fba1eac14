"""`imgkit ci`, `imgkit export bake` and `imgkit export k8s`: the matrix as files for other
engines (a CI pipeline, BuildKit, Kubernetes). Pure text out: nothing here reaches the engine."""
from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from ..console import stderr_line
from ..errors import EXIT_FAILED, EXIT_OK, UsageError
from ..lock.files import LOCKS_DIR
from ..matrix.load import load_plan
from ..outputs import output_folder, write_output
from ..project import setting_or
from ..registry.candidates import load as load_candidates
from ..registry.destination import ACCOUNT_HOSTS, Destination, check_names, parse_destination
from ..render.bake import slug
from ..render.command import render_selection
from ..render.contexts import write_context
from ..selection import Selection
from ..shipped import probe_zip
from ..verify.expect import check_gpus
from .bake import bake_file
from .ci import PLATFORMS, RENDERERS
from .jobs import CiSettings, jobs
from .k8s import (
    dump,
    named_after,
    probe_configmap,
    verify_job,
)
from .logins import secrets_needed
from .pipeline_place import PIPELINES, git_top

# a branch name git accepts, and no character YAML or a CI expression would read otherwise
BRANCH = re.compile(r"^(?!/|.*(/\.|//|\.\.|@\{|\.lock$|/$))[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")


def ci(selection: Selection, *, platform: str, registry: str | None, staging: str | None,
       gpu_runner: str, cpu_runner: str, install: str, verify_gpus: str, out: Path | None,
       signing_key: str = "", trusted_key: str = "",
       gpu_arm64_runner: str = CiSettings.gpu_arm64_runner,
       arm64_runner: str = CiSettings.arm64_runner, emulate_arm64: bool = False,
       release_branch: str = "", pages: bool = False,
       compression: str = CiSettings.compression, max_age: str = CiSettings.max_age,
       check: bool = False) -> int:
    """Write the CI pipeline (build -> verify on GPU -> promote) of the selection; with
    `pages`, its verdict site published too. `check`: write nothing, and exit 1 when the
    file at `out` is not what would be written."""
    if platform not in PLATFORMS:
        raise UsageError(f"no pipeline for {platform!r}", hint=f"one of: {', '.join(PLATFORMS)}")
    _check_ci_options(selection, release_branch, signing_key, trusted_key)
    _check_runners(gpu_runner, gpu_arm64_runner, cpu_runner, arm64_runner)
    production, staged = _destinations(registry, staging)                 # bad: exit 2
    plan = load_plan(selection)                                           # bad matrix: exit 2
    check_names([production, staged], list(plan.finals), "--registry")   # a namespace twice
    if not plan.finals:
        raise UsageError("the selection names only shared layers (" + ", ".join(plan.named) + "): a "
                         "pipeline verifies and promotes the images families name",
                         hint="select a final image, e.g. --only 'paddle:*'; to build shared "
                              "layers alone, run `imgkit build` with that --only")
    root = selection.project.parent if selection.project else None
    out, folder, pipeline_file = _placed(root or Path.cwd(), out, platform)
    settings = CiSettings(registry=production, staging=staged, gpu_runner=gpu_runner,
                          gpu_arm64_runner=gpu_arm64_runner,
                          cpu_runner=cpu_runner, arm64_runner=arm64_runner,
                          emulate_arm64=emulate_arm64, install=install,
                          release_branch=release_branch, pages=pages, compression=compression,
                          root=root, project_dir=folder,
                          watched=(_everything_in(folder, platform), pipeline_file) if folder else (),
                          verify_gpus=check_gpus(verify_gpus),
                          matrix_args=selection.matrix_args(), signing_key=signing_key,
                          trusted_key=trusted_key, max_age=max_age, locks=_locks_folder(selection),
                          advisories=_advisories(root),
                          selection_args=(*(("--cuda", selection.cuda) if selection.cuda else ()),
                                          *(w for g in selection.only for w in ("--only", g))))
    command = ci_command(selection, platform, registry, staging, settings, out)
    text = RENDERERS[platform](jobs(plan, settings), settings, command)
    if check:
        return pipeline_drift(out, text, command)
    write_output(out, text, "--out", required=True)
    _say_written(out, platform, settings)
    return EXIT_OK


def _destinations(registry: str | None, staging: str | None) -> tuple[Destination, Destination]:
    """Where images are promoted, and where candidates wait (default: REGISTRY/staging).
    A bare `--registry ghcr.io` would stage them in ghcr.io/staging: the account called
    staging, not the team's (the registries ACCOUNT_HOSTS names)."""
    production = parse_destination(_registry(registry), "--registry")
    staged = (parse_destination(staging, "--staging") if staging else Destination(
        production.registry, "/".join(filter(None, (production.namespace, "staging")))))
    if staged == production:
        raise UsageError("--staging must differ from --registry: candidates wait apart from "
                         "what was promoted")
    account = ACCOUNT_HOSTS.get(production.registry)
    if account and not production.namespace and not staging:
        raise UsageError(f"--registry {production}: candidates would wait in "
                         f"{production}/staging, the {account} called 'staging', not yours",
                         hint=f"name yours: --registry {production}/OWNER (and the families' "
                              f"repositories without OWNER/), or give --staging "
                              f"{production}/OWNER/staging")
    return production, staged


def _say_written(out: Path, platform: str, settings: CiSettings) -> None:
    """The file written, and the registry credentials the team must add for its logins."""
    stderr_line(f"wrote {out}")
    names = secrets_needed(platform, settings)
    if names:
        where = ("the repository's secrets" if platform == "github" else "masked CI/CD "
                 "variables (none for this GitLab's own registry, $CI_REGISTRY: the job's token)")
        stderr_line(f"its jobs log in with {', '.join(names)}: add them as {where}")


def pipeline_drift(out: Path, text: str, command: str) -> int:
    """Whether the committed pipeline is what the matrix writes now: exit 0, or 1 with the
    first lines that differ and the command that writes it again."""
    import difflib
    try:
        committed = out.read_text()
    except OSError as exc:
        raise UsageError(f"--out {out}: {exc.strerror}", hint=f"write it: {command}") from None
    if committed == text:
        stderr_line(f"{out} is what the matrix writes")
        return EXIT_OK
    diff = list(difflib.unified_diff(committed.splitlines(), text.splitlines(), str(out),
                                     "what the matrix writes now", lineterm="", n=1))
    stderr_line(f"{out} is stale: the matrix (or imgkit) has changed since it was written")
    for line in diff[:40]:
        stderr_line(line)
    if len(diff) > 40:
        stderr_line(f"... and {len(diff) - 40} more lines")
    stderr_line(f"write it again: {command}")
    return EXIT_FAILED


def _check_runners(gpu: str, gpu_arm64: str, cpu: str, arm64: str) -> None:
    """A runner label is one word; the GPU runners' must be given (the CPU runners' may be
    left empty: the platform's hosted ones)."""
    labels = {"--gpu-runner": gpu, "--gpu-arm64-runner": gpu_arm64, "--cpu-runner": cpu,
              "--arm64-runner": arm64}
    for flag, label in labels.items():
        if (not label.strip() and flag.startswith("--gpu")) or (label and label.split() != [label]):
            raise UsageError(f"{flag} {label!r} is not a runner label",
                             hint="the label (GitHub) or tag (GitLab) your runners are registered "
                                  "with, one word, e.g. gpu")


def _check_ci_options(selection: Selection, release_branch: str, signing_key: str,
                      trusted_key: str) -> None:
    """The options a pipeline cannot be written with: exit 2 naming each."""
    if release_branch and not BRANCH.match(release_branch):
        raise UsageError(f"--release-branch {release_branch!r} is not a branch name git allows",
                         hint="e.g. main or release/2.x")
    for flag, path, name in (("--images", selection.images, "images"),
                             ("--compat", selection.compat_file, "compat")):
        # what the project file says, the jobs read from it in their checkout
        if path is not None and path.is_absolute() and name not in selection.from_project:
            raise UsageError(f"{flag} {path}: the jobs run in the repository's checkout; give "
                             "the path relative to its root")
    if bool(signing_key) != bool(trusted_key):
        raise UsageError("--signing-key and --trusted-key go together: the verify jobs sign "
                         "with one, promote checks with the other (neither: keyless signing "
                         "with the CI's OIDC identity)")


def _everything_in(folder: str, platform: str) -> str:
    """The glob of every file under `folder`, as the platform writes it: GitHub's `**`
    crosses folders; GitLab's (Ruby's fnmatch) needs `**/*`."""
    return f"{folder}/**" if platform == "github" else f"{folder}/**/*"


def _placed(project: Path, out: Path | None, platform: str) -> tuple[Path, str, str]:
    """(the pipeline file, with no --out where the platform reads it; the project's folder
    and the file from the checkout's root): git's top level asked once for both."""
    top = git_top(project)
    out = out or Path(os.path.relpath((top or project).resolve() / PIPELINES[platform]))
    return (out, *_checkout(project, top, out, platform))


def _checkout(project: Path, top: Path | None, out: Path, platform: str) -> tuple[str, str]:
    """(the project's folder, the pipeline file) from the root of the checkout the jobs
    start in ("" for the folder: the root): git's top level where the project is in a
    repository, else where the platform reads the file from (the folder above
    .github/workflows/, or .gitlab-ci.yml's: a file named otherwise may be anywhere), when
    the project is inside it; else the project's own folder. `top`: git's, or None."""
    tops = [top] if top is not None else []
    written = out.resolve()
    if platform == "github" and written.parent.name == "workflows" \
            and written.parent.parent.name == ".github":
        tops.append(written.parent.parent.parent)
    elif platform == "gitlab" and written.name == ".gitlab-ci.yml":
        tops.append(written.parent)
    for root in tops:
        relative = os.path.relpath(project.resolve(), root.resolve())
        if not relative.startswith(".."):
            folder = "" if relative == "." else Path(relative).as_posix()
            return folder, Path(os.path.relpath(written, root.resolve())).as_posix()
    return "", out.as_posix()


def _registry(given: str | None) -> str:
    """--registry, else IMGKIT_REGISTRY, else the project file's `registry`."""
    registry = setting_or(given, "registry")
    if registry is None:
        raise UsageError("--registry is needed: where the pipeline promotes verified images",
                         hint="pass --registry REGISTRY[/NAMESPACE], or set registry = "
                              "\"REGISTRY[/NAMESPACE]\" in the project file (imgkit.toml)")
    return registry


def _advisories(root: Path | None) -> str:
    """The project's advisory database as the pipeline's jobs name it (from the checkout's
    root, which they cache it under), or "" when the project does not gate on scans."""
    database = setting_or(None, "vulnerability_db")
    if database is None:
        return ""
    return os.path.relpath(Path(database).resolve(), (root or Path.cwd()).resolve())


def _locks_folder(selection: Selection) -> str:
    """The matrix's locks folder, as the jobs name it, when it holds locks."""
    folder = selection.images / LOCKS_DIR
    return str(folder) if any(folder.glob("*.txt")) else ""


def ci_command(selection: Selection, platform: str, registry: str | None, staging: str | None,
               settings: CiSettings, out: Path) -> str:
    """The command line that regenerates the file (defaults, and a registry the project
    file gives, left out)."""
    words = ["imgkit", "ci", platform, *settings.matrix_args]
    words += ["--cuda", selection.cuda] if selection.cuda else []
    words += [w for glob in selection.only for w in ("--only", glob)]
    words += (["--registry", registry] if registry else []) + (["--staging", staging] if staging else [])
    for flag, value, default in (("--gpu-runner", settings.gpu_runner, CiSettings.gpu_runner),
                                 ("--gpu-arm64-runner", settings.gpu_arm64_runner,
                                  CiSettings.gpu_arm64_runner),
                                 ("--cpu-runner", settings.cpu_runner, CiSettings.cpu_runner),
                                 ("--arm64-runner", settings.arm64_runner,
                                  CiSettings.arm64_runner),
                                 ("--install", settings.install, CiSettings.install),
                                 ("--verify-gpus", settings.verify_gpus, CiSettings.verify_gpus),
                                 ("--signing-key", settings.signing_key, CiSettings.signing_key),
                                 ("--trusted-key", settings.trusted_key, CiSettings.trusted_key),
                                 ("--release-branch", settings.release_branch,
                                  CiSettings.release_branch),
                                 ("--compression", settings.compression, CiSettings.compression),
                                 ("--max-age", settings.max_age, CiSettings.max_age)):
        words += [flag, value] if value != default else []
    words += ["--emulate-arm64"] if settings.emulate_arm64 else []
    words += ["--pages"] if settings.pages else []
    return shlex.join([*words, "--out", str(out)])


def export_bake(selection: Selection, *, out: Path, push_to: str | None = None) -> None:
    """The rendered contexts (pip steps mounting BuildKit secrets) and docker-bake.json,
    its images tagged for `push_to` when given."""
    where = parse_destination(push_to, "--push-to") if push_to else None     # bad: exit 2
    plan = load_plan(selection)
    if where is not None:                           # the names publish would give them
        check_names([where], [t.tag for t in plan.targets], "--push-to")
    contexts = render_selection(selection, plan, buildkit=True)
    output_folder(out, "--out")
    for context in contexts:
        write_context(context, out)
    (out / "docker-bake.json").write_text(bake_file(contexts, plan, where))
    stderr_line(f"wrote {len(contexts)} contexts and {out / 'docker-bake.json'}")


def export_k8s(selection: Selection, *, out: Path, registry: str | None = None,
               cluster: Path | None = None, candidates: Path | None = None,
               fleet: bool = False, verdicts: Path | None = None) -> None:
    """A ConfigMap with the probe and a verification Job per image the selection names;
    with `fleet`, a fleet check's CronJob per image instead (held to `verdicts`). What the
    cluster fixes comes from `cluster` (a TOML file), else the project's [cluster] table."""
    from .cluster import cluster_settings, fleet_settings, job_settings
    if verdicts is not None and not fleet:
        raise UsageError("--verdicts is for a fleet check", hint="add --fleet")
    table, where_set = cluster_settings(cluster)                 # bad: exit 2, every problem
    settings = job_settings(table)
    fleet_set = fleet_settings(table, where_set) if fleet else None
    registry = setting_or(registry, "registry")
    if not registry:
        raise UsageError("export k8s needs --registry: where verified images are promoted, "
                         "which the cluster pulls them from",
                         hint="or set `registry` in imgkit.toml (or IMGKIT_REGISTRY)")
    where = parse_destination(registry, "--registry")                  # bad: exit 2
    plan = load_plan(selection)
    staged = load_candidates(candidates) if candidates is not None else {}
    check_names([where], [t for t in plan.finals if t not in staged], "--registry")   # as ci
    probe = probe_zip()
    images = {tag: staged[tag].reference if tag in staged else
              f"{where.registry}/{where.repository(tag)}:{tag.rsplit(':', 1)[1]}"
              for tag in plan.finals}
    held_to: dict[str, Path] = {}
    if fleet_set is not None and verdicts is not None:
        from .fleet import references
        held_to = references(plan, verdicts)                  # bad or missing: exit 2, first
    output_folder(out, "--out")
    (out / "probe-configmap.yaml").write_text(dump(probe_configmap(probe, settings)))
    if fleet_set is not None:
        from .fleet import write_fleet
        count = write_fleet(plan, images, probe, settings, fleet_set, out, held_to)
        stderr_line(f"wrote {out}/probe-configmap.yaml and {count} fleet-check CronJobs; then "
                    f"`kubectl apply -f {out}`: each run pushes its nodes' verdicts to "
                    f"{fleet_set.pushgateway}")
        return
    jobs_written = 0
    for tag in plan.finals:
        image = images[tag]
        platforms = plan.get(tag).platforms
        for platform in platforms:
            several = len(platforms) > 1
            (out / f"verify-{slug(named_after(tag, platform, several))}.yaml").write_text(dump(verify_job(
                tag, image, probe, settings, platform, per_platform=several)))
            jobs_written += 1
    stderr_line(f"wrote {out}/probe-configmap.yaml and {jobs_written} Jobs; then "
                f"`kubectl apply -f {out}` and, per Job, `kubectl logs job/NAME > "
                "report.json; imgkit judge IMAGE report.json`")


def export_monitoring(*, out: Path, margin: float, period_seconds: int) -> None:
    """Alerting rules and a dashboard for the verdicts as metrics."""
    from .monitoring import MonitoringSettings, dashboard, rules
    if period_seconds < 60:
        raise UsageError(f"--period: {period_seconds} s is shorter than a minute",
                         hint="give the fleet check's schedule, e.g. 6h or 1d")
    settings = MonitoringSettings(margin=margin, period_seconds=period_seconds)
    written = {"imgkit-alerts.yml": rules(settings), "imgkit-dashboard.json": dashboard(settings)}
    output_folder(out, "--out")
    for name, text in written.items():
        (out / name).write_text(text)
    stderr_line(f"wrote {out}/imgkit-alerts.yml (load it as a Prometheus rule file; check it "
                f"with `promtool check rules`) and {out}/imgkit-dashboard.json (import it into "
                "Grafana)")


def export_policy(*, out: Path, registries: list[str], key: Path | None, identity: str | None,
                  issuer: str | None, require_gpu: bool, tlog: bool,
                  kinds: tuple[str, ...], require_scan: bool = False) -> None:
    """Admission policies that demand a signed, passing verdict (`kinds`: kyverno, sigstore),
    and the same rule as a CUE file for `cosign verify-attestation --policy`; with
    `require_scan`, a signed, passing scan too (and its rule as a second CUE file)."""
    from .policy import PolicySettings, cluster_image_policy, cue, kyverno, scan_cue
    kinds = kinds or ("kyverno", "sigstore")
    registries = registries or [r for r in (setting_or(None, "registry"),) if r]
    if not registries:
        raise UsageError("export policy needs --registry: where verified images are promoted, "
                         "whose images the policy covers",
                         hint="or set `registry` in imgkit.toml (or IMGKIT_REGISTRY)")
    prefixes = []
    for registry in registries:
        where = parse_destination(registry, "--registry")                    # bad: exit 2
        prefixes.append("/".join(filter(None, (where.registry, where.namespace))))
    if key is not None and (identity or issuer):
        raise UsageError("--trusted-key or a keyless identity: the policy trusts one signer")
    pem = ""
    if key is not None:
        try:
            pem = key.read_text()
        except OSError as exc:
            raise UsageError(f"--trusted-key {key}: {exc.strerror}")
        if "-----BEGIN PUBLIC KEY-----" not in pem:
            raise UsageError(f"--trusted-key {key}: not a PEM public key",
                             hint="the .pub of `cosign generate-key-pair`; for a KMS key, "
                                  "`cosign public-key --key KMS_URI > cosign.pub` first")
    elif not (identity and issuer):
        raise UsageError("the policy needs a signer: --trusted-key cosign.pub, or "
                         "--certificate-identity and --certificate-oidc-issuer")
    settings = PolicySettings(registries=tuple(prefixes), public_key=pem.strip() + "\n" if pem else "",
                              identity=identity or "", issuer=issuer or "",
                              require_gpu=require_gpu, tlog=tlog, require_scan=require_scan)
    output_folder(out, "--out")
    written = [out / "imgkit-verdict.cue"]
    written[0].write_text(cue(settings))
    if require_scan:
        written.append(out / "imgkit-scan.cue")
        written[-1].write_text(scan_cue())
    if "kyverno" in kinds:
        written.append(out / "kyverno-clusterpolicy.yaml")
        written[-1].write_text(dump(kyverno(settings)))
    if "sigstore" in kinds:
        written.append(out / "sigstore-clusterimagepolicy.yaml")
        written[-1].write_text(dump(cluster_image_policy(settings)))
    stderr_line("wrote " + ", ".join(str(p) for p in written))
