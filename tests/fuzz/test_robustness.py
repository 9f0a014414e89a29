"""Property tests: on hostile bytes every codec entry point raises its documented error
or nothing (FrameError for frames and headers, BodyError for bodies, PropertiesError for
properties text, ValueError for ``loads_lenient``)."""

from __future__ import annotations

import struct
import zlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster.core.protocol import body_common, register_body, route_bodies
from cluster.core.protocol.frame import FrameError, FrameReader, decode_command
from tests.fuzz import targets
from tests.fuzz.strategies import cuts, fuzz_settings

SEED_FRAMES = targets.seed_frames()
SEED_BODIES = targets.seed_bodies()
OPS = st.lists(st.builds(targets.Op, st.integers(0, len(targets.MUTATIONS) - 1),
                         st.integers(0, 1 << 20), st.integers(0, (1 << 32) - 1)),
               min_size=1, max_size=4)


def test_seed_corpus_is_the_captures() -> None:
    """The seeds hold every captured frame when the captures are checked out, and every
    seed frame decodes: mutations start from real traffic."""
    captured = targets.golden_frames()
    if targets.GOLDEN.is_dir():
        assert len(captured) >= 95
    for frame in SEED_FRAMES:
        targets.run_decode(frame[4:])
        assert decode_command(frame[4:]) is not None


@fuzz_settings(500)
@given(st.binary(max_size=600), st.data())
def test_arbitrary_bytes_as_a_stream(data: bytes, draw: st.DataObject) -> None:
    targets.run_stream(data, draw.draw(cuts(len(data))))


@fuzz_settings(300)
@given(st.binary(max_size=600))
def test_arbitrary_bytes_as_a_frame_and_a_body(data: bytes) -> None:
    targets.run_decode(data)
    targets.run_body_decoders(data)


@fuzz_settings(400)
@given(st.sampled_from(SEED_FRAMES), OPS, st.data())
def test_mutated_captured_frames(frame: bytes, ops: list[targets.Op],
                                 draw: st.DataObject) -> None:
    hostile = targets.mutate(frame, ops)
    targets.run_stream(hostile, draw.draw(cuts(len(hostile))))
    targets.run_decode(hostile[4:])


@fuzz_settings(300)
@given(st.sampled_from(SEED_BODIES), OPS)
def test_mutated_captured_bodies(body: bytes, ops: list[targets.Op]) -> None:
    targets.run_body_decoders(targets.mutate(body, ops), versions=(36, 400, 413))


@fuzz_settings(150)
@given(st.sampled_from(targets.compressed_plaintexts()), OPS)
def test_mutated_compressed_layout(plain: bytes, ops: list[targets.Op]) -> None:
    targets.run_input(targets.input_byte(4, 1) + targets.mutate(plain, ops))


@fuzz_settings(100)
@given(st.sampled_from(SEED_FRAMES), st.integers(0, 0xFF), st.integers(0, (1 << 31) - 1))
def test_frame_reader_refuses_lies_before_buffering(frame: bytes, stype: int,
                                                    declared: int) -> None:
    """A frame whose length word or header word lies is refused, or waited for, but never
    returned with a length other than the one declared."""
    reader = FrameReader(1 << 16)
    hostile = struct.pack(">i", declared) + bytes([stype]) + frame[5:]
    try:
        frames = reader.feed(hostile)
    except FrameError:
        return
    if frames:
        assert len(frames[0]) == declared
    assert reader.buffered == len(hostile) - sum(4 + len(f) for f in frames)


# ------------------------------------------------------------------ crashes found by fuzzing

LONG_NUMBER = b"1" * 5000  # more digits than Python's int() converts by default


def _register(body: bytes) -> object:
    return register_body.decode_register_body(body, False, 400)


@pytest.mark.parametrize(("decoder", "body"), [
    (body_common.decode_data_version, b'{"counter":"' + LONG_NUMBER + b'","timestamp":1}'),
    (_register, b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":'
                b'{"counter":"' + LONG_NUMBER + b'"},"topicConfigTable":{}}}'),
    (_register, b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"perm":"'
                + LONG_NUMBER + b'"}}}}'),
    (route_bodies.decode_topic_route,
     b'{"brokerDatas":[{"brokerAddrs":{"' + LONG_NUMBER + b'":"a:1"}}],"queueDatas":[]}'),
    (route_bodies.decode_cluster_info,
     b'{"brokerAddrTable":{"b":{"brokerAddrs":{"' + LONG_NUMBER + b'":"a:1"}}}}'),
])
def test_number_too_long_for_int_is_a_body_error(decoder: Any, body: bytes) -> None:
    """Was: ValueError (Python's int max str digits) out of the body decoders."""
    with pytest.raises(body_common.BodyError, match="too many digits"):
        decoder(body)
    targets.run_body_decoders(body)


def _compressed_plain(line: bytes) -> bytes:
    """The inflated layout of a compressed registration with one topic line."""
    return (struct.pack(">i", 2) + b"{}" + struct.pack(">i", 1) + struct.pack(">i", len(line))
            + line + struct.pack(">i", 2) + b"[]")


def test_number_too_long_in_a_compressed_topic_line() -> None:
    plain = _compressed_plain(b"T " + LONG_NUMBER + b" 16 6 SINGLE_TAG")
    targets.run_input(targets.input_byte(4) + plain)
    with pytest.raises(body_common.BodyError, match="bad number"):
        register_body.decode_register_body(zlib.compress(plain), True, 400)


def test_leading_zeros_still_parse_in_a_compressed_topic_line() -> None:
    """Java's Integer.parseInt takes any number of leading zeros."""
    plain = _compressed_plain(b"T 0000000000000016 16 6 SINGLE_TAG")
    rb = register_body.decode_register_body(zlib.compress(plain), True, 400)
    assert rb.topic_configs["T"]["readQueueNums"] == 16


DEEP = b"[" * 300 + b"]" * 300


@pytest.mark.parametrize("depth", [255, 256, 300, 1000])
def test_deeply_nested_ext_field_value_is_a_frame_error(depth: int) -> None:
    """Was: TypeError from orjson.dumps (its depth limit is 255) out of decode_command,
    which ended the business worker that decoded the request."""
    nested = b"[" * depth + b"]" * depth
    header = b'{"code":105,"extFields":{"topic":' + nested + b"}}"
    targets.run_decode(struct.pack(">I", len(header)) + header)
    try:
        cmd = decode_command(struct.pack(">I", len(header)) + header)
    except FrameError as exc:
        assert depth > 254 and "extFields" in str(exc)
    else:
        assert cmd.field("topic") == "[" * depth + "]" * depth
