"""The core of each command, as keyword-argument functions (the CLI is a thin layer)."""
from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console

from . import compat, report
from .base import ensure_base
from .build import BuildOptions, Builder, Result
from .buildenv import BuildEnv, SecretServer, default_ca_bundle
from .engine import connect
from .errors import EXIT_FAILED, EXIT_OK, UsageError
from .plan import Plan, Settings, make_plan, select
from .render import Context, render_plan, write_context
from .spec import REPOSITORY_PATTERN, load_spec

console = Console(stderr=True, highlight=False)


def load_plan(images: Path, namespace: str, cuda: str | None, only: str | None) -> Plan:
    if not REPOSITORY_PATTERN.match(namespace):
        raise UsageError(f"--namespace {namespace!r} is not a valid repository prefix")
    spec = load_spec(images)
    return select(make_plan(spec, compat.load(), Settings(namespace=namespace)), cuda, only)


def templates_dir(images: Path, templates: Path | None) -> Path:
    path = templates if templates is not None else images.resolve().parent / "templates"
    if not path.is_dir():
        raise UsageError(f"template directory {path} not found", hint="pass --templates DIR")
    return path


def render(*, out: Path, cuda: str | None, only: str | None, images: Path,
           templates: Path | None, namespace: str) -> list[Path]:
    plan = load_plan(images, namespace, cuda, only)
    contexts = render_plan(plan, templates_dir(images, templates))
    out.mkdir(parents=True, exist_ok=True)
    written = [write_context(c, out) for c in contexts]
    for path in written:
        print(path)
    return written


def list_plan(*, cuda: str | None, only: str | None, images: Path, namespace: str) -> None:
    plan = load_plan(images, namespace, cuda, only)
    report.print_plan(plan)


def build(*, cuda: str | None, only: str | None, jobs: int, force: bool, dry_run: bool,
          verbose: bool, images: Path, templates: Path | None, namespace: str,
          ca_bundle: str | None, index_url: str | None, base_source: str,
          mirror: str | None) -> int:
    """Validate, render, then build; returns the exit code (1 if any image failed)."""
    plan = load_plan(images, namespace, cuda, only)           # exit 2 before any docker call
    contexts = render_plan(plan, templates_dir(images, templates))
    env = BuildEnv(ca_bundle=default_ca_bundle(ca_bundle), index_url=index_url)
    env.files()                                               # bad --ca-bundle: exit 2 now
    engine = connect()                                        # unreachable: exit 3
    started = time.monotonic()
    if not dry_run:
        for ref, os_name in sorted({(t.base, t.os) for t in plan.targets if t.base}):
            ensure_base(engine, ref, os_name, source=base_source, mirror=mirror,
                        log=lambda m: console.print(f"[dim]base:[/] {m}"))

    def listener(tag: str, event: str, text: str) -> None:
        if event == "log":
            if verbose:
                console.print(f"[dim]{tag}[/] {text}", markup=True)
        elif event == "start":
            console.print(f"[cyan]building[/] {tag} ({text})")
        else:
            console.print(f"[bold]{event}[/] {tag}" + (f": {text}" if text else ""))

    options = BuildOptions(jobs=jobs, force=force, dry_run=dry_run)
    with SecretServer(env, engine.bridge_gateway()) as server:
        results = Builder(engine, options, server.extra_hosts, listener).run(contexts)
    report.print_build_summary(results, time.monotonic() - started)
    for result in results:
        if result.error is not None:
            report.print_build_failure(result.error)
    return EXIT_FAILED if any(r.status in ("failed", "skipped", "cancelled")
                              for r in results) else EXIT_OK


__all__ = ["build", "render", "list_plan", "Context", "Result"]


def verify(*, image: str, gpus: str, expect: list[str], json_file: Path | None,
           junit_file: Path | None, timeout: int, min_gemm: float, min_conv: float) -> int:
    from .errors import EXIT_HOST
    from .evaluate import Thresholds
    from .verify import VerifyOptions, device_requests, verify as run_verify
    device_requests(gpus)                                     # bad --gpus: exit 2 first
    engine = connect()
    options = VerifyOptions(gpus=gpus, expect=tuple(expect), timeout=timeout,
                            thresholds=Thresholds(gemm=min_gemm, conv=min_conv))
    verdict = run_verify(engine, image, options)
    report.print_verdict(verdict)
    if json_file is not None:
        json_file.write_text(report.verdict_json(verdict))
    if junit_file is not None:
        junit_file.write_text(report.verdict_junit(verdict))
    if verdict.host_failure:
        return EXIT_HOST
    return EXIT_FAILED if verdict.failed else EXIT_OK
