"""Route replies answered in the I/O worker: keys, templates, generations, bounds."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cluster.core.protocol.codes import FLAG_ONEWAY, ResponseCode, SerializeType
from cluster.core.protocol.command import RemotingCommand, response_to
from cluster.core.protocol.frame import encode_command
from worker.io.route_replies import (
    _OPAQUE,
    KEY_BYTES,
    TEMPLATE_BYTES,
    RouteReplies,
    Template,
    TopicTemplate,
    header_key,
    route_request,
    template_of,
)

STYPES = (SerializeType.JSON, SerializeType.ROCKETMQ)


def rendered(template: Template, digits: bytes, key: bytes = b"") -> bytes:
    """The reply a template gives a request whose opaque, as sent, is ``digits`` (and
    whose header key is ``key``)."""
    out: list[bytes] = []
    template.put(out, digits, key)
    return b"".join(out)


def request(opaque: int, topic: str = "T", stype: SerializeType = SerializeType.JSON,
            version: int = 409, flag: int = 0, **ext: str) -> bytes:
    cmd = RemotingCommand(code=105, opaque=opaque, version=version, flag=flag,
                          ext_fields={"topic": topic, **ext}, serialize_type=stype)
    return encode_command(cmd)[4:]


def reply_to(frame_opaque: int, stype: SerializeType, body: bytes | None = b'{"x":1}',
             code: int = ResponseCode.SUCCESS) -> bytes:
    req = RemotingCommand(code=105, opaque=frame_opaque, serialize_type=stype)
    remark = None if code == ResponseCode.SUCCESS else "No topic route info"
    return encode_command(response_to(req, code, remark, body=body))


@pytest.mark.parametrize("stype", STYPES)
def test_a_rendered_template_equals_the_real_reply(stype: SerializeType) -> None:
    template = template_of(reply_to(7, stype))
    assert template is not None
    for opaque in (0, 1, -5, 123456, 2**31 - 1, -(2**31)):
        key = header_key(request(opaque, stype=stype))
        assert key is not None
        assert rendered(template, key[1]) == reply_to(opaque, stype)


@pytest.mark.parametrize("stype", STYPES)
def test_topic_not_exist_replies_are_templates_too(stype: SerializeType) -> None:
    template = template_of(reply_to(3, stype, body=None, code=ResponseCode.TOPIC_NOT_EXIST))
    key = header_key(request(99, stype=stype))
    assert template is not None and key is not None
    assert rendered(template, key[1]) == reply_to(99, stype, None, ResponseCode.TOPIC_NOT_EXIST)
    assert template.code == ResponseCode.TOPIC_NOT_EXIST
    assert template_of(reply_to(3, stype)).code == ResponseCode.SUCCESS  # type: ignore[union-attr]


@pytest.mark.parametrize("code", [ResponseCode.SYSTEM_ERROR, ResponseCode.SYSTEM_BUSY])
def test_errors_are_never_templates(code: int) -> None:
    for stype in STYPES:
        assert template_of(reply_to(1, stype, None, code)) is None


@pytest.mark.parametrize("stype", STYPES)
def test_the_key_is_the_header_but_its_opaque(stype: SerializeType) -> None:
    key = header_key(request(1, stype=stype))
    assert key is not None and header_key(request(2, stype=stype))[0] == key[0]  # type: ignore[index]
    for other in (request(1, topic="U", stype=stype), request(1, stype=stype, version=317),
                  request(1, stype=stype, acceptStandardJsonOnly="true")):
        assert header_key(other)[0] != key[0]  # type: ignore[index]


def test_a_json_opaque_must_be_a_plain_int32() -> None:
    good = request(5)
    for bad_digits in (b"2147483648", b"05", b"5.0"):
        assert header_key(good.replace(b'"opaque":5', b'"opaque":' + bad_digits)) is None


def _regex_key(frame: bytes) -> tuple[bytes, bytes] | None:
    """What the key of a JSON header is by its definition, ``_OPAQUE`` searched in it."""
    end = 4 + int.from_bytes(frame[1:4], "big")
    m = _OPAQUE.search(frame, 4, end)
    if m is None or (len(m[1]) >= 10 and not -2**31 <= int(m[1]) < 2**31):
        return None
    return frame[4 : m.start(1)] + frame[m.end(1) : end], m[1]


_OPAQUE_TEXT = st.lists(st.sampled_from(
    [b'"opaque":', b"-", b"0", b"1", b"9", b"5", b",", b"}", b'"', b"x", b" ", b"2147483648",
     b"-2147483648", b"00"]), max_size=24).map(b"".join)


@given(_OPAQUE_TEXT, _OPAQUE_TEXT, st.integers(-3, 3))
@example(b"", b"05,", 0)
@example(b"", b"-0,", 0)
@example(b"", b"-,", 0)
@example(b"", b"7", 0)
@example(b'"opaque":x,', b"12}", 0)
@example(b"", b"12,", 1)
@example(b"", b"12", -1)
@example(b"", b"2147483648,", 0)
@settings(max_examples=1000)
def test_the_json_opaque_is_found_as_its_pattern_defines_it(
        before: bytes, after: bytes, cut: int) -> None:
    """The scan ``header_key`` makes (no regular expression on the hot path) finds what
    ``_OPAQUE`` does, leftmost match and the header's end included (a header word that
    says more than the frame holds too)."""
    header = b'{"code":105,' + before + b'"opaque":' + after
    frame = (len(header) - cut).to_bytes(4, "big") + header  # a header word, JSON
    assert header_key(frame) == _regex_key(frame)


def test_only_well_formed_two_way_route_requests_are_learned() -> None:
    for stype in STYPES:
        assert route_request(request(1, stype=stype)) is not None
        assert route_request(request(1, stype=stype, flag=FLAG_ONEWAY)) is None
        no_topic = RemotingCommand(code=105, opaque=1, serialize_type=stype)
        assert route_request(encode_command(no_topic)[4:]) is None
        other = RemotingCommand(code=106, opaque=1, ext_fields={"topic": "T"},
                                serialize_type=stype)
        assert route_request(encode_command(other)[4:]) is None
    twice = request(1).replace(b'"opaque":1', b'"opaque":1,"opaque":1')
    assert route_request(twice) is None


@pytest.mark.parametrize("stype", STYPES)
def test_a_shape_is_the_request_but_its_topic_and_opaque(stype: SerializeType) -> None:
    topic, shape = route_request(request(1, topic="T", stype=stype))  # type: ignore[misc]
    assert topic == "T"
    assert route_request(request(9, topic="U", stype=stype)) == ("U", shape)
    others = [request(1, stype=stype, version=317), request(1, stype=stype, flag=4),
              request(1, stype=stype, acceptStandardJsonOnly="true"),
              request(1, stype=stype, __ZONE_MODE="true", __ZONE_NAME="z"),
              request(1, stype=STYPES[1 - STYPES.index(stype)])]
    assert len({route_request(o)[1] for o in others} | {shape}) == 6  # type: ignore[index]


@pytest.mark.parametrize("stype", STYPES)
def test_a_shape_leaves_out_the_signature(stype: SerializeType) -> None:
    """Clients that always sign (mqadmin with its default account, the C++ clients) sign
    each topic's lookup differently; the signature is part of no answer unless reads are
    checked, and then the store shares nothing (`shared_route`)."""
    plain = route_request(request(1, topic="T", stype=stype))
    signed = [route_request(request(1, topic=t, stype=stype, AccessKey="ak", Signature=t * 3,
                                    SecurityToken="st", StrictSignature=t)) for t in "TU"]
    assert {s[1] for s in signed} == {plain[1]}  # type: ignore[index]


def test_a_shape_is_what_the_pool_decodes_not_the_bytes() -> None:
    plain = b'{"code":105,"extFields":{"topic":"T","a":"1"},"flag":0,"opaque":1,"version":409}'
    moved = b'{"version":409,"opaque":2,"flag":0,"extFields":{"a":"1","topic":"V"},"code":105}'
    frames = [len(h).to_bytes(4, "big") + h for h in (plain, moved)]
    (t1, s1), (t2, s2) = (route_request(f) for f in frames)  # type: ignore[misc]
    assert (t1, t2) == ("T", "V") and s1 == s2
    assert header_key(frames[0])[0] != header_key(frames[1])[0]  # type: ignore[index]


class Generations:
    def __init__(self) -> None:
        self.value: bytes | None = b"1"

    def __call__(self) -> bytes | None:
        return self.value


def counted(cache: RouteReplies) -> int:
    """The bytes the cache should count: every key, and every template once."""
    live = {id(t): t for t in cache.templates.values()}
    return sum(len(k) + KEY_BYTES for k in cache.templates) + sum(t.size for t in live.values())


def answer(cache: RouteReplies, key: bytes, digits: bytes) -> bytes | None:
    t = cache.templates.get(key)
    return None if t is None else rendered(t, digits, key)


def test_a_template_serves_only_its_generation() -> None:
    gen = Generations()
    cache = RouteReplies(gen)
    cache.refresh()
    key, digits = header_key(request(1))  # type: ignore[misc]
    cache.learn(key, b"1", reply_to(1, SerializeType.JSON))
    assert answer(cache, key, b"42") == reply_to(42, SerializeType.JSON)
    gen.value = b"2"
    cache.refresh()
    assert answer(cache, key, b"42") is None
    cache.learn(key, b"1", reply_to(1, SerializeType.JSON))  # sent before the write: not kept
    assert answer(cache, key, b"42") is None
    cache.learn(key, b"2", reply_to(1, SerializeType.JSON))
    assert answer(cache, key, digits) == reply_to(1, SerializeType.JSON)


def test_the_cache_is_bounded_in_bytes() -> None:
    cache = RouteReplies(Generations(), max_bytes=2000)
    cache.refresh()
    for i in range(20):
        key, _ = header_key(request(1, topic=f"T{i}"))  # type: ignore[misc]
        cache.learn(key, b"1", reply_to(1, SerializeType.JSON, bytes([65 + i]) * 300))
    assert 0 < cache.size <= 2000 and len(cache.templates) < 20
    newest, _ = header_key(request(1, topic="T19"))  # type: ignore[misc]
    assert newest in cache.templates


def test_lookups_with_equal_replies_share_one_template_counted_once() -> None:
    cache = RouteReplies(Generations(), max_bytes=12_000)
    cache.refresh()
    same, other = b"s" * 1000, b"o" * 1000
    keys = [header_key(request(1, topic=f"T{i}"))[0] for i in range(30)]  # type: ignore[index]
    for i, key in enumerate(keys):
        cache.learn(key, b"1", reply_to(1, SerializeType.JSON, other if i == 7 else same))
    assert len(cache.templates) == 30 and len({id(t) for t in cache.templates.values()}) == 2
    assert cache.size == counted(cache) == sum(map(len, keys)) + 30 * KEY_BYTES + sum(
        t.size for t in {id(t): t for t in cache.templates.values()}.values())
    for i, key in enumerate(keys):  # each still answers its own reply, with its own opaque
        body = other if i == 7 else same
        assert answer(cache, key, str(i).encode()) == reply_to(i, SerializeType.JSON, body)


def test_a_template_rendered_for_another_width_is_still_shared() -> None:
    cache = RouteReplies(Generations())
    cache.refresh()
    first, second = (header_key(request(1, topic=t))[0] for t in "AB")  # type: ignore[index]
    cache.learn(first, b"1", reply_to(1, SerializeType.JSON))
    assert answer(cache, first, b"123456") == reply_to(123456, SerializeType.JSON)
    cache.learn(second, b"1", reply_to(1, SerializeType.JSON))
    assert cache.templates[first] is cache.templates[second]
    assert answer(cache, second, b"7") == reply_to(7, SerializeType.JSON)


def test_replies_equal_after_the_opaque_but_not_before_are_two_templates() -> None:
    """Replies with the same bytes after their opaques (remark, body) but another code."""
    cache = RouteReplies(Generations(), max_bytes=2500)
    cache.refresh()

    def reply(code: int, opaque: int = 1) -> bytes:
        req = RemotingCommand(code=105, opaque=opaque)
        return encode_command(response_to(req, code, "same", body=b"b" * 600))

    ok, missing = (header_key(request(1, topic=t))[0] for t in "AB")  # type: ignore[index]
    cache.learn(ok, b"1", reply(ResponseCode.SUCCESS))
    cache.learn(missing, b"1", reply(ResponseCode.TOPIC_NOT_EXIST))
    assert cache.templates[ok] is not cache.templates[missing]
    assert answer(cache, ok, b"5") == reply(ResponseCode.SUCCESS, 5)
    assert answer(cache, missing, b"6") == reply(ResponseCode.TOPIC_NOT_EXIST, 6)
    # the first is forgotten to make room; the second still answers, and a third key with
    # the first's reply learns it again
    cache.learn(header_key(request(1, topic="C"))[0], b"1",  # type: ignore[index]
                reply_to(1, SerializeType.JSON, b"c" * 700))
    assert ok not in cache.templates
    assert answer(cache, missing, b"8") == reply(ResponseCode.TOPIC_NOT_EXIST, 8)
    again = header_key(request(1, topic="D"))[0]  # type: ignore[index]
    cache.learn(again, b"1", reply(ResponseCode.SUCCESS))
    assert answer(cache, again, b"9") == reply(ResponseCode.SUCCESS, 9)
    assert cache.size == counted(cache)
    # a template of its own forgotten leaves the shared one shared
    cache.clear()
    cache.learn(ok, b"1", reply(ResponseCode.SUCCESS))
    cache.learn(missing, b"1", reply(ResponseCode.TOPIC_NOT_EXIST))
    cache.forget(missing)
    cache.learn(again, b"1", reply(ResponseCode.SUCCESS))
    assert cache.templates[again] is cache.templates[ok]


def test_a_shared_template_goes_with_the_last_key_that_uses_it() -> None:
    cache = RouteReplies(Generations(), max_bytes=3000)
    cache.refresh()
    first = header_key(request(1, topic="A"))[0]  # type: ignore[index]
    cache.learn(first, b"1", reply_to(1, SerializeType.JSON, b"a" * 1200))
    cache.learn(header_key(request(1, topic="B"))[0], b"1",  # type: ignore[index]
                reply_to(1, SerializeType.JSON, b"a" * 1200))
    before = cache.size
    for i in range(8):  # different replies: the oldest keys, then their template, make room
        key = header_key(request(1, topic=f"N{i}"))[0]  # type: ignore[index]
        cache.learn(key, b"1", reply_to(1, SerializeType.JSON, bytes([66 + i]) * 1200))
        assert cache.size <= 3000
    assert first not in cache.templates and before > 0
    assert cache.size == counted(cache)


NOT_FOUND = ("No topic route info in name server for the topic: %s\n"
             "See https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.")


def not_found(opaque: int, topic: str, stype: SerializeType = SerializeType.JSON) -> bytes:
    """A node's TOPIC_NOT_EXIST reply to a lookup of ``topic``: it names the topic."""
    req = RemotingCommand(code=105, opaque=opaque, serialize_type=stype)
    return encode_command(response_to(req, ResponseCode.TOPIC_NOT_EXIST, NOT_FOUND % topic,
                                      body=None))


def learn_missing(cache: RouteReplies, topic: str, stype: SerializeType = SerializeType.JSON,
                  **ext: str) -> bytes:
    key = header_key(request(1, topic=topic, stype=stype, **ext))[0]  # type: ignore[index]
    cache.learn(key, cache.generation, not_found(1, topic, stype))
    return key


def answers_each_its_own(cache: RouteReplies, keys: dict[str, bytes],
                         stype: SerializeType = SerializeType.JSON, **ext: str) -> None:
    for topic, key in keys.items():
        for opaque in (7, 123456, -1, 0):
            frame = request(opaque, topic=topic, stype=stype, **ext)
            assert header_key(frame) == (key, header_key(frame)[1])  # type: ignore[index]
            got = answer(cache, key, header_key(frame)[1])  # type: ignore[index]
            assert got == not_found(opaque, topic, stype), topic


MISSING = ("Ab-1", "Cd_2", "Ef%3", "Gh|4", "A-much-longer-topic-name")


def test_missing_topics_share_a_template_each_answered_with_its_own_name() -> None:
    cache = RouteReplies(Generations())
    cache.refresh()
    keys = {topic: learn_missing(cache, topic) for topic in MISSING}
    answers_each_its_own(cache, keys)
    held = {id(t): t for t in cache.templates.values()}
    # one per length of the name (the reply's length words hold it)
    assert len(held) == 2 and all(type(t) is TopicTemplate for t in held.values())
    assert cache.size == counted(cache)
    # the keys, and two replies but for the names
    assert cache.size < sum(len(k) + KEY_BYTES for k in keys.values()) + 2 * (
        len(not_found(1, "")) + TEMPLATE_BYTES)


@pytest.mark.parametrize(("topic", "ext"), [
    ("JSON", {}),  # the name is in the reply twice ("serializeTypeCurrentRPC":"JSON")
    ("Ab-1", {"note": 'a "quoted" word'}),  # an escape in the request's header
    ("Ab-1", {"extra": '"topic":"Cd_2"'}),  # "topic" twice in it
])
def test_a_reply_not_read_around_its_name_keeps_a_template_of_its_own(
        topic: str, ext: dict[str, str]) -> None:
    cache = RouteReplies(Generations())
    cache.refresh()
    keys = {topic: learn_missing(cache, topic, **ext)}
    answers_each_its_own(cache, keys, **ext)
    assert type(cache.templates[keys[topic]]) is Template


def test_binary_requests_keep_a_template_per_topic() -> None:
    cache = RouteReplies(Generations())
    cache.refresh()
    keys = {topic: learn_missing(cache, topic, SerializeType.ROCKETMQ) for topic in MISSING[:2]}
    answers_each_its_own(cache, keys, SerializeType.ROCKETMQ)
    assert len({id(t) for t in cache.templates.values()}) == 2


def test_a_shared_name_template_goes_with_the_last_key_that_uses_it() -> None:
    cache = RouteReplies(Generations())
    cache.refresh()
    keys = {topic: learn_missing(cache, topic) for topic in MISSING[:4]}
    first = cache.templates[keys["Ab-1"]]
    for key in list(keys.values())[:3]:
        cache.forget(key)
        assert cache.size == counted(cache)
    assert cache.templates[keys["Gh|4"]] is first
    cache.forget(keys["Gh|4"])
    assert cache.size == 0 and not cache.templates
    again = {"Cd_2": learn_missing(cache, "Cd_2")}
    assert cache.templates[again["Cd_2"]] is not first  # not the one let go
    answers_each_its_own(cache, again)
    assert cache.size == counted(cache)
