"""A container's logs, asked once for both streams on the local socket, split by the frames
the engine sends (engine/containers.py): each stream whole and in order, whatever the frame
sizes; a cut-short answer keeps what came. The real engine's answer: every docker test that
verifies (test_docker_verify.py's flood among them)."""
from __future__ import annotations

from imgkit.engine.containers import split_streams


def frame(stream: int, data: bytes) -> bytes:
    return bytes([stream, 0, 0, 0]) + len(data).to_bytes(4, "big") + data


def test_each_stream_is_whole_and_in_order() -> None:
    body = (frame(1, b"IMGKIT-REPORT-BEGIN t\n") + frame(2, b"a warning\n") + frame(1, b"{}" * 40_000)
            + frame(1, b"\nIMGKIT-REPORT-END t\n") + frame(2, b"") + frame(2, b"\x00\xff"))
    streams = split_streams(body)
    assert streams[1] == b"IMGKIT-REPORT-BEGIN t\n" + b"{}" * 40_000 + b"\nIMGKIT-REPORT-END t\n"
    assert streams[2] == b"a warning\n\x00\xff"


def test_nothing_written_is_two_empty_streams_and_a_cut_answer_keeps_what_came() -> None:
    assert split_streams(b"") == {1: bytearray(), 2: bytearray()}
    cut_in_a_frame = frame(2, b"first") + frame(1, b"whole report")[:-3]
    assert split_streams(cut_in_a_frame) == {1: bytearray(b"whole rep"), 2: bytearray(b"first")}
    cut_in_a_header = frame(1, b"report") + b"\x02\x00"
    assert split_streams(cut_in_a_header) == {1: bytearray(b"report"), 2: bytearray()}
