"""PROXY protocol headers at the start of a 5.x connection (`worker.io.proxy_protocol`)."""

from __future__ import annotations

import socket
import struct

import pytest

from worker.io.proxy_protocol import V2_SIGNATURE, Prelude, ProxyError

FRAME = b"\x00\x00\x00\x10\x00\x00\x00\x0c" + b'{"code":106}'


def feed_all(chunks: list[bytes]) -> tuple[Prelude, list[bytes | None]]:
    prelude = Prelude()
    return prelude, [prelude.feed(c) for c in chunks]


def test_bytes_are_held_until_twelve_have_arrived() -> None:
    _, out = feed_all([FRAME[:5], FRAME[5:11], FRAME[11:]])
    assert out == [None, None, FRAME]


def test_v1_header_is_taken_off() -> None:
    header = b"PROXY TCP4 192.0.2.7 127.0.0.1 40001 9876\r\n"
    prelude, out = feed_all([header[:20], header[20:] + FRAME])
    assert out == [None, FRAME] and prelude.source == "192.0.2.7:40001"
    assert Prelude().feed(b"PROXY UNKNOWN\r\n" + FRAME) == FRAME


def test_v2_header_is_taken_off() -> None:
    addresses = socket.inet_pton(socket.AF_INET6, "2001:db8::5") + socket.inet_pton(
        socket.AF_INET6, "::1") + struct.pack(">HH", 40002, 9876)
    header = V2_SIGNATURE + struct.pack(">BBH", 0x21, 0x21, len(addresses)) + addresses
    prelude, out = feed_all([header[:14], header[14:30], header[30:] + FRAME])
    assert out == [None, None, FRAME] and prelude.source == "2001:db8::5:40002"


@pytest.mark.parametrize("bad", [
    b"PROXY TCP4 not-an-ip 127.0.0.1 1 2\r\n", b"PROXY " + b"x" * 120,
    V2_SIGNATURE + struct.pack(">BBH", 0x12, 0x11, 0)])
def test_a_malformed_header_is_refused(bad: bytes) -> None:
    with pytest.raises(ProxyError):
        Prelude().feed(bad)
