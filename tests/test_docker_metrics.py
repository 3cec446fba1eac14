"""verify --metrics on real images: the file a textfile collector reads (promtool passes
it), and the verdicts pushed to a real Pushgateway that a real Prometheus scrapes; a
PromQL query lists every image verified with its true verdict (the exit code's)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .helpers.images import MiniStack
from .helpers.metrics import value
from .helpers.monitoring import need_tools, prometheus, promtool, pushgateway, query_until

pytestmark = pytest.mark.docker
IMGKIT = [sys.executable, "-m", "imgkit"]


def verify(image: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*IMGKIT, "verify", image, "--gpus", "none", *extra],
                          capture_output=True, text=True, timeout=600)


def test_verdicts_reach_prometheus_through_a_pushgateway(mini_stack: MiniStack, tmp_path: Path) -> None:
    need_tools()
    images = (mini_stack.python, mini_stack.mini)
    with pushgateway(tmp_path / "pg") as gateway, prometheus(tmp_path / "prom", gateway) as prom:
        codes = {}
        for image in images:
            out = tmp_path / f"{image.rpartition('/')[2]}.prom"
            done = verify(image, "--metrics", str(out))
            assert done.returncode in (0, 1), done.stdout + done.stderr
            codes[image] = done.returncode
            checked = promtool("check", "metrics", stdin=out.read_text())
            assert checked.returncode == 0, checked.stdout + checked.stderr
            assert value(out.read_text(), "imgkit_verify_passed", image=image) == float(done.returncode == 0)
            assert value(out.read_text(), "imgkit_verify_gpu_verified", image=image) == 0
            pushed = verify(image, "--metrics", gateway)
            assert pushed.returncode == done.returncode, pushed.stdout + pushed.stderr
        result = query_until(prom, 'imgkit_verify_passed{job="imgkit_verify"}', len(images))
    seen = {r["metric"]["image"]: r["value"][1] for r in result}
    assert seen == {image: "1" if code == 0 else "0" for image, code in codes.items()}
    assert codes[mini_stack.mini] == 0       # the CUDA image passes without a GPU (GPU unverified)


def test_a_pushgateway_that_is_down_is_blamed_after_the_verdict(mini: str, tmp_path: Path) -> None:
    from .helpers.registry import free_port
    url = f"http://127.0.0.1:{free_port()}"
    done = verify(mini, "--metrics", url, "--json", str(tmp_path / "v.json"))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "PASSED without a GPU" in done.stdout                      # the verdict was said
    assert (tmp_path / "v.json").is_file()                             # and written
    assert f"could not be pushed to the Pushgateway at {url}" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
