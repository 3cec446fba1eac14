"""What a failed build step's own output means for the family file, said as a hint under
the log (builder/failure_hints.py). The real-engine form: tests/test_docker_build.py."""
from __future__ import annotations

import pytest

from imgkit.builder.failure_hints import STALE_CACHE_HINT, failure_hint
from imgkit.builder.report import print_build_failure
from imgkit.errors import BuildFailed


def test_a_bake_that_fails_on_a_stale_cache_says_how_to_empty_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Engine 26 after a partial `docker buildx prune`: BuildKit's records name layers the
    store lost, and the export fails so on every build until the cache is emptied."""
    tail = ["#14 exporting to image", "#14 exporting layers",
            "#14 ERROR: failed to export image: layer does not exist"]
    hint = failure_hint(tail)
    assert "docker buildx prune -af" in hint
    assert failure_hint(["#9 ERROR: process \"/bin/sh -c exit 7\" did not complete"]) == ""
    # engine 28 fails the next step on the stale record instead (stop 71's CI)
    assert failure_hint([
        "ERROR: failed to prepare sha256:b34e as g4grba90: invalid output path: stat "
        "/var/lib/docker/overlay2/tmr57m73: no such file or directory"]) == STALE_CACHE_HINT
    print_build_failure(BuildFailed("ns/cuda:11.8", "bake", "docker buildx bake exited 1", tail,
                                    hint=hint))
    shown = capsys.readouterr().out
    assert "| #14 ERROR: failed to export image: layer does not exist" in shown
    assert "hint: BuildKit's cache names layers the engine no longer holds" in shown


# each as apt 2.6 and pip 24-26 print it, under BuildKit's step prefix or the legacy builder's
@pytest.mark.parametrize("line, said", [
    ("#9 2.107 E: Unable to locate package python3-opencv-nope",
     "the OS's package lists have no python3-opencv-nope: check the name in the family's apt:"),
    ("E: Version '7.88.1-10+deb12u5' for 'curl' was not found",
     "the mirror no longer has curl=7.88.1-10+deb12u5"),
    ("#9 1.9 E: Package 'libgl1-mesa-glx' has no installation candidate",
     "libgl1-mesa-glx has no installable version in this OS release"),
    ("#11 4.0 ERROR: No matching distribution found for einops==9.9.9",
     "the package index has no einops==9.9.9 for this image's python and platform"),
    ("#11 9.2   ERROR: Failed building wheel for numpy",
     "pip has no wheel of numpy at that pin for this image's python and platform"),
    ("#11 9.3 Failed to build numpy", "pip has no wheel of numpy at that pin"),
    ("ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/"
     "dependency-resolution/#dealing-with-dependency-conflicts",
     "pip found no versions that satisfy every pin at once"),
    ("ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.",
     "run `imgkit lock` again"),
])
def test_a_failed_steps_output_is_read_into_what_to_change(line: str, said: str) -> None:
    assert said in failure_hint(["#9 [3/4] RUN apt-get update", line, "#9 ERROR: exit code: 100"])


def test_output_that_says_nothing_known_gets_no_hint() -> None:
    assert failure_hint(["Step 3/4 : RUN make", "make: *** [all] Error 2"]) == ""


@pytest.mark.parametrize("lines, said", [
    (["\x1b[91mE: Unable to locate package python3-opencv2\x1b[0m"],    # the legacy builder's
     "Unable to locate package python3-opencv2"),
    (["ERROR: Ignored the following yanked versions: 0.6.2rc0",
      "ERROR: Could not find a version that satisfies the requirement einops==99.0.0",
      "ERROR: No matching distribution found for einops==99.0.0"],
     "No matching distribution found for einops==99.0.0"),
    (["ERROR: Ignored the following yanked versions: 0.6.2rc0"], ""),   # a notice is no reason
    (["ERROR: Cannot install a==1 and b==2 because these package versions have conflicting "
      "dependencies.", "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/"],
     "Cannot install a==1 and b==2 because these package versions have conflicting dependencies."),
    (["+ exit 7"], ""),                                   # no tool said why: the exit code will
    # an earlier step's error line, which did not fail the build, is no reason for this one
    (["E: Conflicting values set for option Signed-By", "Step 6/7 : RUN imgkit-link-libs",
      "+ exit 7"], ""),
    (["ERROR: pip's dependency resolver does not currently take into account all the packages "
      "that are installed."], ""),
])
def test_a_failed_step_is_said_in_its_tools_last_words(lines: list[str], said: str) -> None:
    from imgkit.builder.failure_hints import tool_error
    assert tool_error(["Step 5/7 : RUN apt-get update", *lines]) == said
