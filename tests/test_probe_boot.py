"""How verify ships its probe: the zipped package as base64 in the container's environment,
read back by BOOT. Linux execs no program with one variable of 128 KiB or more
(MAX_ARG_STRLEN), and the probe's zip had grown to 121 KiB of base64 in one: each part stays
well under the limit, however large the probe grows. The same exec limit holds for any
process, so these run BOOT on this host; test_docker_verify.py runs a grown probe in a
container."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Iterator

import pytest

from imgkit.shipped import probe_zip
from imgkit.verify.run import BOOT, probe_variables

MAX_ARG_STRLEN = 128 << 10     # the kernel's limit for one argument or NAME=value, NUL included


def grown_zip(padding: int) -> bytes:
    """A probe package that prints its own size and arguments, with `padding` bytes of
    data that do not compress."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("imgkit_probe/__init__.py", "")
        archive.writestr("imgkit_probe/__main__.py",
                         "import os, sys\nprint('probe', os.path.getsize('/tmp/imgkit_probe.zip'), "
                         "sys.argv[1:], sorted(k for k in os.environ if k.startswith('IMGKIT_PROBE')))\n")
        archive.writestr("imgkit_probe/padding.bin", os.urandom(padding))
    return buf.getvalue()


@pytest.fixture(autouse=True)
def no_zip_left() -> Iterator[None]:
    """BOOT writes the zip where it runs (a container's /tmp): not left on this host."""
    yield
    Path("/tmp/imgkit_probe.zip").unlink(missing_ok=True)


def boot(environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BOOT, "--no-gpu"], capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], "HOME": "/tmp", **environment}, timeout=60)


@pytest.mark.parametrize("padding", [0, 200_000, 1_000_000])
def test_a_probe_of_any_size_boots_from_parts_under_the_limit(padding: int) -> None:
    zipped = grown_zip(padding)
    variables = probe_variables(zipped)
    assert all(len(f"{name}={value}") + 1 < MAX_ARG_STRLEN for name, value in variables.items())
    done = boot(variables)
    assert done.returncode == 0, done.stderr
    # the whole zip back, the probe's own arguments, and no part left for the team's tests
    assert done.stdout.split("\n")[0] == f"probe {len(zipped)} ['--no-gpu'] []"


def test_one_variable_of_that_size_would_not_even_start() -> None:
    """What the parts avoid: the kernel refuses the exec itself."""
    whole = "".join(probe_variables(grown_zip(200_000)).values())
    with pytest.raises(OSError, match="Argument list too long"):
        boot({"IMGKIT_PROBE": whole})


def test_the_shipped_probe_is_in_parts_each_under_the_limit() -> None:
    variables = probe_variables(probe_zip())
    assert list(variables)[0] == "IMGKIT_PROBE"
    assert max(len(v) for v in variables.values()) <= MAX_ARG_STRLEN // 2
