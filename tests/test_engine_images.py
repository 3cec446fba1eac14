"""What imgkit reads from the engine's answers about an image (pure logic: no engine)."""
from __future__ import annotations

from imgkit.engine.images import seconds_of


def test_an_images_created_time_in_seconds() -> None:
    """The engine's RFC 3339 `Created`, nanoseconds and all; 0 for what is not one."""
    assert seconds_of("2026-11-26T02:14:46.123456789Z") == 1795659286
    assert seconds_of("2026-11-26T02:14:46Z") == 1795659286
    for bad in ("", "2026-11-26", "2026-11-26 02:14:46", "0001-13-01T00:00:00Z", "garbage"):
        assert seconds_of(bad) == 0, bad
