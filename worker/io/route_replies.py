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

Topics whose stored queue datas are equal have equal routes (``state.topicsets``), so
the first lookup of a topic is answered from the template of another topic when the
store says their routes are the same one (``state.queries.shared_route``: same stored
queue datas, nothing of the topic's own in its route) and the two requests read the
same but for topic, opaque and signature, as the business pool decodes them (``Shape``;
a signature is part of an answer only while reads are checked, and then nothing is
shared). Only SUCCESS templates are shared so between topics of a route: a TOPIC_NOT_EXIST
reply names its topic. Learned lookups of missing topics share a ``TopicTemplate`` instead,
which renders each reply with the name its own key holds; and the first lookup of a topic
the store does not hold (``state.queries.ABSENT``) is answered from the ``TopicTemplate``
of another absent topic whose name is as long (the reply's length words count it), asked
in a request of the same shape with its name where this key has it.

Pure logic: the readers of the generation and of a topic's shared route are passed in.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

import orjson

from cluster.core.protocol.acl import SIGNING_FIELDS
from cluster.core.protocol.codes import FLAG_ONEWAY, RequestCode, ResponseCode, SerializeType
from cluster.core.protocol.frame import FRAME_PREFIX as _PREFIX
from cluster.core.protocol.frame import HEADER_LENGTH_MASK as _HLEN
from cluster.core.protocol.frame import STYPE_SHIFT as _STYPE
from cluster.core.protocol.frame import (
    FrameError,
    decode_command,
    header_length,
    json_header_command,
)
from cluster.core.protocol.peek import BIN_OPAQUE_END, BIN_OPAQUE_START
from cluster.core.protocol.peek import FRAME_BIN_OPAQUE as _BIN_OPAQUE
from cluster.core.protocol.peek import FRAME_BIN_TAIL as _BIN_TAIL
from state.queries import ABSENT
from worker.generation_cache import GenerationCache
from worker.metrics import reply_code

MAX_BYTES = 96 << 20  # templates kept per I/O worker: the 40,000 routes of the mixed layout fit
_OPAQUE = re.compile(rb'"opaque":(-?(?:0|[1-9][0-9]*))(?=[,}])')  # canonical int, as written
_OPAQUE_KEY: Final = b'"opaque":'
# its bytes: "-", "0", "1", "9", ",", "}" (Final: compiled in, worker.compiled)
_MINUS: Final = 0x2D
_ZERO: Final = 0x30
_ONE: Final = 0x31
_NINE: Final = 0x39
_COMMA: Final = 0x2C
_CLOSE: Final = 0x7D
_INT32 = range(-(2**31), 2**31)
_BINARY = int(SerializeType.ROCKETMQ)
_CACHEABLE = (ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST)
SIBLINGS_MAX_BYTES = 4 << 20  # the keys of templates shared between topics, per I/O worker
# What the cache counts beyond the bytes of a key, and of a template: the objects that hold
# them and their dictionary slots (measured on CPython 3.11), so that the bytes it counts
# are about what the worker holds
KEY_BYTES = 96
TEMPLATE_BYTES = 192

HeaderKey = bytes  # a request header without its opaque
# A route request as the business pool decodes it, without its opaque, topic and signature:
# a topic's route is shared only while reads are not checked (`shared_route`).
Shape = bytes
# and the key of the topic's stored queue datas, or the length of an absent topic's name
Sibling = tuple[Shape, bytes | int]


def header_key(frame: bytes, json_replies: bool = False) -> tuple[HeaderKey, bytes] | None:
    """(header without its opaque, the opaque's bytes as sent) of a frame, or None.
    `json_replies` (5.x answers every request in JSON): a binary header's opaque is given
    as the decimal digits a JSON reply carries."""
    if len(frame) < 8:
        return None
    end = 4 + header_length(frame)
    if frame[0] == _BINARY:
        if end < _BIN_TAIL:
            return None
        opaque = frame[_BIN_OPAQUE:_BIN_TAIL]
        if json_replies:
            opaque = b"%d" % int.from_bytes(opaque, "big", signed=True)
        return b"\x01" + frame[4:_BIN_OPAQUE] + frame[_BIN_TAIL:end], opaque
    # what _OPAQUE.search(frame, 4, end) finds, without a match object (worker.compiled)
    end = min(end, len(frame))
    at = frame.find(_OPAQUE_KEY, 4, end)
    while at >= 0:
        start = at + len(_OPAQUE_KEY)
        stop = _number_end(frame, start, end)
        if stop >= 0:
            digits = frame[start:stop]
            if stop - start >= 10 and int(digits) not in _INT32:
                return None
            return frame[4:start] + frame[stop:end], digits
        at = frame.find(_OPAQUE_KEY, at + 1, end)
    return None


def _number_end(frame: bytes, at: int, end: int) -> int:
    """Where the integer ``frame[at:]`` starts with ends, written as JSON writes one
    (``-?(0|[1-9][0-9]*)``) and followed by "," or "}" before ``end``; else -1."""
    i = at
    if i < end and frame[i] == _MINUS:
        i += 1
    if i >= end:
        return -1
    first = frame[i]
    i += 1
    if first != _ZERO:  # a zero stands alone
        if not _ONE <= first <= _NINE:
            return -1
        while i < end and _ZERO <= frame[i] <= _NINE:
            i += 1
    return i if i < end and (frame[i] == _COMMA or frame[i] == _CLOSE) else -1


class Template:
    """A reply split around its opaque. ``lead`` is the length word, the header word and
    the header bytes before the opaque, for an opaque of ``width`` bytes (the last length
    rendered); ``rest`` the header bytes after the opaque, then the body.

    Lookups whose replies are equal but for the opaque share one template
    (``RouteReplies.learn``): the topics of a cluster whose brokers carry them all have the
    same route, so the replies a worker reads from are few and stay in the CPU's caches."""

    __slots__ = ("code", "lead", "width", "rest", "uses")

    def __init__(self, code: int, total: int, word: int, head: bytes, rest: bytes) -> None:
        """``total`` and ``word``: the reply's length word and header word, but for the
        opaque's digits."""
        self.code = code  # the reply's response code
        self.lead = _PREFIX.pack(total, word) + head
        self.width = 0
        self.rest = rest
        self.uses = 0  # keys of the cache that answer with it

    @property
    def size(self) -> int:
        """What the template costs the cache (``TEMPLATE_BYTES`` included)."""
        return len(self.lead) + len(self.rest) + TEMPLATE_BYTES

    @property
    def share_key(self) -> bytes | tuple[bytes, ...]:
        """What keys answered with this template share it by (``RouteReplies.learn``)."""
        return self.rest

    def same_reply(self, other: Template) -> bool:
        """Whether the two replies are equal but for their opaques (the words of ``lead``
        follow the opaque's width)."""
        return self.rest == other.rest and self.lead[_PREFIX.size :] == other.lead[_PREFIX.size :]

    def fit(self, digits: bytes) -> None:
        """Make ``lead`` the one for an opaque of ``digits``' width."""
        n = len(digits)
        if n != self.width:
            lead, grow = self.lead, n - self.width
            total, word = _PREFIX.unpack_from(lead, 0)
            self.lead = _PREFIX.pack(total + grow, word + grow) + lead[_PREFIX.size :]
            self.width = n

    def put(self, out: list[bytes], digits: bytes, key: HeaderKey = b"") -> None:
        """Add to ``out`` the pieces of the reply to a request whose opaque, as sent, is
        ``digits`` (and whose ``header_key`` is ``key``): the replies of a read are joined
        once, for one write."""
        if len(digits) != self.width:
            self.fit(digits)
        out.append(self.lead)
        out.append(digits)
        out.append(self.rest)


class TopicTemplate(Template):
    """A reply that names the request's topic (TOPIC_NOT_EXIST: "No topic route info in
    name server for the topic: T ..."), kept once for the lookups of every topic whose reply
    reads the same around the name: ``head``, the name as the request's key holds it at
    ``[start : len(key) - end]``, ``tail``. A key is answered with one only when that
    rendering is its own reply, byte for byte (``topic_template``); so a missing topic costs
    the worker its key, not a reply of its own."""

    __slots__ = ("head", "tail", "start", "end", "ident")

    def __init__(self, t: Template, head: bytes, tail: bytes, start: int, end: int) -> None:
        self.code, self.lead, self.width, self.rest, self.uses = t.code, t.lead, 0, b"", 0
        self.head, self.tail, self.start, self.end = head, tail, start, end
        self.ident = (t.lead, head, tail, b"%d,%d" % (start, end))

    @property
    def size(self) -> int:
        return len(self.lead) + len(self.head) + len(self.tail) + TEMPLATE_BYTES

    @property
    def share_key(self) -> bytes | tuple[bytes, ...]:
        return self.ident

    def put(self, out: list[bytes], digits: bytes, key: HeaderKey = b"") -> None:
        if len(digits) != self.width:
            self.fit(digits)
        out += self.lead, digits, self.head, key[self.start : len(key) - self.end], self.tail

    def names(self, key: HeaderKey, topic: str) -> bool:
        """Whether the reply rendered for ``key`` names ``topic``: the one valid name in the
        key is where the template takes it from, and is ``topic``."""
        start, stop = self.start, len(key) - self.end
        return _topic_span(key) == (start, stop) and key[start:stop].decode("ascii") == topic


def topic_template(key: HeaderKey, t: Template) -> TopicTemplate | None:
    """``t``, the TOPIC_NOT_EXIST reply to the request whose ``header_key`` is ``key``, as
    a ``TopicTemplate`` when its ``rest`` holds the request's topic once (a JSON header
    naming one valid topic, with no escape: ``_topic_span``), else None. ``t`` must be
    fitted to no opaque (``width`` 0: ``template_of``'s)."""
    if t.code != ResponseCode.TOPIC_NOT_EXIST or t.width or key[:1] != b"{":
        return None
    span = _topic_span(key)
    if span is None:
        return None
    start, stop = span
    topic = key[start:stop]
    at = t.rest.find(topic)
    if at < 0 or t.rest.find(topic, at + 1) >= 0:
        return None
    return TopicTemplate(t, t.rest[:at], t.rest[at + len(topic) :], start, len(key) - stop)


def route_request(frame: bytes, fastjson2: bool = False) -> tuple[str, Shape] | None:
    """(topic, ``Shape``) of a well-formed two-way route request with a topic and exactly
    one opaque in its header (a JSON header must parse strictly), else None: only such a
    request is ever learned. ``fastjson2``: the header is decoded as a 5.x node does."""
    word = _PREFIX.unpack_from(frame, 0)[0] if len(frame) >= 8 else 0
    stype, hlen = word >> _STYPE & 0xFF, word & _HLEN
    if stype == SerializeType.JSON:
        header = frame[4 : 4 + hlen]
        if len(_OPAQUE.findall(header)) != 1 or len(frame) != 4 + hlen:
            return None
        try:
            h = orjson.loads(header)
            strict = h["opaque"], (h.get("extFields") or {}).get("topic")
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
            return None
    elif stype != SerializeType.ROCKETMQ:
        return None
    try:  # a JSON header is not parsed twice: decode_command would read it as orjson did
        cmd = json_header_command(h, fastjson2) if stype == SerializeType.JSON \
            else decode_command(frame, fastjson2=fastjson2)
    except FrameError:
        return None
    topic, opaque = cmd.field("topic"), cmd.opaque
    if (cmd.code != RequestCode.GET_ROUTEINFO_BY_TOPIC or type(opaque) is not int
            or opaque not in _INT32 or type(cmd.flag) is not int or cmd.flag & FLAG_ONEWAY
            or type(topic) is not str
            or (stype == SerializeType.JSON and strict != (opaque, topic))):
        return None
    rest = sorted((k, v) for k, v in (cmd.ext_fields or {}).items()
                  if k != "topic" and k not in SIGNING_FIELDS)
    return topic, orjson.dumps((stype, cmd.code, cmd.flag, cmd.version, cmd.language,
                                cmd.remark, rest))


_TOPIC_SLOT = re.compile(rb'"topic":"([%|A-Za-z0-9_-]+)"')  # a valid topic name: no escapes
_TOPIC_KEY = b'"topic"'
SHAPES_MAX = 4096  # request layouts remembered per I/O worker


class RequestShapes:
    """``route_request`` of JSON route requests, without parsing those laid out as one parsed
    before but for their topic and opaque (the first lookups of a client's other topics).

    A layout is the header without its opaque (``header_key``) with the topic's value cut
    out. It is remembered only from a request that ``route_request`` took, whose header
    holds no backslash (no escape anywhere, so every key is written as it reads) and names
    ``"topic"`` exactly once, followed by a valid topic name that is the topic the request
    was read with: that is the extFields topic's value. Another header of that layout is
    the same bytes but for a valid topic name there and its opaque's digits, neither of
    which can add an escape, a key or an opaque: it reads the same but for its topic."""

    __slots__ = ("_fastjson2", "_known")

    def __init__(self, fastjson2: bool) -> None:
        self._fastjson2 = fastjson2
        self._known: dict[bytes, Shape] = {}

    def read(self, frame: bytes, key: HeaderKey) -> tuple[str, Shape] | None:
        """``route_request(frame)``, where ``key`` is the frame's ``header_key``."""
        slot = _topic_slot(frame, key)
        if slot is not None:
            shape = self._known.get(slot[0])
            if shape is not None:
                return slot[1], shape
        ask = route_request(frame, self._fastjson2)
        # the topic check follows from the slot's rules; it keeps what is learned tied to
        # what route_request read
        if ask is not None and slot is not None and ask[0] == slot[1]:
            if len(self._known) >= SHAPES_MAX:
                self._known.clear()
            self._known[slot[0]] = ask[1]
        return ask


def _topic_slot(frame: bytes, key: HeaderKey) -> tuple[bytes, str] | None:
    """(layout, topic) of a JSON header without a body whose one ``"topic"`` is followed by
    a valid topic name, else None."""
    if frame[0] != SerializeType.JSON or \
            len(frame) != 4 + header_length(frame):
        return None
    span = _topic_span(key)
    if span is None:
        return None
    start, stop = span
    return key[:start] + key[stop:], key[start:stop].decode("ascii")


def _topic_span(key: HeaderKey) -> tuple[int, int] | None:
    """Where in a header key with no backslash the valid topic name after its one
    ``"topic"`` lies, else None."""
    if b"\\" in key or key.count(_TOPIC_KEY) != 1:
        return None
    m = _TOPIC_SLOT.search(key)
    return None if m is None else m.span(1)


def template_of(reply: bytes) -> Template | None:
    """Split an encoded reply (with its length word) around its opaque; None if it cannot be."""
    code = reply_code(reply)
    if code not in _CACHEABLE:
        return None
    hword = _PREFIX.unpack_from(reply, 0)[1]
    stype, hlen = hword >> _STYPE & 0xFF, hword & _HLEN
    header = reply[8 : 8 + hlen]
    if stype == SerializeType.ROCKETMQ:
        if hlen < BIN_OPAQUE_END:
            return None
        start, stop = BIN_OPAQUE_START, BIN_OPAQUE_END
    elif stype == SerializeType.JSON:
        found = list(_OPAQUE.finditer(header))
        if len(found) != 1:
            return None
        start, stop = found[0].span(1)
    else:
        return None
    cut = stop - start
    return Template(code, len(reply) - 4 - cut, (stype << _STYPE) | (hlen - cut), header[:start],
                    header[stop:] + reply[8 + hlen :])


class Siblings(GenerationCache[bytes | None, Sibling, Template]):
    """The templates shared between topics, by ``Sibling``; a key costs its length and
    ``KEY_BYTES``."""

    __slots__ = ()

    def cost_of(self, key: Sibling, value: Template) -> int:
        ref = key[1]
        return len(key[0]) + (len(ref) if isinstance(ref, bytes) else 0) + KEY_BYTES


class RouteReplies(GenerationCache[bytes | None, HeaderKey, Template]):
    """Templates of one store generation (``worker.generation_cache``). A key costs its
    length and ``KEY_BYTES``, a template its size once however many keys share it.
    ``shared`` reads the key of a topic's route shared with other topics
    (``state.queries.shared_route``) in the store at a generation, None when it is not that
    generation any more."""

    __slots__ = ("_read_generation", "_read_shared", "_shared", "_siblings")

    def __init__(self, generation: Callable[[], bytes | None],
                 shared: Callable[[str, bytes | None], bytes | None] | None = None,
                 max_bytes: int = MAX_BYTES) -> None:
        super().__init__(max_bytes, generation=None)
        self._read_generation = generation
        self._read_shared = shared
        # the templates keys share, by their ``share_key``: a template's own ``rest`` (a reply
        # equal to one of them after the opaque but not before, another code with the same
        # remark and body, keeps a template of its own), a TopicTemplate's ``ident``
        self._shared: dict[bytes | tuple[bytes, ...], Template] = {}
        self._siblings = Siblings(SIBLINGS_MAX_BYTES, None)

    @property
    def templates(self) -> dict[HeaderKey, Template]:
        return self.entries

    def refresh(self) -> None:
        """Re-read the store generation; a new one empties the cache."""
        self.renew(self._read_generation())

    def clear(self) -> None:
        super().clear()
        self._shared.clear()
        self._siblings.clear()

    def sibling(self, topic: str, shape: Shape) -> Sibling | None:
        """What a request of ``shape`` for ``topic`` shares its reply with other topics' by,
        at the cache's generation; None when its route is its own."""
        if self._read_shared is None:
            return None
        ref = self._read_shared(topic, self.generation)
        if ref is None:
            return None
        return shape, len(topic) if ref == ABSENT else ref

    def derive(self, key: HeaderKey, sibling: Sibling, topic: str) -> Template | None:
        """The template of another topic whose reply is this request's (for ``topic``),
        kept under ``key`` too; None when no such topic was learned."""
        t = self._siblings.entries.get(sibling)
        if t is None or (isinstance(t, TopicTemplate) and not t.names(key, topic)):
            return None
        self.make_room(_key_cost(key))
        if not t.uses:  # its keys were all forgotten, or just now
            self._siblings.forget(sibling)
            return None
        self.add(key, t, _key_cost(key))
        t.uses += 1
        return t

    def learn(self, key: HeaderKey, generation: bytes | None, reply: bytes,
              sibling: Sibling | None = None) -> None:
        """Keep the pool's reply to a lookup sent while the store was at ``generation``;
        with ``sibling``, for the first lookups of the topics that share it too."""
        if generation != self.generation or key in self.entries:
            return
        t = template_of(reply)
        cost = _key_cost(key)
        if t is None or cost + t.size > self.max_bytes:
            return
        self.make_room(cost + t.size)
        t = self._held(key, t)
        self.add(key, t, cost if t.uses else cost + t.size)
        t.uses += 1
        if sibling is not None and sibling not in self._siblings.entries and (
                isinstance(t, TopicTemplate) if isinstance(sibling[1], int)
                else t.code == ResponseCode.SUCCESS):
            self._siblings.add(sibling, t, self._siblings.cost_of(sibling, t))

    def _held(self, key: HeaderKey, t: Template) -> Template:
        """The template the cache holds for ``t``, the reply to ``key``: one whose replies are
        ``t``'s but for the opaque, or the one of the replies naming their topics as ``t``
        does (``topic_template``); else ``t`` itself, kept for the next."""
        named = topic_template(key, t)
        if named is not None:
            return self._shared.setdefault(named.ident, named)
        held = self._shared.setdefault(t.rest, t)
        return held if held.same_reply(t) else t

    def forget(self, key: HeaderKey) -> None:
        t = self.entries.pop(key)
        self.size -= _key_cost(key)
        t.uses -= 1
        if not t.uses:
            if self._shared.get(t.share_key) is t:
                del self._shared[t.share_key]
            self.size -= t.size


def _key_cost(key: HeaderKey) -> int:
    return len(key) + KEY_BYTES
