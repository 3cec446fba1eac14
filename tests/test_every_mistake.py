"""A team's broken copy of the matrix, with the ordinary mistakes a team makes spread over
several files: one `imgkit list` names every one of them, each with its file, line and
key, exit 2 and no traceback, and no engine needed to say so. Mistakes of the shape of a
file, of what a family asks for, and of what families make together are all collected
before anything stops."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .helpers.images import ROOT

FILES = {
    # an extension with a key typo, a bad uid, a reserved label, an unpinned requirement, a
    # bad port and a broken check file: a type error does not hide the rest
    "serving.yaml": """\
family: serving
extends: {family: paddle}
repostory: paddle-serving
tag: "{parent_tag}"
user: {name: ml, uid: -5}
labels: {org.opencontainers.image.version: "1.0"}
pip: ["numpy"]
ports: [0]
checks: checks/serving.yaml
""",
    "checks/serving.yaml": """\
schemaVersion: 2.0.0
commandTests:
  - name: answers
    comand: python3
""",
    # an unquoted version
    "torch-team.yaml": """\
family: torch-team
repository: team/torch
framework: torch
tag: "{framework_version}-cuda{cuda}"
axes:
  framework_version: ["2.10.0"]
  cuda: [12.8]
  cudnn: ["9.10"]
  nccl: ["2.27.5"]
""",
    # a list where a mapping goes, an unknown parent, nothing added
    "tools.yaml": """\
family: tools
extends: {family: nosuch}
repository: team/tools
tag: "{parent_tag}"
labels: [a, b]
""",
    # an unknown CUDA release
    "cuda-team.yaml": 'family: cuda-team\ncuda_libs: [cudart]\naxes:\n  cuda: ["11.9"]\n',
    # two families, one tag
    "twin-a.yaml": 'family: twin-a\nextends: {family: paddle}\nrepository: team/twin\n'
                   'tag: "{parent_tag}"\napt: [jq]\n',
    "twin-b.yaml": 'family: twin-b\nextends: {family: paddle}\nrepository: team/twin\n'
                   'tag: "{parent_tag}"\napt: [curl]\n',
    # a family name the bundled paddle.yaml already has
    "team-paddle.yaml": 'family: paddle\nextends: {family: jax}\nrepository: team/paddle2\n'
                        'tag: "{parent_tag}"\napt: [jq]\n',
    # two families that extend each other
    "loop-a.yaml": 'family: loop-a\nextends: {family: loop-b}\nrepository: team/la\n'
                   'tag: "{parent_tag}"\napt: [jq]\n',
    "loop-b.yaml": 'family: loop-b\nextends: {family: loop-a}\nrepository: team/lb\n'
                   'tag: "{parent_tag}"\napt: [jq]\n',
    # an extension of an extension on that ring: not on it, so not told it is
    "loop-c.yaml": 'family: loop-c\nextends: {family: loop-a}\nrepository: team/lc\n'
                   'tag: "{parent_tag}"\napt: [jq]\n',
    "self.yaml": 'family: self\nextends: {family: self}\nrepository: team/self\n'
                 'tag: "{parent_tag}"\napt: [jq]\n',
    # a check file whose GPU tests are too long to ride in the probe's container
    "long.yaml": 'family: long\nextends: {family: paddle}\nrepository: team/long\n'
                 'tag: "{parent_tag}"\napt: [jq]\nchecks: checks/long.yaml\n',
    "checks/long.yaml": "schemaVersion: 2.0.0\ngpuTests:\n" + "".join(
        f"  - name: step {n}\n    run: \"print({n})  # {'x' * 10_000}\"\n" for n in range(12)),
    # one point wrong three ways at once: a python jammy does not ship, a torch built for
    # another CUDA, no cuDNN or NCCL for it; and an extension of that family, which must not
    # be told it is in a cycle (its parent's own problems are said)
    "jammy-torch.yaml": 'family: jammy-torch\nframework: torch\nrepository: team/jt\n'
                        'tag: "{framework_version}"\naxes:\n  os: [jammy]\n  python: ["3.12"]\n'
                        '  framework_version: ["2.11.0"]\n  cuda: ["12.8"]\n',
    "jammy-extras.yaml": 'family: jammy-extras\nextends: {family: jammy-torch}\n'
                         'repository: team/jx\ntag: "{parent_tag}"\napt: [jq]\n',
    # the project's name for the framework, not its package's; a version cut short
    "pytorch-team.yaml": 'family: pytorch-team\nframework: pytorch\nrepository: team/pt\n'
                         'tag: "{framework_version}"\naxes:\n  framework_version: ["2.10.0"]\n'
                         '  cuda: ["12.8"]\n',
    "short-torch.yaml": 'family: short-torch\nframework: torch\nrepository: team/st\n'
                        'tag: "{framework_version}"\naxes:\n  framework_version: ["2.10"]\n'
                        '  cuda: ["12.8"]\n  cudnn: [default]\n  nccl: [default]\n',
    # values YAML read as another kind: a number where a list goes, a yes/no for text, a
    # port in quotes, a command as one string; a relative working folder
    "team-extras.yaml": 'family: team-extras\nextends: {family: paddle, cuda: 11.8}\n'
                        'repository: team/extras\ntag: "{parent_tag}-extras"\n'
                        'env: {DEBUG: true}\nports: ["8888"]\nworkdir: workspace\n'
                        'cmd: jupyter lab\n',
    # a working folder copied from a Dockerfile that ran as root: the user cannot reach it
    "rootdir.yaml": 'family: rootdir\nextends: {family: paddle}\nrepository: team/rootdir\n'
                    'tag: "{parent_tag}"\nworkdir: /root/app\napt: [jq]\n',
    # a package the stack below already pins, at another version (found when planned)
    "pinned.yaml": 'family: pinned\nextends: {family: paddle}\nrepository: team/pinned\n'
                   'tag: "{parent_tag}"\npip:\n  - einops==0.8.1\n  - paddlepaddle-gpu==2.6.1\n',
    # an exclude whose version is cut short: it leaves nothing out
    "idle-exclude.yaml": 'family: idle-exclude\nframework: torch\nrepository: team/ie\n'
                         'tag: "{framework_version}-cuda{cuda}"\naxes:\n'
                         '  framework_version: ["2.10.0", "2.7.0"]\n  cuda: ["12.8", "12.6"]\n'
                         '  cudnn: [default]\n  nccl: [default]\nexclude:\n'
                         '  - {cuda: "12.6", framework_version: "2.10.0"}\n'
                         '  - {cuda: "12.8", framework_version: "2.7"}\n',
    # a misspelt key beside an impossible point (an unknown key changes no point: both
    # said), and an extension whose pin is wrong on the family's one possible point
    "typo-torch.yaml": 'family: typo-torch\ndescripton: torch\nframework: torch\n'
                       'repository: team/tt\ntag: "{framework_version}-cuda{cuda}"\naxes:\n'
                       '  framework_version: ["2.10.0"]\n  cuda: ["12.1", "12.8"]\n'
                       '  cudnn: ["9.10"]\n  nccl: [default]\n',
    "typo-extras.yaml": 'family: typo-extras\nextends: {family: typo-torch}\n'
                        'repository: team/tx\ntag: "{parent_tag}"\npip: ["torch==2.5.1"]\n',
    # files as Dockerfile's COPY takes them: into a folder, a folder; and one not there
    "copies.yaml": 'family: copies\nextends: {family: paddle}\nrepository: team/copies\n'
                   'tag: "{parent_tag}"\nfiles:\n  app/serve.py: /opt/app/serve.py\n'
                   '  conf: /etc/app/conf\n  checks: /etc/app/checks\n'
                   '  checks/serving.yaml: /etc/app/\n',
    # mistakes in keys that do not decide the points (a workdir, a pin given twice), a CUDA
    # release YAML read as a number, and points impossible two ways: each said in one run,
    # and an extension's good pin held to the parent's stack beside its bad one
    "busy-torch.yaml": 'family: busy-torch\nframework: torch\nrepository: team/bt\n'
                       'tag: "{framework_version}-cuda{cuda}-{os}"\naxes:\n'
                       '  os: [bookworm, noble]\n  framework_version: ["2.10.0", "2.9.1"]\n'
                       '  cuda: ["12.8", 12.6]\n  cudnn: ["9.10"]\n  nccl: [default]\n'
                       'workdir: /root/work\npip: ["Pillow==10.4.0", "pillow==11.0.0"]\n'
                       'checks: checks/busy.yaml\n',
    "checks/busy.yaml": "schemaVersion: 2.0.0\ncommandTests:\n  - name: v\n"
                        "    command: uvicorn --version\n",
    "busy-extras.yaml": 'family: busy-extras\nextends: {family: busy-torch}\n'
                        'repository: team/bx\ntag: "{parent_tag}"\n'
                        'pip: ["uvicorn>=0.30", "torch==2.5.1"]\nports: ["9090/tcp"]\n'
                        'run: ["pip install requests && /opt/venv/bin/pip install /opt/app.whl"]\n',
    # a check file that is not there
    "gone.yaml": 'family: gone\nextends: {family: paddle}\nrepository: team/gone\n'
                 'tag: "{parent_tag}"\napt: [jq]\nchecks: checks/missing.yaml\n',
}

# (file, key, words): every mistake above, as `imgkit list` must name it
EXPECTED = [
    ("serving.yaml", "repostory", "unknown key"),
    ("serving.yaml", "repository", "required"),
    ("serving.yaml", "user.uid", "greater than or equal to 0"),
    ("serving.yaml", "labels.org.opencontainers.image.version", "imgkit writes"),
    ("serving.yaml", "pip[0]", "not pinned"),
    ("serving.yaml", "ports[0]", "not a port"),
    ("checks/serving.yaml", "commandTests[0].comand", "not a key"),
    ("checks/serving.yaml", "commandTests[0].command", "required"),
    ("torch-team.yaml", "axes.cuda[0]", "read as a number"),
    ("tools.yaml", "labels", "must be a mapping"),
    ("tools.yaml", "extends.family", "unknown family 'nosuch'"),
    ("tools.yaml", "(top)", "adds something"),
    ("cuda-team.yaml", "axes", "unknown CUDA version '11.9'"),
    ("twin-b.yaml", "tag", "also made by family twin-a"),
    ("team-paddle.yaml", "family", "also declared in"),
    ("loop-a.yaml", "extends.family", "extend each other"),
    ("loop-b.yaml", "extends.family", "extend each other (loop-b → loop-a → loop-b)"),
    ("self.yaml", "extends.family", "self extends itself"),
    ("checks/long.yaml", "gpuTests", "more than one of its variables may hold"),
    ("gone.yaml", "checks", "missing.yaml is not a file"),
    ("team-extras.yaml", "extends.cuda", "must be a list, got the number 11.8"),
    ("team-extras.yaml", "env.DEBUG", "got a yes/no (true)"),
    ("team-extras.yaml", "ports[0]", "'8888' is text, not a number"),
    ("team-extras.yaml", "workdir", "'workspace' is not a valid absolute path"),
    ("team-extras.yaml", "cmd", "must be a list, got the text 'jupyter lab'"),
    ("pinned.yaml", "pip[1]", "would replace paddlepaddle-gpu==2.6.2"),
    ("rootdir.yaml", "workdir", "/root/app is under /root, which only root may enter"),
    ("idle-exclude.yaml", "exclude[1].framework_version", "'2.7' is not a value of axes."
     "framework_version (2.10.0, 2.7.0): the point leaves nothing out"),
    ("jammy-torch.yaml", "axes", "python 3.12 is not what jammy ships"),
    ("jammy-torch.yaml", "axes", "torch 2.11.0 is built for CUDA 13.0, not 12.8"),
    ("jammy-torch.yaml", "axes", "torch 2.11.0 needs cuDNN and NCCL"),
    ("pytorch-team.yaml", "axes", "unknown framework 'pytorch' (did you mean 'torch'?)"),
    ("short-torch.yaml", "axes", "unknown torch version '2.10' (did you mean '2.10.0'?)"),
    ("typo-torch.yaml", "descripton", "unknown key"),
    ("typo-torch.yaml", "axes", "torch 2.10.0 is built for CUDA 12.8, not 12.1"),
    ("typo-extras.yaml", "pip[0]", "torch==2.5.1 would replace torch==2.10.0"),
    ("copies.yaml", "files.app/serve.py", "is not a file"),
    ("copies.yaml", "files.conf", "images/conf is not a file"),
    ("busy-torch.yaml", "workdir", "/root/work is under /root"),
    ("checks/busy.yaml", "commandTests[0].command", "is a command line"),
    ("busy-torch.yaml", "pip[1]", "pillow is pinned twice"),
    ("busy-torch.yaml", "axes.cuda[1]", "12.6 was read as a number"),
    ("busy-torch.yaml", "axes", "3 more points like it): unknown torch version '2.9.1'"),
    ("busy-torch.yaml", "axes", "torch 2.10.0 is built for CUDA 12.8, not 12.6"),
    ("busy-extras.yaml", "pip[0]", "'uvicorn>=0.30' is not pinned"),
    ("busy-extras.yaml", "ports[0]", "'9090/tcp' is not a port"),
    ("busy-extras.yaml", "pip[1]", "torch==2.5.1 would replace torch==2.10.0"),
    ("busy-extras.yaml", "run[0]", "installs requests with pip, past the family's `pip:` list"),
    ("copies.yaml", "files.checks", "images/checks is a folder"),
    ("copies.yaml", "files.checks/serving.yaml", "'/etc/app/' is not a valid absolute path"),
]


def test_one_list_names_every_mistake_of_a_broken_matrix(tmp_path: Path) -> None:
    images = tmp_path / "images"
    shutil.copytree(ROOT / "images", images, ignore=shutil.ignore_patterns("locks"))
    for name, text in FILES.items():
        (images / name).parent.mkdir(parents=True, exist_ok=True)
        (images / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMGKIT_")}
    done = subprocess.run([sys.executable, "-m", "imgkit", "list", "--images", "images"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**env, "DOCKER_HOST": "unix:///nonexistent/docker.sock",
                               "COLUMNS": "300"})
    said = done.stderr
    assert done.returncode == 2 and "Traceback" not in said, said
    lines = [line.strip() for line in said.splitlines() if line.startswith("  images/")]
    missing = []
    for file, key, words in EXPECTED:
        pattern = re.compile(rf"^images/{re.escape(file)}:\d+: {re.escape(key)}[: (].*{re.escape(words)}")
        if not any(pattern.search(line) for line in lines):
            missing.append((file, key, words))
    assert not missing, (missing, said)
    for bystander in ("jammy-extras.yaml", "loop-c.yaml"):   # its parent's problem is said
        assert bystander not in said, said
    # four points of one unknown version: one entry leaves them all out
    assert 'leave them out: exclude: [{framework_version: "2.9.1"}]' in said, said
    # a destination written as a folder: the file's own path in it
    assert "the file's own path in the image: '/etc/app/serving.yaml'" in said, said
    assert len({(f, k) for f, k, _ in EXPECTED}) >= 12
