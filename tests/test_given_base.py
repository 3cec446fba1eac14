"""A team's own base (`base:`): what the image holds, read as data, becomes the OS release
its family builds on; what the family asks for against it is checked before anything runs.
The reading itself, against the real engine: test_docker_base.py."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from imgkit.errors import CompatError, HostError, ImgkitError, SpecError
from imgkit.matrix import compat
from imgkit.matrix.given_base import BaseFacts, base_name, facts_from, os_release_of, parse_probe
from imgkit.matrix.load import with_bases
from imgkit.matrix.plan import Settings, make_plan
from imgkit.matrix.spec import load_spec

DIGEST = "sha256:" + "ab" * 32
NOBLE_PROBE = """id=ubuntu
like=debian
codename=noble
version=24.04
pretty=Ubuntu 24.04.1 LTS
glibc=glibc 2.39
python=
lib=/usr/local/cuda/lib64/libcudart.so.12
lib=/usr/local/cuda/lib64/libcudart.so.12.4.127
lib=/usr/local/cuda/lib64/libcublasLt.so.12.4.5.8
lib=/usr/local/cuda/lib64/libcublas.so.12.4.5.8
lib=/usr/local/cuda/lib64/libnpps.so.12.2.5.30
"""


def facts(ref: str = "registry.example.com/golden/cuda:12.4-runtime", *, cuda_env: str = "",
          probe: str = NOBLE_PROBE) -> BaseFacts:
    env = {"CUDA_VERSION": cuda_env} if cuda_env else {}
    repository = ref.split("@")[0].rsplit(":", 1)[0]
    return facts_from(ref, f"{repository}@{DIGEST}", "sha256:" + "1" * 64, env, parse_probe(probe))


@pytest.mark.parametrize("ref, name", [
    ("nvcr.io/nvidia/cuda:12.8.1-runtime-ubuntu24.04", "cuda-12.8.1-runtime-ubuntu24.04"),
    ("127.0.0.1:5000/golden/ubuntu:24.04", "ubuntu-24.04"),
    ("golden", "golden-latest"),
    (f"registry.example.com/Golden@{DIGEST}", "golden-abababababab"),
])
def test_a_base_names_its_layers_by_its_last_path_part_and_tag(ref: str, name: str) -> None:
    assert base_name(ref) == name


def test_what_the_image_holds_is_read_from_its_answers() -> None:
    found = facts()
    assert (found.os_id, found.codename, found.version, found.glibc) == ("ubuntu", "noble", "24.04", "2.39")
    assert found.python is None
    assert found.cuda == "12.4.127"                    # the library's own version, most exact name
    assert found.cuda_libs == (("cublas", "12.4.5.8"), ("cudart", "12.4.127"))   # npp: not a layer's
    assert facts(cuda_env="12.4.1").cuda == "12.4.1"   # NVIDIA's ENV, where it is set, first


def test_a_base_becomes_an_os_release_built_on_by_digest() -> None:
    known = compat.load().os
    release = os_release_of(facts(), known)
    assert release.given and release.image == f"registry.example.com/golden/cuda@{DIGEST}"
    assert release.python == known["noble"].python     # no python3 in it: its release's
    assert release.title == "Ubuntu 24.04 (noble)" and release.glibc == "2.39"
    with_python = os_release_of(facts(probe=NOBLE_PROBE.replace("python=", "python=3.11")), known)
    assert with_python.python == "3.11"                # its own python3 wins


@pytest.mark.parametrize("probe, said", [
    ("id=alpine\npretty=Alpine Linux v3.20\n", "is Alpine Linux v3.20, not Debian or Ubuntu based"),
    ("id=ubuntu\ncodename=focal\npretty=Ubuntu 20.04\n", "has no python3, and imgkit does not know"),
])
def test_a_base_imgkit_cannot_build_on_is_refused_with_the_reason(probe: str, said: str) -> None:
    with pytest.raises(CompatError, match=said):
        os_release_of(facts(probe=probe), compat.load().os)


def family_dir(tmp_path: Path, cuda: str = "12.4", extra: str = "") -> Path:
    images = tmp_path / "images"
    images.mkdir(exist_ok=True)
    (images / "golden.yaml").write_text(
        "family: golden\ncuda_libs: [cudart]\nbase: registry.example.com/golden/cuda:12.4-runtime\n"
        f"axes:\n  cuda: [\"{cuda}\"]\n{extra}")
    return images


def planned(images: Path, found: dict[str, BaseFacts | ImgkitError]):
    spec = load_spec(images)
    return make_plan(spec, with_bases(spec, compat.load(), lambda refs: found), Settings())


def test_a_family_on_its_own_base_plans_layers_named_after_it(tmp_path: Path) -> None:
    ref = "registry.example.com/golden/cuda:12.4-runtime"
    plan = planned(family_dir(tmp_path), {ref: facts(ref, cuda_env="12.4.1")})
    root, cuda = plan.targets
    assert root.tag == "imgkit/python:3.12-cuda-12.4-runtime" and root.parent is None
    assert root.base == f"registry.example.com/golden/cuda@{DIGEST}"      # by digest
    assert cuda.tag == "imgkit/cuda:12.4-cudart-py3.12-cuda-12.4-runtime"
    # the base's own cudart is the layer's: pinned as the base holds it, not installed again
    assert cuda.packages == () and cuda.component_map["cudart"] == "12.4.127"
    bare = facts(ref, probe="\n".join(line for line in NOBLE_PROBE.splitlines()
                                      if not line.startswith("lib=")))
    [_, on_bare] = planned(family_dir(tmp_path), {ref: bare}).targets
    assert on_bare.packages == ("nvidia-cuda-runtime-cu12==12.4.127",)   # a base without CUDA


def test_a_family_asking_for_another_cuda_than_its_base_holds_is_refused(tmp_path: Path) -> None:
    ref = "registry.example.com/golden/cuda:12.4-runtime"
    with pytest.raises(SpecError) as caught:
        planned(family_dir(tmp_path, cuda="12.8"), {ref: facts(ref, cuda_env="12.4.1")})
    assert "holds the CUDA 12.4.1 runtime; the family asks for CUDA 12.8" in str(caught.value)
    assert 'use cuda "12.4" on this base' in str(caught.value)


def test_a_base_that_cannot_be_read_is_said_at_its_key(tmp_path: Path) -> None:
    ref = "registry.example.com/golden/cuda:12.4-runtime"
    with pytest.raises(SpecError) as caught:
        planned(family_dir(tmp_path), {ref: HostError(f"the base {ref} is not here and could "
                                                      "not be pulled", hint="docker login")})
    assert caught.value.key == "base" and "could not be pulled" in str(caught.value)


@pytest.mark.parametrize("extra, key, said", [
    ("  os: [bookworm]\n", "axes.os", "takes its OS from the base"),
    ("max_base_age: 30d\n", "max_base_age", "cannot make it again"),
])
def test_what_a_base_makes_meaningless_is_refused_at_its_key(tmp_path: Path, extra: str,
                                                             key: str, said: str) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec(family_dir(tmp_path, extra=extra))
    assert caught.value.key == key and said in str(caught.value)


def test_a_base_that_is_not_an_image_reference_is_refused(tmp_path: Path) -> None:
    images = family_dir(tmp_path)
    text = (images / "golden.yaml").read_text().replace("registry.example.com/golden/cuda:12.4-runtime",
                                                        "'Not An Image!'")
    (images / "golden.yaml").write_text(text)
    with pytest.raises(SpecError) as caught:
        load_spec(images)
    assert caught.value.key == "base" and "image reference" in str(caught.value)


def test_the_base_digest_is_in_every_lock_and_provenance_on_it(tmp_path: Path) -> None:
    """A lock on a team's base names it by digest and goes stale when the base moves; the
    provenance lists the base among what the image was built from."""
    import json

    from imgkit.lock.files import inputs_digest, render_lock
    from imgkit.matrix.targets import given_base
    from imgkit.publish.provenance import Source, predicate
    ref = "registry.example.com/golden/cuda:12.4-runtime"
    plan = planned(family_dir(tmp_path), {ref: facts(ref, cuda_env="12.4.1")})
    root, cuda = plan.targets
    pinned = f"registry.example.com/golden/cuda@{DIGEST}"
    assert given_base(cuda, plan) == given_base(root, plan) == pinned
    assert f"# base: {pinned}" in render_lock(root, "a" * 64, [], "2.39", base=pinned)
    moved = facts(ref, cuda_env="12.4.1")
    moved = BaseFacts(**{**moved.__dict__, "pinned": "registry.example.com/golden/cuda@sha256:" + "cd" * 32})
    other = planned(family_dir(tmp_path), {ref: moved})
    assert inputs_digest(root, plan, None) != inputs_digest(other.targets[0], other, None)
    document = json.loads(predicate(Source(tmp_path, tmp_path, (), None), cuda.tag, "sha256:" + "1" * 64,
                                    "h", root.tag, base=pinned))
    assert {"uri": "oci://registry.example.com/golden/cuda", "name": "base image",
            "digest": {"sha256": "ab" * 32}} in document["buildDefinition"]["resolvedDependencies"]


def bundled_and_golden(tmp_path: Path) -> Path:
    """The bundled matrix with a team's family on its own base beside it."""
    import shutil
    images = tmp_path / "images"
    shutil.copytree(Path(__file__).resolve().parent.parent / "images", images)
    family_dir(tmp_path)
    return images


@pytest.mark.parametrize("cuda, only", [("11.8", ()), (None, ("paddle:*",)),
                                        (None, ("paddle:*", "jax:*"))])
def test_a_selection_that_leaves_an_own_base_out_never_reads_it(tmp_path: Path, cuda: str | None,
                                                                 only: tuple[str, ...]) -> None:
    """Reading a base needs the engine (or what an earlier read kept): a selection that
    cannot reach the family on it does not ask."""
    from imgkit.matrix.load import load_plan
    from imgkit.selection import Selection
    asked: list[list[str]] = []

    def reader(refs: list[str]) -> dict[str, object]:
        asked.append(refs)
        raise AssertionError("the base was read")
    plan = load_plan(Selection(bundled_and_golden(tmp_path), cuda=cuda, only=only,
                               read_bases=reader))
    assert plan.targets and not asked


def test_a_selected_own_base_with_the_engine_away_is_the_hosts_fault(tmp_path: Path) -> None:
    from imgkit.errors import EXIT_HOST, EngineUnavailable
    from imgkit.matrix.load import load_plan
    from imgkit.selection import Selection
    ref = "registry.example.com/golden/cuda:12.4-runtime"
    away = EngineUnavailable(f"cannot read what {ref} holds: cannot reach the Docker engine",
                             hint="start the Docker engine once")
    selections: list[dict[str, Any]] = [{"cuda": "12.4"}, {"only": ("imgkit/cuda:12.4-cudart-*",)}, {}]
    for n, selected in enumerate(selections):
        with pytest.raises(EngineUnavailable) as caught:
            load_plan(Selection(bundled_and_golden(tmp_path / str(n)),
                                read_bases=lambda refs: {ref: away}, **selected))
        assert caught.value.exit_code == EXIT_HOST
        assert "golden.yaml: base:" in caught.value.message and "engine" in caught.value.message
