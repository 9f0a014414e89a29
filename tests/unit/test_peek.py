"""Header peek: code, flag and serialize type of a frame without decoding its header."""

from __future__ import annotations

import dataclasses
import struct

import pytest

from cluster.core.protocol.codes import FLAG_ONEWAY, FLAG_RESPONSE, RequestCode, SerializeType
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import FrameError, decode_command, encode_command, split_frame
from cluster.core.protocol.peek import (
    BIN_OPAQUE_END,
    BIN_OPAQUE_START,
    FRAME_BIN_OPAQUE,
    FRAME_BIN_TAIL,
    HeaderPeek,
    peek,
    peek_code,
    peek_header,
    without_body,
)

JSON, BINARY = SerializeType.JSON, SerializeType.ROCKETMQ


def frame(code: int, flag: int = 0, stype: SerializeType = JSON, body: bytes | None = None,
          ext: dict[str, str] | None = None) -> bytes:
    """A frame as the I/O worker sees it: header word + header + body."""
    cmd = RemotingCommand(code=code, flag=flag, opaque=77, version=409, language="JAVA",
                          remark="r", ext_fields={"topic": "T"} if ext is None else ext,
                          serialize_type=stype, body=body)
    return encode_command(cmd)[4:]


def json_frame(header: bytes, body: bytes = b"") -> bytes:
    return struct.pack(">I", len(header)) + header + body


@pytest.mark.parametrize("stype", [JSON, BINARY])
@pytest.mark.parametrize("code", [0, 1, 105, 103, 9999, 32767, -1])
@pytest.mark.parametrize("flag", [0, FLAG_RESPONSE, FLAG_ONEWAY])
def test_peek_agrees_with_a_full_decode(stype: SerializeType, code: int, flag: int) -> None:
    f = frame(code, flag, stype, body=b'{"code":1,"flag":3}')
    cmd = decode_command(f)
    assert peek(f) == HeaderPeek(cmd.code, cmd.flag, cmd.serialize_type) == (code, flag, stype)
    assert peek_code(f) == code
    st, header, _ = split_frame(f)
    assert peek_header(header, int(st)) == (code, flag, stype)


@pytest.mark.parametrize("stype", [JSON, BINARY])
@pytest.mark.parametrize("size", [200, 300, 70_000])  # header length below 256, 65536, above
def test_header_lengths_of_every_byte_width(stype: SerializeType, size: int) -> None:
    f = frame(RequestCode.REGISTER_BROKER, FLAG_ONEWAY, stype, body=b"1,2",
              ext={"brokerName": "b" * size})
    assert peek(f) == (103, FLAG_ONEWAY, stype)
    assert peek_code(f) == 103


def test_large_json_codes() -> None:
    f = frame(RequestCode.GET_NODE_SNAPSHOT)
    assert peek(f).code == peek_code(f) == 60001


@pytest.mark.parametrize("stype", [JSON, BINARY])
def test_oneway_and_response_bits(stype: SerializeType) -> None:
    oneway = peek(frame(RequestCode.REGISTER_BROKER, FLAG_ONEWAY, stype))
    assert oneway.flag & FLAG_ONEWAY and not oneway.flag & FLAG_RESPONSE
    assert oneway.serialize_type is stype
    reply = peek(frame(0, FLAG_RESPONSE, stype))
    assert reply.flag & FLAG_RESPONSE and not reply.flag & FLAG_ONEWAY
    plain = peek(frame(RequestCode.GET_ROUTEINFO_BY_TOPIC, 0, stype))
    assert plain.flag & (FLAG_ONEWAY | FLAG_RESPONSE) == 0


@pytest.mark.parametrize(("header", "expected"), [
    # Go client order: flag after opaque, extFields last
    (b'{"code":105,"language":"GO","version":317,"opaque":1,"flag":2,"remark":"",'
     b'"extFields":{"topic":"T"}}', (105, 2)),
    # whitespace, as a lenient writer may put it
    (b'{ "code" : 103 ,\n "flag":\t1 }', (103, 1)),
    # string values named like the members do not count, nor escaped text
    (b'{"extFields":{"code":"1","flag":"3"},"remark":"\\"code\\":7","code":106,"flag":0}',
     (106, 0)),
    # no flag member: 0, as in a full decode
    (b'{"code":104}', (104, 0)),
    (b'{"code":-3,"opaque":1}', (-3, 0)),
])
def test_json_header_variants(header: bytes, expected: tuple[int, int]) -> None:
    f = json_frame(header, b'{"code":999,"flag":9}')
    assert peek(f)[:2] == expected
    assert peek_header(header, 0)[:2] == expected
    assert peek_code(f) == expected[0]
    cmd = decode_command(f)
    assert (cmd.code, cmd.flag) == expected


@pytest.mark.parametrize("data", [
    b"",                                              # nothing
    b"\x00\x00\x00",                                  # shorter than the header word
    b"\x02\x00\x00\x02{}",                            # unknown serialize type
    b"\x00\x00\x00\x40{}",                            # header longer than the frame
    json_frame(b'{"opaque":1}'),                      # no code
    json_frame(b'{"code":"105"}'),                    # code not a JSON integer
    json_frame(b'{"code":105.5}'),
    json_frame(b'{"code":12345678901}'),              # more digits than any int32
    json_frame(b'{"code":1', b"23,"),                 # truncated header: the body does not count
])
def test_unreadable_frames_raise_and_peek_code_says_none(data: bytes) -> None:
    with pytest.raises(FrameError):
        peek(data)
    assert peek_code(data) is None


def test_peek_code_needs_only_the_code() -> None:
    no_flag = b"\x01\x00\x00\x0c" + b"\x00\x67" + bytes(10)  # binary header of 12 bytes
    with pytest.raises(FrameError, match="too short"):
        peek(no_flag)
    assert peek_code(no_flag) == 103
    assert peek_code(b"\x01\x00\x00\x02\x00\x69") == 105  # binary header of its code only
    assert peek_code(b"\x01\x00\x00\x01\x00\x69") is None  # header shorter than the code
    assert peek_code(json_frame(b'{"code":105}')) == 105
    assert peek_code(json_frame(b'{"code":105,', b"x")) == 105  # the comma ends the header
    assert peek_code(json_frame(b'{"code":105', b",x")) is None  # the comma is the body's
    assert peek_code(json_frame(b'{"code":105,"flag":"x"}')) == 105


def test_peek_header_refuses_unknown_types_and_short_binary_headers() -> None:
    with pytest.raises(FrameError, match="serialize type 2"):
        peek_header(b'{"code":1}', 2)
    with pytest.raises(FrameError, match="too short"):
        peek_header(bytes(12), 1)
    with pytest.raises(FrameError, match="no integer code"):
        peek_header(b"not json", 0)


def test_binary_layout_names_the_opaque() -> None:
    f = frame(RequestCode.GET_ROUTEINFO_BY_TOPIC, stype=BINARY)
    assert struct.unpack(">i", f[FRAME_BIN_OPAQUE:FRAME_BIN_TAIL])[0] == 77
    _, header, _ = split_frame(f)
    assert struct.unpack(">i", header[BIN_OPAQUE_START:BIN_OPAQUE_END])[0] == 77
    assert f[4:FRAME_BIN_OPAQUE] == header[:BIN_OPAQUE_START]
    assert f[FRAME_BIN_TAIL:] == header[BIN_OPAQUE_END:]


@pytest.mark.parametrize("stype", [JSON, BINARY])
def test_without_body_keeps_the_header(stype: SerializeType) -> None:
    whole = frame(103, stype=stype, body=b"b" * 1000, ext={"brokerName": "x"})
    head = without_body(whole)
    assert decode_command(head) == dataclasses.replace(decode_command(whole), body=None)
    assert without_body(head) is head
    assert without_body(b"\x00\x00") == b"\x00\x00"


@pytest.mark.parametrize("stype", [JSON, BINARY])
def test_a_frame_seen_through_a_memoryview_decodes_the_same(stype: SerializeType) -> None:
    whole = frame(103, stype=stype, body=b"b" * 1000, ext={"brokerName": "x"})
    cmd = decode_command(memoryview(b"junk" + whole)[4:])
    assert cmd == decode_command(whole) and type(cmd.body) is bytes
