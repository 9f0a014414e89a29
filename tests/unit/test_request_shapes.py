"""First route lookups read from the layout of an earlier request (``RequestShapes``): the
same answer as ``route_request`` for any header, however it is written."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.io import route_replies
from worker.io.route_replies import RequestShapes, header_key, route_request

# valid topic names, more often drawn, and names a valid one cannot be
TOPICS = ("T", "TopicA", "T", "B-1", "TopicA", "%RETRY%g-1", "a|b", "x" * 60,
          'q"t', "b\\s", "é", "", " T")
TOPIC_KEYS = ('"topic"', '"topic"', '"topic"', '"topic"', '"t\\u006fpic"', '"topic" ',
              '"topic":"X","topic"')


def _frame(header: str, body: bytes) -> bytes:
    raw = header.encode("utf-8")
    return struct.pack(">I", len(raw)) + raw + body


def _json_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@st.composite
def clients(draw: st.DrawFn) -> list[bytes]:
    """Route requests of one client: one header layout, as clients write it or with a twist
    a hostile one may add (an escaped or doubled topic key, a top-level topic, spaces, a
    remark naming topic, another code, a body), asked for several topics."""
    key = draw(st.sampled_from(TOPIC_KEYS))
    accept, lo = draw(st.booleans()), draw(st.booleans())
    remark = draw(st.sampled_from((False, False, False, True)))
    code = draw(st.sampled_from((105, 105, 105, 106)))
    flag = draw(st.sampled_from((0, 0, 1, 2)))
    language = draw(st.sampled_from(('"JAVA"', '"GO"', '"CPP"')))
    remark_text = draw(st.sampled_from(('"topic"', '"\\"topic\\":\\"Z\\""', '"r"')))
    top_at = draw(st.sampled_from((None, None, None, 0, 1, 2, 5)))
    version = draw(st.sampled_from((409, 409, 317)))
    sep = draw(st.sampled_from((",", ",", ", ")))
    body = draw(st.sampled_from((b"",) * 5 + (b"{}",)))
    frames = []
    for _ in range(draw(st.integers(2, 8))):
        topic, other = draw(st.sampled_from(TOPICS)), draw(st.sampled_from(TOPICS))
        ext = [f"{key}:{_json_string(topic)}"]
        if accept:
            ext.insert(0, '"acceptStandardJsonOnly":"true"')
        if lo:
            ext.append('"lo":"1"')
        top = [f'"code":{code}', '"extFields":{' + ",".join(ext) + "}", f'"flag":{flag}',
               f'"language":{language}',
               f'"opaque":{draw(st.integers(-(2**31), 2**31 - 1))}']
        if remark:
            top.append(f'"remark":{remark_text}')
        if top_at is not None:
            top.insert(min(top_at, len(top)), f'"topic":{_json_string(other)}')
        top.append(f'"version":{version}')
        frames.append(_frame("{" + sep.join(top) + "}", body))
    return frames


@settings(max_examples=400, deadline=None)
@given(st.lists(clients(), min_size=1, max_size=3), st.booleans())
def test_every_read_is_route_requests(batches: list[list[bytes]], fastjson2: bool) -> None:
    shapes = RequestShapes(fastjson2)
    for frame in [frame for frames in batches for frame in frames]:
        found = header_key(frame, fastjson2)
        if found is not None:
            assert shapes.read(frame, found[0]) == route_request(frame, fastjson2)


@pytest.mark.parametrize(("first", "then"), [
    # a top-level topic before the extFields one, equal to it in the first request
    ('{"topic":"T","code":105,"extFields":{"topic":"T"},"opaque":1}',
     '{"topic":"U","code":105,"extFields":{"topic":"T"},"opaque":2}'),
    # the extFields key escaped: the one literal "topic" is the top-level one
    ('{"code":105,"extFields":{"t\\u006fpic":"T"},"opaque":1,"topic":"T"}',
     '{"code":105,"extFields":{"t\\u006fpic":"T"},"opaque":2,"topic":"U"}'),
    # a space before the colon: the top-level topic is the one followed by a colon
    ('{"code":105,"extFields":{"topic" :"T"},"opaque":1,"topic":"T"}',
     '{"code":105,"extFields":{"topic" :"T"},"opaque":2,"topic":"U"}'),
    # a body after the header
    ('{"code":105,"extFields":{"topic":"T"},"opaque":1}',
     '{"code":105,"extFields":{"topic":"U"},"opaque":2}{}'),
    # a topic name that is not one: written with an escape
    ('{"code":105,"extFields":{"topic":"T"},"opaque":1}',
     '{"code":105,"extFields":{"topic":"\\u0054"},"opaque":2}'),
])
def test_layouts_are_not_taken_where_the_topic_could_be_another(first: str, then: str) -> None:
    shapes = RequestShapes(True)
    for header in (first, then):
        body = b"{}" if header.endswith("}{}") else b""
        frame = _frame(header.removesuffix("{}") if body else header, body)
        found = header_key(frame, True)
        assert found is not None
        assert shapes.read(frame, found[0]) == route_request(frame, True)


def _key(frame: bytes, fastjson2: bool = True) -> bytes:
    found = header_key(frame, fastjson2)
    assert found is not None
    return found[0]


def test_a_clients_other_topics_are_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    shapes = RequestShapes(True)
    header = ('{"code":105,"extFields":{"topic":"%s"},"flag":0,"language":"JAVA",'
              '"opaque":%d,"serializeTypeCurrentRPC":"JSON","version":409}')
    first = _frame(header % ("A", 1), b"")
    learned = route_request(first, True)
    assert learned is not None and shapes.read(first, _key(first)) == learned
    parsed: list[bytes] = []
    monkeypatch.setattr(route_replies, "route_request",
                        lambda frame, _: parsed.append(frame))
    other = _frame(header % ("Other-Topic_2", 77), b"")
    assert shapes.read(other, _key(other)) == ("Other-Topic_2", learned[1])
    assert parsed == []


def test_the_layouts_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(route_replies, "SHAPES_MAX", 3)
    shapes = RequestShapes(False)
    for version in range(10):
        frame = _frame('{"code":105,"extFields":{"topic":"A"},"flag":0,"opaque":1,'
                       f'"version":{version}}}', b"")
        assert shapes.read(frame, _key(frame, False)) == route_request(frame)
        assert len(shapes._known) <= 3
