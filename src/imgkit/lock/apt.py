"""The apt half of a lock: the exact version of every Debian/Ubuntu package an image's apt
steps install or upgrade, resolved by apt itself (`apt-get -s`) in a throwaway container of
the base image, against the image's own apt sources as they are today."""
from __future__ import annotations

import re
from typing import Sequence

from ..engine import Engine, RunSpec
from ..errors import HostError

APT_DIR = "/tmp/imgkit-apt"
# a root filesystem that stays read-only: apt's lists and caches go to the container's /tmp
APT_OPTIONS = (f"-o Dir::State::Lists={APT_DIR}/lists -o Dir::Cache={APT_DIR}/cache "
               "-o APT::Sandbox::User=root -o Debug::NoLocking=1")
APT_PREPARE = (f"mkdir -p {APT_DIR}/lists/partial {APT_DIR}/cache/archives/partial && "
               f"apt-get -qq {APT_OPTIONS} update >&2")
INST = re.compile(r"^Inst (\S+) (?:\[[^\]]*\] )?\((\S+) ")


def simulate(engine: Engine, base: str, requests: Sequence[Sequence[str]],
             timeout: float = 600) -> list[dict[str, str]]:
    """For each set of packages: name -> version of everything apt would install or upgrade
    on `base` to get them (upgrades included), in one container."""
    steps = [APT_PREPARE,
             f"UP=$(apt list --upgradable {APT_OPTIONS} 2>/dev/null | tail -n +2 | cut -d/ -f1)"]
    for i, packages in enumerate(requests):
        steps.append(f"echo '--- {i}' && apt-get -s -y --no-install-recommends {APT_OPTIONS} "
                     f"install $UP {' '.join(packages)}")
    run = engine.run_container(RunSpec(image=base, entrypoint=("/bin/sh", "-c"),
                                       command=(" && ".join(steps),), user="0", network=True,
                                       timeout=timeout, memory="2g"))
    if run.timed_out or run.exit_code != 0:
        raise HostError(f"apt could not resolve on {base}: {run.stderr.strip()[-400:]}",
                        hint="is the mirror reachable from the Docker bridge?")
    return parse_simulation(run.stdout)


def parse_simulation(text: str) -> list[dict[str, str]]:
    """`--- N` then apt-get -s's `Inst NAME [OLD] (NEW ...)` lines, per request."""
    parts = re.split(r"^--- \d+$", text, flags=re.MULTILINE)[1:]
    return [{m.group(1): m.group(2) for m in map(INST.match, part.splitlines()) if m}
            for part in parts]
