"""The family file format, published and enforced as one: the JSON Schema and docs/matrix.md
come from the models imgkit validates with, a real JSON Schema validator agrees with imgkit
on good and bad files, and every problem of every file is reported in one run."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from imgkit.cli import app
from imgkit.errors import SpecError, SpecErrors
from imgkit.matrix.family_model import KINDS
from imgkit.matrix.schema import family_schema, reference_page, schema_text
from imgkit.matrix.spec import load_spec, parse_family

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()
VALIDATOR = jsonschema.Draft202012Validator(family_schema())

# one family a team might write, with a mistake on most lines
BROKEN_TEAM = """\
family: team
framework: torch
repository: team/torch
tag: "{framework_version}-cuda{cuda}"
files: {"config.py": /etc/team/config.py}
axes:
  cuda: [12.8, "12.9"]
  gpu: [h100]
  framework_version: ["2.10.0"]
"""
BROKEN_EXTENSION = """\
family: team-ext
extends: {family: team}
repository: team/ext
pip: ["six>=1"]
ports: [0]
"""


def test_the_published_schema_and_reference_are_what_imgkit_enforces() -> None:
    assert (ROOT / "docs" / "matrix.schema.json").read_text() == schema_text(), (
        "docs/matrix.schema.json is stale: run make docs")
    assert (ROOT / "docs" / "matrix.md").read_text() == reference_page(), (
        "docs/matrix.md is stale: run make docs")
    jsonschema.Draft202012Validator.check_schema(family_schema())


def test_every_key_is_explained() -> None:
    for model in KINDS.values():
        for key, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{key} has no description"
            assert f"`{key}`" in reference_page()


@pytest.mark.parametrize("path", sorted((ROOT / "images").glob("*.yaml")), ids=lambda p: p.name)
def test_the_bundled_families_pass_the_schema(path: Path) -> None:
    assert not [e.message for e in VALIDATOR.iter_errors(yaml.safe_load(path.read_text()))]


@pytest.mark.parametrize("raw", [
    {"family": "x", "axes": {"cuda": ["12.8"]}, "tf32": "on"},          # a framework's key
    {"family": "x", "axes": {"cuda": [12.8]}},                           # a number
    {"family": "x", "axes": {"cuda": ["12.8"], "gpu": ["h100"]}},       # no such axis
    {"family": "x", "axes": {"os": ["bookworm"]}},                       # no cuda
    {"family": "x", "framework": "torch", "axes": {"cuda": ["12.8"]}},  # no repository, tag
    {"family": "x", "extends": {"family": "y"}, "repository": "r", "pip": ["six>=1"]},
    {"family": "x", "extends": {"family": "y", "gpu": ["a"]}, "repository": "r", "apt": ["a"]},
    {"family": "x", "extends": {"family": "y"}, "repository": "r", "ports": [0]},
    {"family": "Bad Name", "axes": {"cuda": ["12.8"]}},
])
def test_the_schema_and_imgkit_refuse_the_same_files(raw: dict[str, Any]) -> None:
    assert list(VALIDATOR.iter_errors(raw)), "the schema let it pass"
    with pytest.raises(SpecError):
        parse_family("x.yaml", raw)


def matrix(tmp_path: Path, **files: str) -> Path:
    images = tmp_path / "images"
    shutil.copytree(ROOT / "images", images)
    for name, text in files.items():
        (images / f"{name}.yaml").write_text(text)
    return images


def test_every_problem_of_every_file_is_reported_at_once(tmp_path: Path) -> None:
    images = matrix(tmp_path, team=BROKEN_TEAM, team_ext=BROKEN_EXTENSION)
    with pytest.raises(SpecErrors) as info:
        load_spec(images)
    found = {(Path(p.file).name, p.line, p.key) for p in info.value.problems}
    assert found == {("team.yaml", 5, "files"), ("team.yaml", 7, "axes.cuda[0]"),
                     ("team.yaml", 8, "axes.gpu"), ("team_ext.yaml", 4, "pip[0]"),
                     ("team_ext.yaml", 5, "ports[0]")}
    result = runner.invoke(app, ["list", "--images", str(images)])
    assert result.exit_code == 2
    out = result.output
    assert "5 problems in 2 files" in out
    assert "team.yaml:5: files: not a key of a framework family" in out
    assert "`files` belongs to an extension family" in out     # where the key does belong
    assert "team.yaml:7: axes.cuda[0]: 12.8 was read as a number" in out
    assert "quote versions" in out and "Traceback" not in out


def listed(tmp_path: Path, team: str) -> Any:
    """`imgkit list` of a matrix of one family file, team.yaml."""
    images = tmp_path / "images"
    images.mkdir()
    (images / "team.yaml").write_text(team)
    return runner.invoke(app, ["list", "--images", str(images)], terminal_width=200)


def test_a_version_yaml_shortened_is_quoted_as_it_was_typed(tmp_path: Path) -> None:
    # `9.10` unquoted is the number 9.1: the hint must not tell the team to write '9.1'
    result = listed(tmp_path, 'family: team\nframework: torch\nrepository: team/torch\n'
                              'tag: "{framework_version}-cuda{cuda}"\naxes:\n'
                              '  framework_version: ["2.10.0"]\n  cuda: ["12.8"]\n  cudnn: [9.10]\n')
    assert result.exit_code == 2, result.output
    assert "team.yaml:8: axes.cudnn[0]: 9.10 was read as the number 9.1" in result.output
    assert "keeps them as text: '9.10'" in result.output and "'9.1'" not in result.output


def test_a_refused_name_is_explained_in_words_with_what_would_do(tmp_path: Path) -> None:
    out = " ".join(listed(tmp_path, 'family: Team-Torch\nframework: torch\nrepository: ml/Team\n'
                                    'tag: "{framework_version}"\naxes:\n  os: [ubuntu22.04]\n'
                                    '  framework_version: ["2.10.0"]\n  cuda: ["12.8"]\n'
                          ).output.split())
    assert "allowed pattern" not in out, out                       # words, not a regex
    assert "starting with a letter, at most 40 characters; 'team-torch' would do" in out
    assert "such as ml/pytorch; 'ml/team' would do" in out
    assert "'ubuntu22.04' is not a valid os value" in out and "jammy or noble (Ubuntu)" in out


def test_a_registry_with_a_port_in_the_repository_says_where_the_registry_goes(
        tmp_path: Path) -> None:
    """`repository: registry.corp:5000/ml/torch`, as a team's old Dockerfiles tagged it: the
    registry is named when the images are pushed."""
    out = " ".join(listed(tmp_path, 'family: team\nframework: torch\n'
                                    'repository: registry.corp:5000/ml/torch\n'
                                    'tag: "{framework_version}"\naxes:\n'
                                    '  framework_version: ["2.10.0"]\n  cuda: ["12.8"]\n'
                          ).output.split())
    assert "'registry.corp:5000/ml/torch' is not a valid image repository" in out, out
    assert ("imgkit publish --to registry.corp:5000/..., imgkit ci --registry "
            "registry.corp:5000/...; 'ml/torch' would do") in out, out


@pytest.mark.parametrize("line, hint", [
    ("expose: [8888]", "did you mean 'ports'? (Dockerfile's EXPOSE)"),
    ("copy: {a.py: /a.py}", "did you mean 'files'? (Dockerfile's COPY, a file a line)"),
    ("from: paddle:2.6.2", "did you mean 'extends'? (Dockerfile's FROM"),
    ("healthcheck: {test: [CMD, curl]}", "Kubernetes ignores it; give your Deployment a liveness"),
    ("environment: {A: b}", "did you mean 'env'? (ENV)"),
    ("arg: {X: 1}", "there are no build arguments to pass"),
])
def test_a_dockerfiles_word_for_a_key_names_the_key_it_is_here(
        tmp_path: Path, line: str, hint: str) -> None:
    """A team translating its Dockerfiles writes their words; none is near imgkit's key by
    spelling, so the hint listed every key of the kind."""
    out = " ".join(listed(tmp_path, 'family: team\nextends: {family: paddle}\nrepository: ml/team\n'
                                    f'tag: "{{parent_tag}}"\napt: [jq]\n{line}\n').output.split())
    assert f"{line.split(':')[0]}: unknown key" in out and hint in out, out


def test_a_value_of_another_kind_is_named_as_yaml_read_it_with_how_to_write_it(
        tmp_path: Path) -> None:
    out = listed(tmp_path, 'family: team\nframework: torch\nrepository: ml/team\n'
                           'tag: "{framework_version}"\naxes:\n  framework_version: ["2.10.0"]\n'
                           '  cuda: "12.8"\nenv: {DEBUG: yes}\nports: ["8888"]\nworkdir: workspace\n'
                           'cmd: jupyter lab --no-browser\n').output
    said = {line.split(": ", 2)[1]: line for line in out.splitlines() if "team.yaml:" in line}
    hints = " ".join(out.split())
    assert "got the text '12.8'" in said["axes.cuda"] and 'write it as a list: ["12.8"]' in hints
    assert "got a yes/no (true)" in said["env.DEBUG"]
    assert "quote it as the file spells it, e.g. 'true' or 'yes'" in hints
    assert "write the port unquoted: 8888" in hints
    assert "'/workspace' would do" in hints
    assert 'write a list of words: ["jupyter", "lab", "--no-browser"]' in hints
    assert "WrittenFloat" not in out and "bool" not in out


def test_a_broken_file_does_not_block_a_selection_that_leaves_it_out(tmp_path: Path) -> None:
    images = matrix(tmp_path, team=BROKEN_TEAM, team_ext=BROKEN_EXTENSION)
    result = runner.invoke(app, ["list", "--images", str(images), "--only", "paddle:*"])
    assert result.exit_code == 0, result.output
    assert "paddle:2.6.2-gpu-cuda11.8-cudnn8" in result.output
    assert "warning:" in result.output and "team.yaml: 3 problems; left out" in result.output
    # asked for, or unclear (a glob on the tag alone): every problem, exit 2
    for glob in ("team/torch:*", "2.10.0*"):
        result = runner.invoke(app, ["list", "--images", str(images), "--only", glob])
        assert result.exit_code == 2 and "5 problems" in result.output, (glob, result.output)


def test_a_good_family_on_a_broken_one_is_left_out_with_it(tmp_path: Path) -> None:
    good_extension = BROKEN_EXTENSION.replace('"six>=1"', '"six==1.16.0"').replace("[0]", "[80]")
    images = matrix(tmp_path, team=BROKEN_TEAM, team_ext=good_extension)
    result = runner.invoke(app, ["list", "--images", str(images), "--only", "paddle:*"])
    assert result.exit_code == 0, result.output
    assert "team_ext.yaml: left out of this run: it extends the broken family team" in result.output
    result = runner.invoke(app, ["list", "--images", str(images), "--only", "team/ext:*"])
    assert result.exit_code == 2 and "3 problems in 1 file" in result.output


def test_a_family_file_passed_as_the_matrix_folder_is_named(tmp_path: Path) -> None:
    result = runner.invoke(app, ["list", "--images", str(ROOT / "images" / "paddle.yaml")])
    assert result.exit_code == 2
    assert "is a family file, not the matrix folder" in result.output
    assert f"--images {ROOT / 'images'}" in " ".join(result.output.split())


def test_schema_prints_the_schema() -> None:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    assert json.loads(result.output) == family_schema()


def test_what_the_shape_cannot_say_is_said_in_the_same_run() -> None:
    raw = yaml.safe_load(BROKEN_TEAM)
    raw["include"] = [{"cuda": "12.9"}, {}]
    raw["platforms"] = ["linux/amd64"]
    raw["axes"]["platform"] = ["linux/amd64"]
    with pytest.raises(SpecErrors) as info:
        parse_family("team.yaml", raw)
    found = {(p.key, p.reason) for p in info.value.problems}
    assert ("axes.cuda[0]", "12.8 was read as a number") in found            # the shape's
    assert ("include[0]", "missing framework_version, platform") in found     # beyond it
    assert ("include[1]", "must name at least one axis") in found
    assert ("platforms", "the platforms are given twice") in found


def test_a_misspelt_key_does_not_hide_the_files_impossible_points(tmp_path: Path) -> None:
    # an unknown key cannot change a family's points: they are planned in the same run, and
    # so are the points of a family that extends it; a file of the wrong shape is not planned
    team = ('family: team\ndescripton: torch for the team\nframework: torch\n'
            'repository: team/torch\ntag: "{framework_version}-cuda{cuda}"\naxes:\n'
            '  framework_version: ["2.10.0"]\n  cuda: ["12.1", "12.8"]\n  cudnn: ["9.10"]\n'
            '  nccl: [default]\n')
    extension = ('family: team-ext\nextends: {family: team}\nrepository: team/ext\n'
                 'tag: "{parent_tag}"\npip: ["torch==2.5.1"]\n')
    shapeless = team.replace("family: team\n", "family: other\n").replace(
        "team/torch", "team/other").replace('cuda: ["12.1", "12.8"]', 'cuda: "12.1"')
    images = matrix(tmp_path, team=team, team_ext=extension, other=shapeless)
    result = runner.invoke(app, ["list", "--images", str(images)], terminal_width=200)
    assert result.exit_code == 2, result.output
    said = [(Path(where).name, key.split(" ")[0]) for where, key, _ in
            (line.strip().split(": ", 2) for line in result.output.splitlines() if ".yaml:" in line)]
    assert said == [("other.yaml:2", "descripton"), ("other.yaml:8", "axes.cuda"),
                    ("team.yaml:2", "descripton"), ("team.yaml:6", "axes"),
                    ("team_ext.yaml:5", "pip[0]")], result.output
    assert "torch 2.10.0 is built for CUDA 12.8, not 12.1" in result.output
    assert "Traceback" not in result.output
    # the stand-in only speaks: a selection that leaves the file out still steps round it
    result = runner.invoke(app, ["list", "--images", str(images), "--only", "paddle:*"])
    assert result.exit_code == 0 and "team/torch" not in result.output, result.output
