"""A `run:` step that installs packages by name is refused, with the key that takes them;
one that installs a file the family copied in is the step's own."""
from __future__ import annotations

import pytest

from imgkit.matrix.run_steps import install_problems


@pytest.mark.parametrize("step, said", [
    ("pip install requests", "installs requests with pip"),
    ("python3 -m pip install --no-cache-dir rich==13.9.4", "installs rich==13.9.4 with pip"),
    ('uv pip install "numpy<2"', "installs numpy<2 with pip"),
    ("apt-get update && apt-get install -y --no-install-recommends jq curl",
     "installs jq, curl with apt-get"),
    ("DEBIAN_FRONTEND=noninteractive apt install -y vim", "installs vim with apt"),
    ("sudo apt-get install -y ffmpeg", "installs ffmpeg with apt-get"),
    ("mkdir -p /opt/models\npip install huggingface-hub", "installs huggingface-hub with pip"),
    ("apt-get update \\\n && apt-get install -y jq", "installs jq with apt-get"),
])
def test_an_install_by_name_is_refused_with_the_key_that_takes_it(step: str, said: str) -> None:
    [problem] = install_problems("images/t.yaml", [step])
    assert problem.key == "run[0]" and problem.reason.startswith(said), problem
    assert ("`pip:`, pinned exactly" if " pip" in said else "in `apt:`") in (problem.hint or "")


@pytest.mark.parametrize("step", [
    "/opt/venv/bin/pip install --no-deps /opt/app/app.whl",
    "python3 -m pip install -e /srv/app",
    "pip install -r /opt/app/requirements.txt",
    "echo pip install x",
    "update-ca-certificates",
    "mkdir -p /opt/models\nchown ml: /opt/models",
    "sh -c 'unclosed",
])
def test_what_is_no_install_by_name_stays(step: str) -> None:
    assert install_problems("images/t.yaml", [step]) == []
