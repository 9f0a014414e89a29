"""Header peek: a frame's request code, flag and serialize type without decoding its header.

The layout facts every reader of raw frames needs live here: the header word
(serialize type in its top byte, header length in the low 24 bits) and where the
fixed fields of a ROCKETMQ binary header sit. ``peek`` and ``peek_header`` read
code and flag from either header encoding and raise ``FrameError`` on input
they cannot read; ``peek_code`` is the hot-path variant that never raises and
gives None instead. None of them validates the rest of the header: a frame
that peeks fine may still fail ``decode_command``.

A JSON header's code and flag are its first ``"code"`` and ``"flag"`` members
with a JSON integer value (every RocketMQ client writes them so, top level, and
extFields values are strings); a header without a ``"flag"`` member has flag 0,
as in a full decode.
"""

from __future__ import annotations

import re
import struct
from typing import NamedTuple

from cluster.core.protocol.codes import SerializeType
from cluster.core.protocol.frame import (
    HEADER_LENGTH_MASK,
    HEADER_WORD,
    STYPE_SHIFT,
    FrameError,
    check_header_word,
)

# ROCKETMQ binary header: code int16, language byte, version int16, opaque int32,
# flag int32, then remark and extFields; offsets within the header.
BIN_CODE = struct.Struct(">h")
BIN_OPAQUE_START = 5
BIN_OPAQUE_END = 9
BIN_FLAG_END = 13
# Where the binary header's opaque starts and where the rest after it starts, within a
# frame (header word + header): plain offsets, which compiled code slices by
# (worker.compiled).
FRAME_BIN_OPAQUE = 4 + BIN_OPAQUE_START
FRAME_BIN_TAIL = 4 + BIN_OPAQUE_END
_BIN_CODE_FLAG = struct.Struct(">h7xi")  # code, (language, version, opaque), flag

_JSON_CODE = re.compile(rb'"code"[ \t\r\n]*:[ \t\r\n]*(-?[0-9]{1,10})(?=[ \t\r\n]*[,}])')
_JSON_FLAG = re.compile(rb'"flag"[ \t\r\n]*:[ \t\r\n]*(-?[0-9]{1,10})(?=[ \t\r\n]*[,}])')
_ROCKETMQ = int(SerializeType.ROCKETMQ)


class HeaderPeek(NamedTuple):
    code: int
    flag: int
    serialize_type: SerializeType


def peek(frame: bytes) -> HeaderPeek:
    """Code, flag and serialize type of one frame (header word + header + body).

    Raises FrameError when the frame is shorter than its header word, the header
    word is invalid (``check_header_word``) or the header holds no readable code.
    """
    if len(frame) < 4:
        raise FrameError("frame shorter than its header word")
    (word,) = HEADER_WORD.unpack_from(frame, 0)
    check_header_word(word, len(frame))
    hlen = word & HEADER_LENGTH_MASK
    return peek_header(frame[4 : 4 + hlen], word >> STYPE_SHIFT)


def peek_header(header: bytes, serialize_type: int) -> HeaderPeek:
    """Code, flag and serialize type of header bytes in the given encoding (0 JSON, 1 binary).

    Raises FrameError on an unknown serialize type, a binary header shorter than
    its code and flag, or a JSON header without an integer ``"code"`` member.
    """
    if serialize_type == SerializeType.ROCKETMQ:
        if len(header) < BIN_FLAG_END:
            raise FrameError("binary header too short for its code and flag")
        code, flag = _BIN_CODE_FLAG.unpack_from(header, 0)
        return HeaderPeek(code, flag, SerializeType.ROCKETMQ)
    if serialize_type != SerializeType.JSON:
        raise FrameError(f"unknown serialize type {serialize_type}")
    m = _JSON_CODE.search(header)
    if m is None:
        raise FrameError("JSON header has no integer code")
    f = _JSON_FLAG.search(header)
    return HeaderPeek(int(m[1]), int(f[1]) if f else 0, SerializeType.JSON)


def peek_code(frame: bytes) -> int | None:
    """The request code of one frame (header word + header + body), or None when the
    frame is shorter than 6 bytes, of an unknown serialize type, a binary header
    shorter than 2 bytes or a JSON header without an integer ``"code"`` member."""
    if len(frame) < 6:
        return None
    stype = frame[0]
    if stype == _ROCKETMQ:
        if frame[3] >= 2 or frame[2] or frame[1]:  # header length >= 2
            code: int = BIN_CODE.unpack_from(frame, 4)[0]
            return code
        return None
    if stype:
        return None
    if frame[4:12] == b'{"code":':  # the code first, as Java and ``encode_command`` write it
        comma = frame.find(b",", 13, 23)  # after 1 to 10 digits
        # inside the header: its length (the word's low 24 bits) is above comma - 4
        if comma > 0 and (frame[3] > comma - 4 or frame[2] or frame[1]):
            digits = frame[12:comma]
            if digits.isdigit():
                return int(digits)
    # serialize type 0: the header word is the header length
    m = _JSON_CODE.search(frame, 4, 4 + HEADER_WORD.unpack_from(frame, 0)[0])
    return int(m[1]) if m else None


def without_body(frame: bytes | memoryview) -> bytes:
    """The frame cut after its header (a frame with no body), as bytes of its own: enough to
    answer it. A frame whose header word cannot be read is returned whole."""
    if len(frame) < 4:
        return bytes(frame)
    end = 4 + (HEADER_WORD.unpack_from(frame, 0)[0] & HEADER_LENGTH_MASK)
    return bytes(frame[:end]) if end < len(frame) else bytes(frame)
