"""What a team sets on the images a framework or extension family names: the user, the
entrypoint and command, labels, environment, working folder, ports, and shell steps run as
root before the switch to the user. Layers imgkit names (python, CUDA, cuDNN, NCCL) stay
as imgkit makes them, so they are shared whatever a family sets.

The format is family_model.Custom; what a well-formed file may still get wrong is checked
here, every problem with its key."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import SpecError
from ..labels import refused
from .family_model import Custom as Model
from .run_steps import install_problems

DEFAULT_USER = "imgkit"        # made in the python layer, uid and gid 1000
VENV = "/opt/venv"             # made in the python layer: every image's python3 and packages
# A notebook server is a remote shell: never as root, never without authentication.
UNSAFE_ARGUMENT = re.compile(r"^--(allow-root|(ServerApp|NotebookApp|IdentityProvider)\.token=(''|\"\")?"
                             r"|(ServerApp|NotebookApp)\.(password=(''|\"\")?|allow_root=True|"
                             r"disable_check_xsrf=True))$")


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int


@dataclass(frozen=True)
class Custom:
    user: User | None = None                  # None: the parent's user (imgkit at first)
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    workdir: str = ""
    ports: tuple[int, ...] = ()
    run: tuple[str, ...] = ()                 # shell steps, as root, before USER


def to_custom(model: Model) -> Custom:
    user = None
    if model.user is not None:
        uid = 0 if model.user.name == "root" else model.user.uid
        gid = model.user.gid if model.user.gid is not None else uid
        user = User(model.user.name, uid, 0 if model.user.name == "root" else gid)
    return Custom(user=user, entrypoint=tuple(model.entrypoint), cmd=tuple(model.cmd),
                  env=tuple(model.env.items()), labels=tuple(model.labels.items()),
                  workdir=model.workdir or "", ports=tuple(model.ports), run=tuple(model.run))


def custom_problems(file: str, model: Model) -> list[SpecError]:
    """A server without authentication, a root user without a reason, imgkit's own labels."""
    found = [SpecError(file, f"cmd[{i}]", f"{argument!r} would run a server as root or without "
                       "authentication", hint="keep the token: set JUPYTER_TOKEN when the "
                       "container starts")
             for i, argument in enumerate(model.cmd) if UNSAFE_ARGUMENT.match(argument)]
    found += [SpecError(file, f"env.{name}", "an empty token turns authentication off")
              for name, value in model.env.items()
              if name in ("JUPYTER_TOKEN", "JUPYTER_PASSWORD") and not value]
    found += [SpecError(file, f"labels.{name}", why, hint="name yours under your own prefix "
                        "(e.g. com.example.team), or one of the OCI annotations a team sets")
              for name in model.labels if (why := refused(name)) is not None]
    user = model.user
    if user is not None and user.name == "root" and not user.reason:
        found.append(SpecError(file, "user.reason", "an image that runs as root says why",
                               hint="user: {name: root, reason: \"the device plugin needs it\"}"))
    if user is not None and user.name != "root" and user.uid == 0:
        found.append(SpecError(file, "user.uid", "uid 0 is root: name the user root, with a "
                               "reason"))
    if model.workdir and (model.workdir + "/").startswith("/root/") and (
            user is None or user.name != "root"):
        # WORKDIR /root/... copied from a Dockerfile that ran as root: the folder is made
        # and chowned, but /root (mode 700) keeps every other user from reaching it by path
        runs_as = user.name if user is not None else "the image's user"
        found.append(SpecError(file, "workdir", f"{model.workdir} is under /root, which only "
                               f"root may enter: {runs_as} could not reach it by its path",
                               hint=f"use a folder of its own, e.g. /workspace"
                                    f"{model.workdir.removeprefix('/root')}"))
    found += install_problems(file, list(model.run))
    path = model.env.get("PATH")
    if path is not None and f"{VENV}/bin" not in path.split(":") and not re.search(r"\$\{?PATH\b", path):
        # the venv every image has: without it `python3` is the OS's, which has none of the
        # image's packages (a framework then reads as not installed)
        found.append(SpecError(file, "env.PATH", f"leaves out {VENV}/bin, where the image's "
                               "python3 and its packages are", hint=f"put yours before the "
                               f"image's: {path.split(':')[0] or '/opt/tools/bin'}:$PATH"))
    return found
