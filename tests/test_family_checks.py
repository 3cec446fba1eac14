"""The check file a family names, found by the family's name as verify sees it on an image's
label: whatever YAML spelling the family file uses, and without PyYAML when no file could
name one (what a plain verify inside a project pays before its container starts). The whole
path through verify: test_docker_declared.py."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from imgkit.matrix.family_checks import family_checks


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_the_family_files_check_file_is_found_however_the_file_spells_it(tmp_path: Path) -> None:
    images = write(tmp_path / "images", {
        "a.yaml": "family: app\nchecks: checks/app.yaml\n",
        "b.yml": "{'family': \"svc\", \"checks\": 'checks/svc.yaml'}\n",
        "c.yaml": "family: plain\naxes:\n  cuda: ['12.8']\n",
        "d.yaml": "family: [broken\nchecks: x\n",
    })
    assert family_checks(images, "app") == images / "checks/app.yaml"
    assert family_checks(images, "svc") == images / "checks/svc.yaml"
    assert family_checks(images, "plain") is None        # declared, names no check file
    assert family_checks(images, "other") is None        # declared nowhere
    assert family_checks(tmp_path / "missing", "app") is None


def test_a_broken_or_undecodable_file_is_passed_over(tmp_path: Path) -> None:
    """Read before the file that answers: neither stops verify (`imgkit list` says what is
    wrong with them)."""
    images = write(tmp_path / "images", {"0-broken.yaml": "family: app\nchecks: [x\n",
                                         "z.yaml": "family: app\nchecks: checks/app.yaml\n"})
    (images / "1-latin1.yaml").write_bytes("# caf\u00e9\nfamily: app\nchecks: c.yaml\n".encode("latin-1"))
    assert family_checks(images, "app") == images / "checks/app.yaml"


def test_a_file_that_only_mentions_the_family_does_not_answer_for_it(tmp_path: Path) -> None:
    """An extension family names its parent's family in its text; the parent's own file,
    which names no check file, still decides for the parent."""
    images = write(tmp_path / "images", {
        "base.yaml": "family: base\n",
        "ext.yaml": "family: base-tools\nextends: base\nchecks: checks/tools.yaml\n",
    })
    assert family_checks(images, "base") is None
    assert family_checks(images, "base-tools") == images / "checks/tools.yaml"


def test_no_yaml_is_parsed_when_no_file_could_name_a_check_file(tmp_path: Path) -> None:
    images = write(tmp_path / "images", {"a.yaml": "family: app\n",
                                         "b.yaml": "family: svc\nchecks: c.yaml\n",
                                         "c.yaml": "family: app-tools\nchecks: t.yaml\n"})
    probe = ("import sys; from pathlib import Path; "
             "from imgkit.matrix.family_checks import family_checks as f; "
             "print(f(Path(sys.argv[1]), sys.argv[2]), 'yaml' in sys.modules)")
    asked = {family: subprocess.run([sys.executable, "-c", probe, str(images), family],
                                    capture_output=True, text=True, check=True).stdout.split()
             for family in ("app", "svc", "app-tools")}
    assert asked["app"] == ["None", "False"]
    assert asked["svc"] == [str(images / "c.yaml"), "True"]
    assert asked["app-tools"] == [str(images / "t.yaml"), "True"]   # "app" inside it: no answer for app
