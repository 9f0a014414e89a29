"""Remoting frames: length-prefixed, JSON or ROCKETMQ-binary header, opaque body.

Pure functions, no I/O (reference §1.1-1.6). ``FrameReader`` splits a byte
stream into frames for a server or client; ``decode_command`` and
``encode_command`` convert one frame to and from a ``RemotingCommand``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

import orjson

from cluster.core.protocol import fastjson
from cluster.core.protocol.codes import (
    DEFAULT_MAX_FRAME,
    LANGUAGE_BY_NAME,
    LANGUAGES,
    SerializeType,
)
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.lenient import loads_fastjson2, loads_lenient

_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
# Length word and header word at the start of a frame as it travels.
FRAME_PREFIX = struct.Struct(">iI")
HEADER_WORD = _U32
STYPE_SHIFT = 24  # header word: serialize type << 24 | header length
HEADER_LENGTH_MASK = 0xFFFFFF
MAX_HEADER_LENGTH = HEADER_LENGTH_MASK  # what the 24-bit header length field can say
_BIN_FIXED = struct.Struct(">hBhiiI")  # code, language, version, opaque, flag, remarkLen
_STYPES = (SerializeType.JSON, SerializeType.ROCKETMQ)


class FrameError(ValueError):
    """The byte stream is not a valid remoting frame; the connection must be closed."""


class FrameTooLarge(FrameError):
    """A frame or header longer than the configured limit."""


def _bad(msg: str) -> FrameError:
    return FrameError(msg)


class FrameReader:
    """Incremental splitter: feed bytes, get whole frames (without the length word).

    Each returned frame is ``header_word + header + body``. Raises FrameError on
    a length outside ``[4, max_frame - 4]``, a bad header length (or one above
    ``max_header``) or an unknown serialize type, as soon as the first 8 bytes of
    a frame are in; the caller closes the connection. Chunks of an incomplete
    frame are only collected, and joined once the frame is complete, so a large
    frame costs a single copy however many reads it arrives in.
    """

    __slots__ = ("_parts", "_size", "_need", "max_frame", "max_header")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME,
                 max_header: int = MAX_HEADER_LENGTH) -> None:
        self._parts: list[bytes] = []
        self._size = 0
        self._need = 4  # bytes needed before anything can be split
        self.max_frame = max_frame
        self.max_header = max_header

    @property
    def buffered(self) -> int:
        return self._size

    def feed(self, data: bytes) -> list[bytes]:
        self._parts.append(data)
        self._size += len(data)
        if self._size < self._need:
            return []
        if self._size == self._need > 8 and len(self._parts) > 1:
            # Exactly one frame, its length and header word checked when its first bytes
            # came: joined without its length word, so it is copied once.
            frame = b"".join([memoryview(self._parts[0])[4:], *self._parts[1:]])
            self._parts, self._size, self._need = [], 0, 4
            return [frame]
        buf = self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)
        frames, pos = self._split(buf)
        rest = buf[pos:] if pos else buf
        self._parts = [rest] if rest else []
        self._size = len(rest)
        self._need = self._needed(rest)
        return frames

    def _split(self, buf: bytes) -> tuple[list[bytes], int]:
        frames: list[bytes] = []
        pos, end = 0, len(buf)
        most, max_header = self.max_frame - 4, self.max_header
        prefix = FRAME_PREFIX.unpack_from
        while end - pos >= 8:
            total, word = prefix(buf, pos)
            hlen = word & HEADER_LENGTH_MASK
            # the checks below, inline: this loop runs for every request a node reads
            if not (4 <= total <= most and word >> STYPE_SHIFT < 2 and hlen <= total - 4
                    and hlen <= max_header):
                check_total(total, self.max_frame)
                check_header_word(word, total, max_header)
            after = pos + 4 + total
            if after > end:
                return frames, pos
            frames.append(buf[pos + 4 : after])
            pos = after
        if end - pos >= 4:
            check_total(_I32.unpack_from(buf, pos)[0], self.max_frame)
        return frames, pos

    def collecting(self) -> tuple[int, int]:
        """(length of the frame being collected, how many of its bytes are in), both without
        its length word, once its header word is checked; (0, 0) before."""
        return (self._need - 4, self._size - 4) if self._size >= 8 else (0, 0)

    def detach_into(self, buf: bytearray | memoryview, offset: int) -> int:
        """Copy what came of the frame being collected (:meth:`collecting`) into ``buf`` at
        ``offset`` and start afresh at the next frame: the caller reads the rest of the frame
        into ``buf`` itself. Returns the number of bytes copied."""
        pos, skip = offset, 4  # the length word may itself have come in pieces
        for part in self._parts:
            view = memoryview(part)[skip:]
            skip = max(0, skip - len(part))
            buf[pos : pos + len(view)] = view
            pos += len(view)
        self._parts, self._size, self._need = [], 0, 4
        return pos - offset

    def take_buffered(self) -> bytes:
        """The bytes of the frame being collected as they came (length word included), and
        start afresh: another reader (another process) goes on with the stream."""
        raw = b"".join(self._parts)
        self._parts, self._size, self._need = [], 0, 4
        return raw

    @staticmethod
    def _needed(rest: bytes) -> int:
        if len(rest) < 4:
            return 4
        whole: int = 4 + _I32.unpack_from(rest, 0)[0]
        return whole if len(rest) >= 8 else min(8, whole)  # the header word is checked early


def check_total(total: int, max_frame: int = DEFAULT_MAX_FRAME) -> None:
    if total < 4:
        raise _bad(f"frame length {total} outside [4, {max_frame - 4}]")
    if total + 4 > max_frame:
        raise FrameTooLarge(f"frame length {total} outside [4, {max_frame - 4}]")


def header_length(frame: bytes) -> int:
    """The header length a frame's header word (its first four bytes, ``HEADER_WORD``)
    says: the word's low three bytes, read without unpacking it."""
    return frame[1] << 16 | frame[2] << 8 | frame[3]


def check_header_word(word: int, total: int, max_header: int = MAX_HEADER_LENGTH) -> None:
    stype = word >> STYPE_SHIFT
    if stype not in (0, 1):
        raise _bad(f"unknown serialize type {stype}")
    hlen = word & HEADER_LENGTH_MASK
    if hlen > total - 4:
        raise _bad("decode error, bad header length")
    if hlen > max_header:
        raise FrameTooLarge(f"header length {hlen} above the limit {max_header}")


def split_frame(frame: bytes | memoryview, *, view_body: bool = False
                ) -> tuple[SerializeType, bytes, bytes | memoryview | None]:
    """(serialize type, header bytes, body or None) of one frame without its length word.
    A frame seen through a memoryview is copied once, into its header and body; with
    ``view_body`` its body stays a view of the frame."""
    if len(frame) < 4:
        raise _bad("frame shorter than its header word")
    (word,) = _U32.unpack_from(frame, 0)
    check_header_word(word, len(frame))
    hlen = word & HEADER_LENGTH_MASK
    rest = frame[4 + hlen :]
    body = rest if view_body else bytes(rest)  # bytes() of a bytes slice is that slice
    return _STYPES[word >> STYPE_SHIFT], bytes(frame[4 : 4 + hlen]), (body or None)


def decode_command(frame: bytes | memoryview, *, view_body: bool = False,
                   fastjson2: bool = False) -> RemotingCommand:
    """Decode one frame (no length word). Raises FrameError on a malformed header.
    ``view_body``: a frame seen through a memoryview keeps its body there (not copied).
    ``fastjson2``: a JSON header is read as RocketMQ 5.x reads it (fastjson2: comments
    and loose numbers accepted, unquoted field names and out-of-range integers refused),
    else as 4.9 does (fastjson 1)."""
    stype, header, body = split_frame(frame, view_body=view_body)
    if stype is SerializeType.JSON:
        cmd = _decode_json_header(header, fastjson2)
    else:
        cmd = _decode_binary_header(header)
    cmd.body = body  # type: ignore[assignment]  # a view only with view_body (for its handler)
    cmd.serialize_type = stype
    return cmd


def decode_frame(data: bytes) -> RemotingCommand:
    """Decode one complete frame including its leading length word."""
    if len(data) < 4:
        raise _bad("frame shorter than its length word")
    (total,) = _I32.unpack_from(data, 0)
    if total != len(data) - 4:
        raise _bad(f"length word {total} does not match {len(data) - 4} bytes")
    return decode_command(data[4:])


# ---------------------------------------------------------------- JSON header


def _java_string(v: Any) -> str:
    """String.valueOf semantics for a non-null extFields value."""
    if isinstance(v, str):
        return v
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (dict, list)):
        try:
            return orjson.dumps(v).decode()
        except orjson.JSONEncodeError as exc:  # nested deeper than orjson writes (255)
            raise _bad(f"extFields value cannot be rewritten as text: {exc}") from None
    return str(v)


def _language(v: Any) -> str | None:
    """fastjson's enum rules: an unknown name is null, an ordinal out of range is an error."""
    if isinstance(v, str):
        return v if v in LANGUAGE_BY_NAME else None
    if isinstance(v, int) and not isinstance(v, bool):
        if 0 <= v < len(LANGUAGES):
            return LANGUAGES[v]
        raise _bad(f"language ordinal {v} out of range")
    return None


def _int_field(obj: dict[str, Any], name: str) -> int:
    v = obj.get(name, 0)
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise _bad(f"header field {name} is not an integer")
    try:
        return int(v)
    except ValueError as exc:
        raise _bad(f"header field {name} is not an integer") from exc


def _int_field2(obj: dict[str, Any], name: str) -> int:
    """An int field as fastjson2 reads it: a number (a fraction cut off), a boolean, a
    numeric string; null is 0; anything else, or beyond int32, is an error."""
    v = obj.get(name, 0)
    try:
        number = 0 if v is None else int(v) if isinstance(v, (bool, int, float)) else int(
            str(v).strip())
    except (ValueError, OverflowError) as exc:
        raise _bad(f"header field {name} is not an integer") from exc
    if isinstance(v, (dict, list)) or not -(2**31) <= number < 2**31:
        raise _bad(f"header field {name} is not an int32")
    return number


def _decode_json_header(header: bytes, fastjson2: bool = False) -> RemotingCommand:
    try:
        obj = orjson.loads(header)
    except orjson.JSONDecodeError:
        try:
            obj = loads_fastjson2(header) if fastjson2 else loads_lenient(header)
        except ValueError as exc:
            raise _bad(f"header is not JSON: {exc}") from exc
    return json_header_command(obj, fastjson2)


def json_header_command(obj: Any, fastjson2: bool = False) -> RemotingCommand:
    """The command of a JSON header as parsed (``decode_command`` of a frame whose header
    orjson reads as ``obj``, but for its body and serialize type). Raises FrameError."""
    if not isinstance(obj, dict):
        raise _bad("JSON header is not an object")
    ext = obj.get("extFields")
    if ext is not None and not isinstance(ext, dict):
        raise _bad("extFields is not an object")
    remark = obj.get("remark")
    number = _int_field2 if fastjson2 else _int_field
    return RemotingCommand(
        code=number(obj, "code"),
        opaque=number(obj, "opaque"),
        flag=number(obj, "flag"),
        version=number(obj, "version"),
        language=_language(obj.get("language")),
        remark=remark if isinstance(remark, str) else None,
        ext_fields=None if ext is None else {str(k): _java_string(v) for k, v in ext.items()
                                             if v is not None},
    )


def _encode_json_header(cmd: RemotingCommand) -> bytes:
    parts = [f'{{"code":{cmd.code}']
    if cmd.ext_fields is not None:
        parts.append(',"extFields":')
        parts.append(fastjson.dumps(cmd.ext_fields))
    parts.append(f',"flag":{cmd.flag}')
    if cmd.language is not None:
        parts.append(f',"language":"{cmd.language}"')
    parts.append(f',"opaque":{cmd.opaque}')
    if cmd.remark is not None:
        parts.append(',"remark":')
        parts.append(fastjson.quote(cmd.remark))
    parts.append(f',"serializeTypeCurrentRPC":"{cmd.serialize_type.name}","version":{cmd.version}}}')
    return "".join(parts).encode("utf-8")


# ------------------------------------------------------------ binary header


def _read_str(header: bytes, pos: int, n: int, limit: int) -> tuple[str | None, int]:
    if n < 0 or n > limit or pos + n > len(header):
        raise _bad("binary header string length out of range")
    if n == 0:
        return None, pos
    try:
        return header[pos : pos + n].decode("utf-8"), pos + n
    except UnicodeDecodeError as exc:
        raise _bad("binary header string is not UTF-8") from exc


def _decode_binary_header(header: bytes) -> RemotingCommand:
    if len(header) < _BIN_FIXED.size + 4:
        raise _bad("binary header too short")
    code, lang, version, opaque, flag, rlen = _BIN_FIXED.unpack_from(header, 0)
    remark, pos = _read_str(header, _BIN_FIXED.size, rlen, len(header))
    if pos + 4 > len(header):
        raise _bad("binary header truncated before extFields")
    (ext_len,) = _U32.unpack_from(header, pos)
    pos += 4
    if ext_len > len(header) - pos:
        raise _bad("binary header extFields length out of range")
    ext = _decode_ext(header[pos : pos + ext_len]) if ext_len else None
    return RemotingCommand(
        code=code, opaque=opaque, flag=flag, version=version,
        language=LANGUAGES[lang] if lang < len(LANGUAGES) else None,
        remark=remark, ext_fields=ext,
    )


def _decode_ext(data: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    pos, end = 0, len(data)
    while pos < end:
        if pos + 2 > end:
            raise _bad("binary extFields truncated")
        (klen,) = struct.unpack_from(">h", data, pos)
        key, pos = _read_str(data, pos + 2, klen, end)
        if pos + 4 > end:
            raise _bad("binary extFields truncated")
        (vlen,) = _I32.unpack_from(data, pos)
        val, pos = _read_str(data, pos + 4, vlen, end)
        if key is not None and val is not None:
            out[key] = val
    return out


def _encode_binary_header(cmd: RemotingCommand) -> bytes:
    remark = cmd.remark.encode("utf-8") if cmd.remark else b""
    ext = bytearray()
    fields: Iterable[tuple[str | None, str | None]] = (cmd.ext_fields or {}).items()
    for k, v in fields:  # a None a caller put in is left out
        if k is None or v is None:
            continue
        kb, vb = k.encode("utf-8"), v.encode("utf-8")
        ext += struct.pack(">h", len(kb)) + kb + _I32.pack(len(vb)) + vb
    lang = LANGUAGE_BY_NAME.get(cmd.language or "JAVA", 0)
    fixed = _BIN_FIXED.pack(cmd.code, lang, cmd.version, cmd.opaque, cmd.flag, len(remark))
    return fixed + remark + _U32.pack(len(ext)) + bytes(ext)


# ------------------------------------------------------------------ encode


def encode_command(cmd: RemotingCommand) -> bytes:
    """The complete frame (with its length word) in ``cmd.serialize_type``."""
    return b"".join(encode_command_parts(cmd))


def encode_command_parts(cmd: RemotingCommand) -> list[bytes]:
    """The frame of `encode_command` as its head (length words and header) and its body, not
    joined: a large body (a topic list) is copied once, into where the frame goes next."""
    if cmd.serialize_type is SerializeType.ROCKETMQ:
        header = _encode_binary_header(cmd)
    else:
        header = _encode_json_header(cmd)
    body = cmd.body or b""
    head = FRAME_PREFIX.pack(4 + len(header) + len(body),
                             (int(cmd.serialize_type) << STYPE_SHIFT) | len(header)) + header
    return [head, body] if body else [head]
