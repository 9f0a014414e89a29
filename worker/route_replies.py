"""Route lookups answered by the I/O worker from replies the business pool already encoded.

A GET_ROUTEINFO_BY_TOPIC reply depends only on the store's content and on the
request's header (topic, serialize type, version and acceptStandardJsonOnly for
the body flavour, and the opaque it echoes); a route request has no body. So the
business pool's reply to a lookup is kept as a template (reply header split
around the opaque, and the body) under the request header with its opaque cut
out, stamped with the store generation read before the request went to the
pool. A later request whose header is the same but for the opaque is answered
from the template, with its own opaque bytes spliced in, while the generation is
unchanged: no header is parsed on a hit. The generation is re-read from the
store for every chunk of received bytes, so a lookup never sees a state older
than a write acknowledged before it arrived. Every write that changes what a
route reply shows bumps the generation (``state.store``), which empties the
cache. A miss is parsed in full, and only a well-formed two-way route request
is ever learned.

Pure logic: the generation reader is passed in.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from cluster.core.protocol.codes import FLAG_ONEWAY, RequestCode, ResponseCode, SerializeType
from cluster.core.protocol.frame import FrameError, decode_command

MAX_BYTES = 96 << 20  # templates kept per I/O worker: the 40,000 routes of the mixed layout fit
_PREFIX = struct.Struct(">iI")
_I32 = struct.Struct(">i")
_BIN_ROUTE = struct.Struct(">hBhi")  # code, language, version, opaque
_OPAQUE = re.compile(rb'"opaque":(-?(?:0|[1-9][0-9]*))(?=[,}])')  # canonical int, as written
_INT32 = range(-(2**31), 2**31)
_CACHEABLE = (ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST)

HeaderKey = bytes  # a request header without its opaque


def header_key(frame: bytes) -> tuple[HeaderKey, bytes] | None:
    """(header without its opaque, the opaque's bytes as sent) of a frame, or None."""
    if len(frame) < 8:
        return None
    word = _PREFIX.unpack_from(frame, 0)[0]
    stype, end = word >> 24 & 0xFF, 4 + (word & 0xFFFFFF)
    if stype == SerializeType.ROCKETMQ:
        return (b"\x01" + frame[4:9] + frame[13:end], frame[9:13]) if end >= 13 else None
    m = _OPAQUE.search(frame, 4, end)
    if m is None:
        return None
    digits = m[1]
    if len(digits) >= 10 and int(digits) not in _INT32:
        return None
    return frame[4 : m.start(1)] + frame[m.end(1) : end], digits


@dataclass(frozen=True, slots=True)
class Template:
    stype: int
    head: bytes   # header bytes before the opaque
    tail: bytes   # header bytes after the opaque
    body: bytes

    @property
    def size(self) -> int:
        return len(self.head) + len(self.tail) + len(self.body)

    def render(self, digits: bytes) -> bytes:
        """The reply to a request whose opaque, as sent, is ``digits``."""
        hlen = len(self.head) + len(digits) + len(self.tail)
        return b"".join((_PREFIX.pack(4 + hlen + len(self.body), (self.stype << 24) | hlen),
                         self.head, digits, self.tail, self.body))


def learnable(frame: bytes) -> bool:
    """Whether ``frame`` is a well-formed two-way route request with a topic, which
    exactly one opaque in its header (a JSON header must parse strictly)."""
    word = _PREFIX.unpack_from(frame, 0)[0] if len(frame) >= 8 else 0
    stype, hlen = word >> 24 & 0xFF, word & 0xFFFFFF
    if stype == SerializeType.JSON:
        header = frame[4 : 4 + hlen]
        if len(_OPAQUE.findall(header)) != 1 or len(frame) != 4 + hlen:
            return False
        try:
            h = orjson.loads(header)
            ext = h.get("extFields") or {}
            fields = (h["code"], h["opaque"], h.get("flag", 0), ext.get("topic"))
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
            return False
    elif stype == SerializeType.ROCKETMQ:
        try:
            cmd = decode_command(frame)
        except FrameError:
            return False
        fields = (cmd.code, cmd.opaque, cmd.flag, cmd.field("topic"))
    else:
        return False
    code, opaque, flag, topic = fields
    return (code == RequestCode.GET_ROUTEINFO_BY_TOPIC and type(opaque) is int
            and opaque in _INT32 and type(flag) is int and not flag & FLAG_ONEWAY
            and type(topic) is str)


def template_of(reply: bytes) -> Template | None:
    """Split an encoded reply (with its length word) around its opaque; None if it cannot be."""
    if len(reply) < 8:
        return None
    hword = _PREFIX.unpack_from(reply, 0)[1]
    stype, hlen = hword >> 24 & 0xFF, hword & 0xFFFFFF
    header, body = reply[8 : 8 + hlen], reply[8 + hlen :]
    if stype == SerializeType.ROCKETMQ:
        if hlen < _BIN_ROUTE.size or _BIN_ROUTE.unpack_from(header, 0)[0] not in _CACHEABLE:
            return None
        return Template(stype, header[:5], header[9:], body)
    if stype != SerializeType.JSON:
        return None
    found = list(_OPAQUE.finditer(header))
    if len(found) != 1 or not (header.startswith(b'{"code":0,')
                               or header.startswith(b'{"code":17,')):
        return None
    m = found[0]
    return Template(stype, header[: m.start(1)], header[m.end(1) :], body)


class RouteReplies:
    """Templates of one store generation; bounded in bytes (the oldest eighth goes first)."""

    def __init__(self, generation: Callable[[], bytes | None], max_bytes: int = MAX_BYTES) -> None:
        self._read_generation = generation
        self.generation: bytes | None = None
        self.max_bytes = max_bytes
        self.size = 0
        self.templates: dict[HeaderKey, Template] = {}
        self.hits = 0

    def refresh(self) -> None:
        """Re-read the store generation; a new one empties the cache."""
        gen = self._read_generation()
        if gen != self.generation:
            self.generation = gen
            self.templates.clear()
            self.size = 0

    def answer(self, key: HeaderKey, digits: bytes) -> bytes | None:
        t = self.templates.get(key)
        if t is None:
            return None
        self.hits += 1
        return t.render(digits)

    def learn(self, key: HeaderKey, generation: bytes | None, reply: bytes) -> None:
        """Keep the pool's reply to a lookup sent while the store was at ``generation``."""
        if generation != self.generation or key in self.templates:
            return
        t = template_of(reply)
        if t is None or t.size > self.max_bytes:
            return
        while self.templates and self.size + t.size > self.max_bytes:
            for k in list(self.templates)[: max(1, len(self.templates) // 8)]:
                self.size -= self.templates.pop(k).size
        self.templates[key] = t
        self.size += t.size
