"""Route replies answered in the I/O worker: keys, templates, generations, bounds."""

from __future__ import annotations

import pytest

from cluster.core.protocol.codes import FLAG_ONEWAY, ResponseCode, SerializeType
from cluster.core.protocol.command import RemotingCommand, response_to
from cluster.core.protocol.frame import encode_command
from worker.io.route_replies import RouteReplies, header_key, learnable, template_of

STYPES = (SerializeType.JSON, SerializeType.ROCKETMQ)


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
        assert template.render(key[1]) == reply_to(opaque, stype)


@pytest.mark.parametrize("stype", STYPES)
def test_topic_not_exist_replies_are_templates_too(stype: SerializeType) -> None:
    template = template_of(reply_to(3, stype, body=None, code=ResponseCode.TOPIC_NOT_EXIST))
    key = header_key(request(99, stype=stype))
    assert template is not None and key is not None
    assert template.render(key[1]) == reply_to(99, stype, None, ResponseCode.TOPIC_NOT_EXIST)
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


def test_only_well_formed_two_way_route_requests_are_learned() -> None:
    for stype in STYPES:
        assert learnable(request(1, stype=stype))
        assert not learnable(request(1, stype=stype, flag=FLAG_ONEWAY))
        no_topic = RemotingCommand(code=105, opaque=1, serialize_type=stype)
        assert not learnable(encode_command(no_topic)[4:])
        other = RemotingCommand(code=106, opaque=1, ext_fields={"topic": "T"},
                                serialize_type=stype)
        assert not learnable(encode_command(other)[4:])
    twice = request(1).replace(b'"opaque":1', b'"opaque":1,"opaque":1')
    assert not learnable(twice)


class Generations:
    def __init__(self) -> None:
        self.value: bytes | None = b"1"

    def __call__(self) -> bytes | None:
        return self.value


def answer(cache: RouteReplies, key: bytes, digits: bytes) -> bytes | None:
    t = cache.templates.get(key)
    return None if t is None else t.render(digits)


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
    cache = RouteReplies(Generations(), max_bytes=8000)
    cache.refresh()
    same, other = b"s" * 1000, b"o" * 1000
    keys = [header_key(request(1, topic=f"T{i}"))[0] for i in range(30)]  # type: ignore[index]
    for i, key in enumerate(keys):
        cache.learn(key, b"1", reply_to(1, SerializeType.JSON, other if i == 7 else same))
    assert len(cache.templates) == 30 and len({id(t) for t in cache.templates.values()}) == 2
    assert cache.size == sum(map(len, keys)) + sum(
        t.size for t in {id(t): t for t in cache.templates.values()}.values())
    for i, key in enumerate(keys):  # each still answers its own reply, with its own opaque
        body = other if i == 7 else same
        assert answer(cache, key, str(i).encode()) == reply_to(i, SerializeType.JSON, body)


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
    live = {id(t): t for t in cache.templates.values()}
    assert cache.size == sum(map(len, cache.templates)) + sum(t.size for t in live.values())
