"""Search paths the image's config sets (PATH, LD_LIBRARY_PATH): an entry that is not an
absolute directory makes programs search their working directory, said in the verdict."""
from __future__ import annotations

import copy
import json

import pytest

from imgkit.engine import ImageInfo
from imgkit.options import VerifyOptions
from imgkit.probe import channel
from imgkit.verify.run import judge_report
from imgkit.verify.search_paths import search_path_checks

from .helpers.reports import GOOD, TAG


@pytest.mark.parametrize("value, said", [
    ("/opt/lib:", "an empty entry"),                    # /opt/lib:${LD_LIBRARY_PATH}, unset
    (":/opt/lib", "an empty entry"),
    ("/opt/lib::/usr/lib", "an empty entry"),
    ("/opt/lib:lib64", "the relative 'lib64'"),
    ("./lib:/opt/lib", "the relative './lib'"),
])
def test_an_entry_that_is_not_an_absolute_directory_is_a_warning(value: str, said: str) -> None:
    [check] = search_path_checks({"LD_LIBRARY_PATH": value})
    assert check.name == "search path LD_LIBRARY_PATH" and check.verdict == "warn"
    assert not check.required and check.measured == value
    assert check.diagnosis.startswith(said) and "/dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" in \
        check.diagnosis


def test_a_pythonpath_with_an_empty_entry_searches_the_working_directory_for_modules() -> None:
    [check] = search_path_checks({"PYTHONPATH": "/opt/app:"})     # /opt/app:${PYTHONPATH}
    assert check.name == "search path PYTHONPATH" and "look for Python modules" in check.diagnosis


@pytest.mark.parametrize("env", [
    {},
    {"LD_LIBRARY_PATH": ""},                            # set empty: the loader ignores it
    {"LD_LIBRARY_PATH": "/usr/local/nvidia/lib:/usr/local/nvidia/lib64",   # NVIDIA's images
     "PATH": "/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:"
             "/usr/sbin:/usr/bin:/sbin:/bin"},
])
def test_absolute_directories_say_nothing(env: dict[str, str]) -> None:
    assert search_path_checks(env) == []


def test_a_path_that_searches_the_working_directory_is_named_in_the_verdict() -> None:
    """Read from the image's config, as judge and verify both have it (no engine needed)."""
    report = copy.deepcopy(GOOD)
    log = channel.frame(json.dumps(report), channel.new_token())
    info = ImageInfo(id="sha256:" + "0" * 64, tags=(TAG,), labels={}, layers=(), size=0,
                     user="imgkit", env=(("PATH", "/opt/venv/bin::/usr/bin"),
                                         ("LD_LIBRARY_PATH", "/opt/imgkit/lib")))
    verdict = judge_report(None, TAG, log, VerifyOptions(), info=info)
    found = {c.name: c for c in verdict.checks}
    assert found["search path PATH"].verdict == "warn"
    assert "its programs look for commands" in found["search path PATH"].diagnosis
    assert "search path LD_LIBRARY_PATH" not in found
    assert verdict.passed                               # a warning, as the other env checks
