"""FrameReader against a plain model of the remoting stream: the same frames, and the same
error at the same read, however the bytes are cut into reads."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.core.protocol.frame import FrameError, FrameReader, FrameTooLarge

MAX_FRAME = 300
MAX_HEADER = 60


def model(stream: bytes, cuts: list[int]) -> tuple[list[bytes], type[FrameError] | None, int]:
    """(frames, error class or None, index of the read that raised) of a reader that looks
    at the whole stream read so far after each read, checking as RocketMQ's decoder does:
    the length word once 4 bytes of a frame are in, the header word once 8 are. The frames
    of a read that raises are not given: the connection is closed."""
    frames: list[bytes] = []
    pos = 0
    for i, upto in enumerate(cuts):
        before = len(frames)
        while upto - pos >= 4:
            (total,) = struct.unpack_from(">i", stream, pos)
            if total < 4:
                return frames[:before], FrameError, i
            if total + 4 > MAX_FRAME:
                return frames[:before], FrameTooLarge, i
            if upto - pos >= 8:
                (word,) = struct.unpack_from(">I", stream, pos + 4)
                hlen = word & 0xFFFFFF
                if word >> 24 > 1 or hlen > total - 4:
                    return frames[:before], FrameError, i
                if hlen > MAX_HEADER:
                    return frames[:before], FrameTooLarge, i
            if upto - pos - 4 < total:
                break
            frames.append(stream[pos + 4 : pos + 4 + total])
            pos += 4 + total
    return frames, None, len(cuts)


def _frame(total: int, stype: int, hlen: int, fill: int) -> bytes:
    rest = bytes([fill]) * max(0, min(total, MAX_FRAME) - 4)
    return struct.pack(">iI", total, stype << 24 | hlen) + rest


FRAMES = st.builds(_frame,
                   st.one_of(st.integers(4, MAX_FRAME - 4), st.integers(-5, MAX_FRAME + 5)),
                   st.one_of(st.just(0), st.just(1), st.integers(0, 255)),
                   st.one_of(st.integers(0, 40), st.integers(0, MAX_HEADER + 5)),
                   st.integers(0, 255))


@settings(max_examples=400, deadline=None)
@given(st.lists(FRAMES, max_size=6), st.binary(max_size=7), st.lists(st.integers(1, 400)))
def test_frames_and_errors_are_the_models_whatever_the_reads(
        frames: list[bytes], tail: bytes, sizes: list[int]) -> None:
    stream = b"".join(frames) + tail
    cuts, at = [], 0
    for n in [*sizes, len(stream)]:
        at = min(len(stream), at + n)
        cuts.append(at)
    want, error, bad_read = model(stream, cuts)
    reader, got, prev = FrameReader(MAX_FRAME, MAX_HEADER), [], 0
    for i, upto in enumerate(cuts):
        try:
            got += reader.feed(stream[prev:upto])
        except FrameError as exc:
            assert (type(exc), i) == (error, bad_read)
            break
        prev = upto
    else:
        assert error is None
    assert got == want
