"""Render each target's self-contained build context from templates/*.j2.

Deterministic: the same plan renders byte-identical files. Every value reaching a template
was validated by spec.py (strict patterns) or comes from the shipped compat data.
The input hash covers the context and the parent's input hash, so a change anywhere
up the chain marks every image below it out of date.
"""
from __future__ import annotations

import hashlib
import json
import shlex
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

import jinja2

from .. import labels, platforms
from ..lock.files import PYTHON_PACKAGES, apt_pins, requirements, venv_support
from ..matrix.custom import Custom
from ..matrix.plan import LIB_LINKS, VENV, Plan, Target, lineage
from ..shipped import PACKAGE_DIR, default_templates
from .stamp import Stamp
from .template_problems import template_problem

TEMPLATES = {"python": "python.Dockerfile.j2", "cuda": "pip-layer.Dockerfile.j2",
             "cudnn": "pip-layer.Dockerfile.j2", "nccl": "pip-layer.Dockerfile.j2",
             "framework": "framework.Dockerfile.j2", "extension": "extension.Dockerfile.j2"}
CONSTRAINED = ("framework", "extension")   # layers whose pip may not touch the parents' pins


@dataclass(frozen=True)
class Context:
    target: Target
    files: tuple[tuple[str, bytes, int], ...]  # (relative path, content, mode)
    input_hash: str

    @property
    def dirname(self) -> str:
        return context_dirname(self.target.tag)

    @property
    def stamp(self) -> Stamp:
        return Stamp(self.target.tag, self.target.parent, self.target.base, self.input_hash,
                     self.target.budget)

    @property
    def dockerfile(self) -> str:
        return dict((p, c) for p, c, _ in self.files)["Dockerfile"].decode()


def context_dirname(tag: str) -> str:
    return tag.replace("/", "_").replace(":", "_")


def _environment(templates_dir: Path) -> jinja2.Environment:
    """Templates from `templates_dir`, and any it lacks from those imgkit ships: a team
    overrides one template (or an include such as _labels.j2) and keeps the rest."""
    folders = [str(templates_dir)]
    shipped = default_templates()
    if shipped is not None and shipped.resolve() != templates_dir.resolve():
        folders.append(str(shipped))
    return jinja2.Environment(loader=jinja2.FileSystemLoader(folders),
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                              trim_blocks=True, lstrip_blocks=True, autoescape=False)


def _package_files(subdir: str, dest: str) -> list[tuple[str, bytes, int]]:
    """Files shipped inside the imgkit package (helpers, probe), in sorted order."""
    root = PACKAGE_DIR.joinpath(subdir)
    out = []
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.is_file() and not entry.name.endswith(".pyc"):
            mode = 0o755 if subdir.endswith("bin") else 0o644
            out.append((f"{dest}/{entry.name}", entry.read_bytes(), mode))
    return out


def probe_files() -> list[tuple[str, bytes, int]]:
    return _package_files("probe", "imgkit/probe")


def _apt_variables(target: Target, lock: bytes | None) -> dict[str, object]:
    """What the templates install with apt: the lock's pins, else the python layer's
    packages; and the distro's venv support the python layer removes once its venv is made."""
    return {"apt_lock": apt_pins(lock.decode()) if lock is not None else [],
            "python_apt": list(PYTHON_PACKAGES), "venv_support": list(venv_support(target.python))}


def venv_tools_file(target: Target) -> bytes:
    """The python layer's pip and setuptools, as a requirements file pip installs by hash."""
    return "".join(f"{name}=={version} --hash=sha256:{sha256}\n"
                   for name, version, sha256 in target.venv_tools).encode()


def _variables(target: Target, plan: Plan) -> dict[str, object]:
    comps = target.component_map
    version = comps.get("framework_version") or comps.get("cuda") or comps["python"]
    parent_constraints: list[str] = []
    if target.layer in CONSTRAINED:           # every parent's pins, root first
        below = list(lineage(target, {t.tag: t for t in plan.targets}))[1:]
        parent_constraints = [p for parent in reversed(below) for p in parent.packages]
    os_title = target.os_release.title if target.os_release else target.os
    describe = {"python": f"{os_title} with python {target.python}",
                "cuda": f"CUDA {target.cuda} runtime libraries",
                "cudnn": f"CUDA {target.cuda} with cuDNN {comps.get('cudnn')}",
                "nccl": f"CUDA {target.cuda} with NCCL {comps.get('nccl')}",
                "framework": f"{comps.get('framework')} {comps.get('framework_version')} "
                             f"on CUDA {target.cuda}",
                "extension": f"{target.family} on {target.parent}"}[target.layer]
    return {"tag": target.tag, "layer": target.layer, "parent": target.parent,
            "base": target.base, "python": target.python, "cuda": target.cuda,
            "venv": VENV, "lib_links": LIB_LINKS, "components": comps, "packages": list(target.packages),
            "framework": target.framework, "env": list(target.env),
            "description": describe, "version": version, "template": TEMPLATES[target.layer],
            "constraints": parent_constraints, "label": labels.FOR_TEMPLATES,
            "family": target.family, "extension": _extension_variables(target),
            "apt": list(target.apt),    # the framework's and its family's Debian packages
            # a framework family's own pip packages, after the framework's
            "family_pip": " ".join(shlex.quote(r) for r in target.packages[1:])
            if target.layer == "framework" else "",
            "custom": _custom_variables(target)}


def _extension_variables(target: Target) -> dict[str, object] | None:
    """What the extension template needs, quoted for the shell and the Dockerfile."""
    extension = target.extension
    if extension is None:
        return None
    return {"apt": list(extension.apt), "pip": " ".join(shlex.quote(r) for r in extension.pip),
            "files": [(f"files/{source}", destination) for source, destination in extension.files]}


# a family's step ($1, verbatim) with the build's trust settings, then imgkit-normalise
STEP_THEN_NORMALISE = 'imgkit-build-env /bin/sh -ec "$1"\nimgkit-normalise'


def _custom_variables(target: Target) -> dict[str, object]:
    """What _custom.j2 sets on a family's own image, quoted for the Dockerfile (JSON for
    every value and argument list; a shell step runs in exec form, newlines and all, and
    imgkit-normalise ends it once imgkit-build-env has removed what it lent the step)."""
    custom = target.custom or Custom()
    made = custom.user if custom.user and custom.user.name != "root" else None
    return {"run": [json.dumps(["/bin/sh", "-ec", STEP_THEN_NORMALISE, "imgkit-step", step])
                    for step in custom.run],
            "make_user": made, "user": target.user, "workdir": custom.workdir,
            "env": [(name, json.dumps(value, ensure_ascii=False)) for name, value in custom.env],
            "labels": [(name, json.dumps(value, ensure_ascii=False)) for name, value in custom.labels],
            "ports": [str(port) for port in custom.ports],
            "entrypoint": json.dumps(list(custom.entrypoint)) if custom.entrypoint else "",
            "cmd": json.dumps(list(custom.cmd)) if custom.cmd else ""}


def _extension_files(target: Target) -> list[tuple[str, bytes, int]]:
    """The files an extension copies in, read from beside its matrix file."""
    extension = target.extension
    if extension is None:
        return []
    return [(f"files/{source}", (Path(extension.matrix_dir) / source).read_bytes(), 0o644)
            for source, _ in extension.files]


# `imgkit export bake`: BuildKit mounts the trust settings as secrets for the pip steps only
# (imgkit-build-env reads them); `imgkit build` serves them from its own short-lived server.
SECRET_MOUNTS = ("--mount=type=secret,id=imgkit-ca-bundle,required=false "
                 "--mount=type=secret,id=imgkit-index-url,required=false "
                 "--mount=type=secret,id=imgkit-extra-index-url,required=false ")


def on_platform(target: Target, platform: str) -> Target:
    """`target` as the image of one platform this engine keeps: under that platform's local
    name (platforms.local_ref: the tag itself for the host's, TAG-ARCH for another), standing
    on its parent's (or base's) image of the same platform."""
    def local(ref: str | None) -> str | None:
        return None if ref is None else platforms.local_ref(ref, platform)
    return replace(target, tag=platforms.local_ref(target.tag, platform), parent=local(target.parent),
                   base=local(target.base), platforms=(platform,))


def render_plan(plan: Plan, templates_dir: Path, *, buildkit: bool = False,
                locks: Mapping[str, bytes] | None = None,
                platform: str | None = None) -> list[Context]:
    """`locks`: tag -> its lock (`imgkit lock`); an image with one installs exactly that.
    `platform`: the images of that platform only, each under its local name (on_platform);
    the input hash stays the one of the platform-neutral form, as BuildKit builds it."""
    locks = locks or {}
    env = _environment(templates_dir)
    hashes: dict[str, str] = {}
    contexts = []
    for target in plan.targets:  # parents first, so their hash is known
        if platform is not None and platform not in target.platforms:
            continue
        variables = _variables(target, plan)
        lock = locks.get(target.tag)
        pip_locked = lock is not None and bool(requirements(target))
        variables["lock"] = f"{context_dirname(target.tag)}.txt" if pip_locked else ""
        variables.update(_apt_variables(target, lock))
        # the hash is of the docker-py builder's form: both forms make the same image (only
        # how the trust settings reach pip differs), so either engine's build is up to date
        # for the other and provenance matches whichever built it
        template, body = _rendered(env, TEMPLATES[target.layer], templates_dir,
                                   {**variables, "secret_mounts": "", "buildkit": False})
        files: list[tuple[str, bytes, int]] = []
        if target.layer == "python":
            files += _package_files("image_files/bin", "imgkit/bin") + probe_files()
            files.append(("imgkit/venv-tools.txt", venv_tools_file(target), 0o644))
        if target.layer in CONSTRAINED:
            constraints = "".join(f"{c}\n" for c in variables["constraints"])  # type: ignore
            files.append(("constraints.txt", constraints.encode(), 0o644))
        files += _extension_files(target)
        if lock is not None and pip_locked:
            files.append(("lock.txt", lock, 0o644))
        digest = hashlib.sha256()
        digest.update((hashes[target.parent] if target.parent else f"base:{target.base}").encode())
        for path, content, mode in sorted(files + [("Dockerfile", body.encode(), 0o644)]):
            digest.update(f"\0{path}\0{mode:o}\0{len(content)}\0".encode() + content)
        input_hash = digest.hexdigest()[:32]
        hashes[target.tag] = input_hash
        built = target if platform is None else on_platform(target, platform)
        if buildkit or (built.parent, built.base) != (target.parent, target.base):
            _, body = _rendered(env, TEMPLATES[target.layer], templates_dir,
                                {**variables, "parent": built.parent, "base": built.base,
                                 "secret_mounts": SECRET_MOUNTS if buildkit else "",
                                 "buildkit": buildkit})
        dockerfile = body + f'LABEL {labels.INPUT_HASH}="{input_hash}"\n'
        files.append(("Dockerfile", dockerfile.encode(), 0o644))
        contexts.append(Context(target=built, files=tuple(sorted(files)), input_hash=input_hash))
    return contexts


def _rendered(env: jinja2.Environment, name: str, templates_dir: Path,
              variables: dict[str, object]) -> tuple[jinja2.Template, str]:
    try:
        template = env.get_template(name)
        return template, template.render(**variables)
    except (jinja2.TemplateError, TypeError, ValueError, AttributeError) as exc:
        raise template_problem(exc, name, templates_dir, env, variables) from None


def write_context(context: Context, out_dir: Path) -> Path:
    """Write one context into out_dir/<dirname>, replacing what was there."""
    dest = out_dir / context.dirname
    if dest.exists():
        shutil.rmtree(dest)
    for path, content, mode in context.files:
        file = dest / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(content)
        file.chmod(mode)
    return dest
