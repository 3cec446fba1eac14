"""Scratch space for an image saved whole (scan) or layers compressed (a zstd push): too
little room in TMPDIR is said before anything is written, and a folder that fills on the way
(a tmpfs /tmp, as Debian 13, Fedora and Arch have) is the host's fault, never a traceback."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from imgkit.errors import EXIT_HOST, HostError
from imgkit.scratch import scratch


def test_too_little_room_is_said_first_with_where_to_point_tmpdir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    wanted = shutil.disk_usage(tmp_path).free * 2
    with pytest.raises(HostError) as said:
        with scratch("imgkit-test-", wanted, "saving team/app:1 for the scanner"):
            pytest.fail("nothing is written when the room is short")
    assert said.value.exit_code == EXIT_HOST
    assert "saving team/app:1 for the scanner needs about" in said.value.message
    assert f"in {tmp_path}, which has" in said.value.message and "TMPDIR" in said.value.hint


def test_a_folder_that_fills_on_the_way_is_the_hosts_fault_and_is_removed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(small)], check=True)
    try:
        monkeypatch.setattr(tempfile, "tempdir", str(small))
        with pytest.raises(HostError, match=f"compressing layers: {small} ran out of room"):
            with scratch("imgkit-test-", 0, "compressing layers") as folder:
                (folder / "layer").write_bytes(bytes(2_000_000))
        assert list(small.iterdir()) == []
    finally:
        subprocess.run(["umount", str(small)], check=True)
