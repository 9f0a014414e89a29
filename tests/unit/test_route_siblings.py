"""First route lookups answered in the I/O worker from another topic's template: a topic
of the same stored route, or, for a topic the store does not hold, another missing
topic's reply with this one's name."""

from __future__ import annotations

import pytest

from cluster.core.protocol.codes import ResponseCode, SerializeType
from state.queries import ABSENT
from tests.unit.test_route_replies import (
    STYPES,
    Generations,
    answer,
    counted,
    not_found,
    rendered,
    reply_to,
    request,
)
from worker.io.route_replies import RouteReplies, header_key, route_request


class Shared:
    """The store's answer to which topics share a route: topic -> key of its queue datas."""

    def __init__(self, gen: Generations, refs: dict[str, bytes]) -> None:
        self.gen, self.refs, self.asked = gen, refs, 0

    def __call__(self, topic: str, generation: bytes | None) -> bytes | None:
        self.asked += 1
        return self.refs.get(topic) if generation == self.gen.value else None


def shared_cache(max_bytes: int = 1 << 20) -> tuple[RouteReplies, Generations, Shared]:
    gen = Generations()
    shared = Shared(gen, {"A": b"k1", "B": b"k1", "C": b"k2", "S": b"k1"})
    cache = RouteReplies(gen, shared, max_bytes=max_bytes)
    cache.refresh()
    return cache, gen, shared


def learn_route(cache: RouteReplies, topic: str, body: bytes = b'{"x":1}',
                code: int = ResponseCode.SUCCESS, stype: SerializeType = SerializeType.JSON,
                **ext: str) -> None:
    frame = request(1, topic=topic, stype=stype, **ext)
    ask = route_request(frame)
    assert ask is not None
    cache.learn(header_key(frame)[0], cache.generation,  # type: ignore[index]
                reply_to(1, stype, body, code), cache.sibling(*ask))


def derived(cache: RouteReplies, topic: str, opaque: int,
            stype: SerializeType = SerializeType.JSON, **ext: str) -> bytes | None:
    frame = request(opaque, topic=topic, stype=stype, **ext)
    ask, (key, digits) = route_request(frame), header_key(frame)  # type: ignore[misc]
    assert ask is not None
    sibling = cache.sibling(*ask)
    t = None if sibling is None else cache.derive(key, sibling, ask[0])
    return None if t is None else rendered(t, digits, key)


@pytest.mark.parametrize("stype", STYPES)
def test_a_first_lookup_is_answered_from_a_topic_of_the_same_route(stype: SerializeType) -> None:
    cache, _, _ = shared_cache()
    learn_route(cache, "A", b'{"route":"k1"}', stype=stype)
    assert derived(cache, "B", 77, stype) == reply_to(77, stype, b'{"route":"k1"}')
    key = header_key(request(5, topic="B", stype=stype))[0]  # type: ignore[index]
    assert answer(cache, key, b"5") is not None  # learned under its own key as well
    assert derived(cache, "C", 1, stype) is None  # another route
    assert derived(cache, "Z", 1, stype) is None  # not in the store (or a route of its own)
    assert derived(cache, "B", 1, stype, acceptStandardJsonOnly="true") is None  # other shape


def test_not_found_replies_are_never_shared() -> None:
    cache, _, _ = shared_cache()
    learn_route(cache, "A", None, ResponseCode.TOPIC_NOT_EXIST)
    assert derived(cache, "B", 3) is None


def test_sharing_holds_for_one_generation() -> None:
    cache, gen, _ = shared_cache()
    learn_route(cache, "A")
    gen.value = b"2"  # the store moved on after the cache read its generation
    assert derived(cache, "B", 3) is None
    cache.refresh()
    assert derived(cache, "B", 3) is None and not cache.templates
    learn_route(cache, "A", b'{"new":1}')
    assert derived(cache, "B", 3) == reply_to(3, SerializeType.JSON, b'{"new":1}')


def test_a_forgotten_template_is_not_shared_and_the_count_stays_right() -> None:
    cache, _, _ = shared_cache(max_bytes=3000)
    learn_route(cache, "A", b"a" * 1200)
    for i in range(4):  # other replies push A's template out
        key = header_key(request(1, topic=f"N{i}"))[0]  # type: ignore[index]
        cache.learn(key, b"1", reply_to(1, SerializeType.JSON, bytes([66 + i]) * 1200))
    assert not any(t.rest.endswith(b"a" * 1200) for t in cache.templates.values())
    assert derived(cache, "B", 3) is None
    assert cache.size == counted(cache)


def test_the_shared_keys_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from worker.io import route_replies
    monkeypatch.setattr(route_replies, "SIBLINGS_MAX_BYTES", 400)
    cache, _, _ = shared_cache()
    for i in range(40):  # shapes of a client that never asks twice alike
        learn_route(cache, "A", junk=str(i))
        assert cache._siblings.size <= 400
    learn_route(cache, "A")
    assert derived(cache, "B", 3) == reply_to(3, SerializeType.JSON)


def absent_cache() -> RouteReplies:
    """A store holding topics A and B (one route); any other topic is absent."""
    gen = Generations()
    refs = {"A": b"k1", "B": b"k1"}
    cache = RouteReplies(gen, lambda topic, g: refs.get(topic, ABSENT) if g == gen.value
                         else None)
    cache.refresh()
    return cache


def learn_absent(cache: RouteReplies, topic: str, frame: bytes) -> None:
    """The pool's TOPIC_NOT_EXIST reply to ``frame``, a lookup of ``topic`` that missed."""
    ask, key = route_request(frame), header_key(frame)
    assert ask is not None and key is not None and ask[0] == topic
    stype = SerializeType(frame[0])
    cache.learn(key[0], cache.generation, not_found(1, topic, stype), cache.sibling(*ask))


@pytest.mark.parametrize("version", [409, 317])
def test_an_absent_topics_first_lookup_is_answered_with_its_own_name(version: int) -> None:
    cache = absent_cache()
    learn_absent(cache, "Ab-1", request(1, topic="Ab-1", version=version))
    for topic in ("Cd_2", "Ef%3", "Gh|4"):  # as long a name, the same request otherwise
        assert derived(cache, topic, 88, version=version) == not_found(88, topic), topic
        key = header_key(request(5, topic=topic, version=version))[0]  # type: ignore[index]
        assert answer(cache, key, b"5") == not_found(5, topic)  # and learned
    assert derived(cache, "Longer-1", 3, version=version) is None  # its length words differ
    assert derived(cache, "A", 3, version=version) is None  # held by the store
    assert derived(cache, "Ij-5", 3, version=version, acceptStandardJsonOnly="true") is None
    assert derived(cache, "Ij-5", 3, SerializeType.ROCKETMQ, version=version) is None
    assert cache.size == counted(cache)


def test_an_absent_name_is_taken_only_from_where_the_template_reads_it() -> None:
    """The same request laid out otherwise: its name is elsewhere in its key."""
    cache = absent_cache()
    plain = b'{"code":105,"extFields":{"topic":"Ab-1"},"flag":0,"opaque":1,"version":409}'
    moved = b'{"version":409,"opaque":2,"flag":0,"extFields":{"topic":"Cd_2"},"code":105}'
    frames = [len(h).to_bytes(4, "big") + h for h in (plain, moved)]
    learn_absent(cache, "Ab-1", frames[0])
    ask, (key, _) = route_request(frames[1]), header_key(frames[1])  # type: ignore[misc]
    assert ask is not None and ask[1] == route_request(frames[0])[1]  # type: ignore[index]
    sibling = cache.sibling(*ask)
    assert sibling is not None and cache.derive(key, sibling, ask[0]) is None
    assert cache.derive(key, sibling, "Ab-1") is None  # not its name either


def test_only_a_reply_naming_an_absent_topic_is_shared_so() -> None:
    """A success or a reply read whole (its name twice) learned for a topic the store said
    absent (the store moved on since) is not given to other absent topics."""
    cache = absent_cache()
    frame = request(1, topic="Ab-1")
    ask, key = route_request(frame), header_key(frame)
    assert ask is not None and key is not None
    cache.learn(key[0], cache.generation, reply_to(1, SerializeType.JSON), cache.sibling(*ask))
    assert derived(cache, "Cd_2", 3) is None
    learn_absent(cache, "JSON", request(1, topic="JSON"))  # "JSON" is in its reply twice
    assert derived(cache, "Cd_2", 3) is None
