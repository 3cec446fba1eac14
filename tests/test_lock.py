"""Locks, the pure parts: the file format, what makes a lock stale, the wheel tags a lock
resolves for, and a multi-platform image's one lock."""
from __future__ import annotations

from pathlib import Path

import pytest

from imgkit.errors import SpecError, UsageError
from imgkit.lock.command import _merged
from imgkit.lock.files import (
    Pinned,
    apt_pins,
    inputs_digest,
    lock_path,
    lock_states,
    parse_lock,
    read_locks,
    render_lock,
)
from imgkit.lock.resolve import wheel_platforms
from imgkit.render.contexts import render_plan

from .helpers.locks import cuda_target, plan_of, write

ROOT = Path(__file__).resolve().parent.parent
H1, H2, H3 = "1" * 64, "2" * 64, "3" * 64








def test_a_lock_reads_back_as_written_markers_and_every_hash_included() -> None:
    plan = plan_of()
    pins = [Pinned("nvidia-cuda-runtime-cu12", "12.8.90", (H1, H2)),
            Pinned("extra", "1.0", (H3,), 'platform_machine == "x86_64"')]
    text = render_lock(cuda_target(plan), "a" * 64, pins, "2.36")
    assert "resolved for CPython 3.11 on linux/amd64 (manylinux, glibc 2.36)" in text
    inputs, back = parse_lock("x.txt", text)
    assert inputs == "a" * 64
    assert sorted(back, key=lambda p: p.name) == sorted(pins, key=lambda p: p.name)


def test_not_a_lock_is_exit_2_naming_the_file() -> None:
    with pytest.raises(SpecError) as info:
        parse_lock("images/locks/x.txt", "requests==2.32.3\n")
    assert info.value.file == "images/locks/x.txt" and "not an imgkit lock" in info.value.reason


def test_a_lock_is_stale_when_the_matrix_or_its_parents_lock_moves(tmp_path: Path) -> None:
    plan = plan_of()
    write(tmp_path, plan, [Pinned("nvidia-cuda-runtime-cu12", "12.8.90", (H1,))])
    def problems(plan):
        # (the python layer's lock, of its apt packages, is not written here)
        return {plan.get(st.tag).layer: st.problem for st in lock_states(tmp_path, plan)}
    assert problems(plan) == {"python": "no lock", "cuda": ""}
    moved = plan_of(axes={"cuda": ["12.9"]})          # another image: no lock for it
    assert problems(moved)["cuda"] == "no lock"
    other_python = plan_of(axes={"cuda": ["12.8"], "os": ["trixie"]})
    assert problems(other_python)["cuda"] == "no lock"
    target = cuda_target(plan)
    assert inputs_digest(target, plan, None) != inputs_digest(target, plan, b"a parent lock")


def test_a_build_installs_from_the_lock_and_refuses_a_stale_one(tmp_path: Path) -> None:
    plan = plan_of()
    path = write(tmp_path, plan, [Pinned("nvidia-cuda-runtime-cu12", "12.8.90", (H1,))])
    locks = read_locks(tmp_path, plan)
    contexts = {c.target.tag: c for c in render_plan(plan, ROOT / "templates", locks=locks)}
    plain = {c.target.tag: c for c in render_plan(plan, ROOT / "templates")}
    tag = cuda_target(plan).tag
    assert "--no-deps --require-hashes -r /opt/imgkit/locks/" in contexts[tag].dockerfile
    assert dict((p, c) for p, c, _ in contexts[tag].files)["lock.txt"] == path.read_bytes()
    assert contexts[tag].input_hash != plain[tag].input_hash       # the lock is an input
    inputs = parse_lock(str(path), path.read_text())[0]
    path.write_text(path.read_text().replace(inputs, "f" * 64))   # locked from other inputs
    with pytest.raises(SpecError) as info:
        read_locks(tmp_path, plan)
    assert "stale" in info.value.reason and info.value.file == str(path)


def test_no_locks_at_all_leaves_the_build_as_it_was(tmp_path: Path) -> None:
    assert read_locks(tmp_path, plan_of()) == {}


def test_wheel_tags_follow_the_images_glibc_not_the_hosts() -> None:
    tags = wheel_platforms("linux/amd64", "2.36")
    assert tags[0] == "manylinux_2_36_x86_64" and "manylinux_2_17_x86_64" in tags
    assert "manylinux_2_37_x86_64" not in tags and "manylinux2014_x86_64" in tags
    assert wheel_platforms("linux/arm64", "2.41")[0] == "manylinux_2_41_aarch64"
    assert "manylinux1_aarch64" not in wheel_platforms("linux/arm64", "2.41")


def test_one_lock_for_two_platforms_marks_what_only_one_needs_and_refuses_two_versions() -> None:
    target = cuda_target(plan_of(platforms=["linux/amd64", "linux/arm64"]))
    amd = [Pinned("torch", "2.11.0", (H1,)), Pinned("triton", "3.6.0", (H2,))]
    arm = [Pinned("torch", "2.11.0", (H3,))]
    merged = {p.name: p for p in _merged(target, [amd, arm])}
    assert merged["torch"] == Pinned("torch", "2.11.0", (H1, H3))
    assert merged["triton"].marker == 'platform_machine == "x86_64"'
    with pytest.raises(UsageError, match="one tag cannot name both"):
        _merged(target, [amd, [Pinned("torch", "2.10.0", (H3,))]])


SIMULATED = """--- 0
Inst perl-base [5.36.0-7+deb12u3] (5.36.0-7+deb12u4 Debian-Security:12/oldstable-security [amd64])
Inst python3 (3.11.2-1+b1 Debian:12.15/oldstable [amd64])
Conf python3 (3.11.2-1+b1 Debian:12.15/oldstable [amd64])
--- 1
Inst python3 (3.11.2-1+b1 Debian:12.15/oldstable [amd64])
Inst libgomp1 (12.2.0-14+deb12u1 Debian:12.15/oldstable [amd64])
"""


def test_apt_pins_come_from_apts_own_simulation_upgrades_included(tmp_path: Path) -> None:
    from imgkit.lock.apt import parse_simulation
    assert parse_simulation(SIMULATED) == [
        {"perl-base": "5.36.0-7+deb12u4", "python3": "3.11.2-1+b1"},
        {"python3": "3.11.2-1+b1", "libgomp1": "12.2.0-14+deb12u1"}]


def test_a_python_layer_with_an_apt_lock_installs_exactly_it(tmp_path: Path) -> None:
    plan = plan_of()
    python = next(t for t in plan.targets if t.layer == "python")
    path = lock_path(tmp_path, python.tag)
    path.parent.mkdir(parents=True)
    path.write_text(render_lock(python, inputs_digest(python, plan, None), [], "2.36",
                                {"python3": "3.11.2-1+b1", "perl-base": "5.36.0-7+deb12u4"}))
    assert apt_pins(path.read_text()) == ["perl-base=5.36.0-7+deb12u4", "python3=3.11.2-1+b1"]
    context = render_plan(plan, ROOT / "templates", locks=read_locks(tmp_path, plan))[0]
    assert ("apt-get install -y --no-install-recommends --allow-downgrades "
            "perl-base=5.36.0-7+deb12u4 python3=3.11.2-1+b1") in context.dockerfile
    assert "apt-get upgrade" not in context.dockerfile
    assert "lock.txt" not in {p for p, _, _ in context.files}     # no pip step to lock


def test_an_index_named_over_plain_http_is_trusted_by_host_and_port_only() -> None:
    from imgkit.lock.resolve import trusted_host
    assert trusted_host("http://user:pw@172.17.0.1:8080/simple/") == ["--trusted-host",
                                                                      "172.17.0.1:8080"]
    assert trusted_host("http://pypi.internal/simple") == ["--trusted-host", "pypi.internal"]
    assert trusted_host("https://pypi.org/simple") == []


def test_what_moved_names_versions_new_and_dropped_packages_and_other_files() -> None:
    from imgkit.lock.command import what_moved
    old = ("# inputs: " + "a" * 64 + "\n# apt: libssl3=3.0.15-1~deb12u1\n"
           "idna==3.9 \\\n    --hash=sha256:" + "1" * 64 + "\n"
           "chardet==5.2.0 \\\n    --hash=sha256:" + "2" * 64 + "\n"
           "certifi==2024.8.30 \\\n    --hash=sha256:" + "3" * 64 + "\n")
    new = ("# inputs: " + "a" * 64 + "\n# apt: libssl3=3.0.16-1~deb12u1\n"
           "idna==3.10 \\\n    --hash=sha256:" + "4" * 64 + "\n"
           "certifi==2024.8.30 \\\n    --hash=sha256:" + "5" * 64 + "\n"
           "urllib3==2.2.3 \\\n    --hash=sha256:" + "6" * 64 + "\n")
    assert what_moved(old.encode(), new) == (
        "moved: apt libssl3 3.0.15-1~deb12u1 -> 3.0.16-1~deb12u1, certifi 2024.8.30: other "
        "files (hashes), -chardet 5.2.0, idna 3.9 -> 3.10, +urllib3 2.2.3")
    assert what_moved(None, new) == "no lock"
    assert what_moved(old.replace("a" * 64, "b" * 64).encode(), old) == (
        "moved: its parent's lock moved")


def test_what_the_index_holds_instead_of_a_missing_pin_in_words() -> None:
    from imgkit.lock.resolve import nearest
    offered = ("0.6.0", "0.7.0rc1", "0.8.0", "0.8.1", "0.8.2", "0.9.0.dev0", "nonsense")
    assert nearest("einops==0.8.99", offered) == "the newest release the index holds is 0.8.2"
    assert nearest("einops==0.7.5", offered) == (
        "the index holds 0.6.0 below it, and 0.8.2 as its newest release")
    assert nearest("einops==0.1", offered) == "the newest release the index holds is 0.8.2"
    assert nearest("einops==1.0", ("1.1rc1",)) == (
        "the index holds no release of it for this python and platform")


def test_a_stale_lock_says_what_the_matrix_asks_for_that_it_lacks(tmp_path: Path) -> None:
    plan = plan_of()
    target = cuda_target(plan)
    wanted = next(r for r in target.packages if r.startswith("nvidia-cuda-runtime"))
    path = lock_path(tmp_path, target.tag)
    path.parent.mkdir(parents=True)

    def stale_with(*pins: Pinned) -> str:
        path.write_text(render_lock(target, "f" * 64, list(pins), "2.36"))   # other inputs
        return next(s.problem for s in lock_states(tmp_path, plan) if s.tag == target.tag)
    older = stale_with(Pinned("nvidia-cuda-runtime-cu12", "12.8.57", (H1,)))
    assert older == ("stale: the matrix changed since it was locked (it has "
                     f"nvidia-cuda-runtime-cu12==12.8.57, the matrix {wanted})")
    assert stale_with().endswith(f"({wanted} is not in it)")
    # what it pins is what the matrix asks (the python or the platforms moved): no words
    assert stale_with(Pinned("nvidia_cuda_runtime_cu12", wanted.split("==")[1], (H1,))) == \
        "stale: the matrix changed since it was locked"
    # its pins are right, but the lock below it is stale: that one is named
    python = next(t for t in plan.targets if t.layer == "python")
    lock_path(tmp_path, python.tag).write_text(render_lock(python, "e" * 64, [], "2.36",
                                                           apt={"python3": "3.11.2-1+b1"}))
    assert stale_with(Pinned("nvidia-cuda-runtime-cu12", wanted.split("==")[1], (H1,))).endswith(
        f"(the lock below it, of {python.tag}, changed)")


def test_a_conflict_pip_cannot_resolve_says_what_causes_it() -> None:
    """pip says the cause at its info level, on stdout ('rich 13.9.4 depends on ...'); the
    lock said only 'conflicting dependencies; ResolutionImpossible: for help visit ...'."""
    from imgkit.lock.resolve import _refusal
    stderr = ("ERROR: Cannot install markdown-it-py==2.0.0 and rich==13.9.4 because these "
              "package versions have conflicting dependencies.\nERROR: ResolutionImpossible: "
              "for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/\n")
    stdout = ("Collecting rich==13.9.4\n\nThe conflict is caused by:\n"
              "    The user requested markdown-it-py==2.0.0\n"
              "    rich 13.9.4 depends on markdown-it-py>=2.2.0\n\nTo fix this you could try to:\n")
    said = _refusal(stderr, stdout, "x: pip cannot resolve", "x", "family tools's").message  # type: ignore[attr-defined]
    assert said.endswith("conflicting dependencies: The user requested markdown-it-py==2.0.0; "
                         "rich 13.9.4 depends on markdown-it-py>=2.2.0"), said
    assert "for help visit" not in said
