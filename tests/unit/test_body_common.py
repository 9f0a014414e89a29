import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster.core.protocol.body_common import (
    BodyError,
    crc32_java,
    data_version_equal,
    decode_data_version,
    encode_data_version,
)

# ------------------------------------------------------------------ crc


def test_crc32_java_masks_to_31_bits() -> None:
    assert zlib.crc32(b"a") > 0x7FFFFFFF
    assert crc32_java(b"a") == zlib.crc32(b"a") & 0x7FFFFFFF == 0x68B7BE43
    assert crc32_java(b"123456789") == 0x4BF43926


@given(st.binary(max_size=4096), st.integers(0, 3 << 20))
def test_crc32_java_is_zlibs_crc_masked(data: bytes, pad: int) -> None:
    body = data + b"x" * pad  # up to a registration body's size
    assert crc32_java(body) == zlib.crc32(body) & 0x7FFFFFFF


def test_crc32_java_null_and_empty_are_zero() -> None:
    assert crc32_java(None) == 0
    assert crc32_java(b"") == 0


# ------------------------------------------------------------------ DataVersion


def test_data_version_state_version_round_trip() -> None:
    body = b'{"counter":3,"stateVersion":7,"timestamp":5}'
    dv = decode_data_version(body)
    assert list(dv) == ["counter", "stateVersion", "timestamp"]
    assert encode_data_version(dv) == body
    assert encode_data_version({"timestamp": 5, "counter": 3}) == b'{"counter":3,"timestamp":5}'


def test_data_version_missing_timestamp_uses_now() -> None:
    assert decode_data_version(b'{"counter":1}', now_ms=42) == {"counter": 1, "timestamp": 42}


def test_data_version_equal_is_timestamp_and_counter() -> None:
    a = {"counter": 1, "timestamp": 10}
    assert data_version_equal(a, {"counter": 1, "stateVersion": 9, "timestamp": 10})
    assert not data_version_equal(a, {"counter": 2, "timestamp": 10})
    assert not data_version_equal(a, {"counter": 1, "timestamp": 11})
    assert not data_version_equal(a, None)
    assert not data_version_equal(None, None)


@pytest.mark.parametrize("body", [None, b"", b"[]", b'"x"', b"{", b'{"counter":"abc"}', b"null"])
def test_decode_data_version_rejects_garbage(body: bytes | None) -> None:
    with pytest.raises(BodyError):
        decode_data_version(body)


def test_body_error_is_value_error() -> None:
    assert issubclass(BodyError, ValueError)
