"""The piece reader (cluster.core.protocol.register_scan) on 5.x bodies: a mappingDataVersion
before the table, ``attributes`` in every TopicConfig, the static-topic maps after the
table. Whatever it takes must be what the full decode gives; anything else is left to it."""

from __future__ import annotations

from typing import Any

import pytest

from cluster.core.protocol import register_body, register_layout, register_scan
from cluster.core.protocol.body_common import BodyError
from cluster.core.protocol.mapping_body import plain_mappings

STAMP = b'"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":5},'
INFO = {"bname": "b", "currIdMap": {"0": 0, "10": 1}, "dirty": False, "epoch": 7,
        "scope": "__global__", "topic": "T1", "totalQueues": 2}


def cfgs(n: int = 40, **attributes: dict[str, str]) -> dict[str, dict[str, Any]]:
    """n 5.x TopicConfigs, T0.. with empty attributes unless given by topic."""
    return {f"T{i}": register_body.topic_config(f"T{i}", attributes=attributes.get(f"T{i}", {}))
            for i in range(n)}


def body5(configs: dict[str, dict[str, Any]], counter: int = 1, *, stamp: bool = True,
          mappings: dict[str, Any] | None = None, tail: bool = True) -> bytes:
    body = register_body.encode_register_body(
        {"counter": counter, "stateVersion": 0, "timestamp": 1}, configs, [], False,
        with_attributes=True, mappings=(mappings or {}) if tail else None)
    return body.replace(b'"topicConfigTable":', STAMP + b'"topicConfigTable":', 1) if stamp \
        else body


def plain(body: bytes) -> register_scan.PlainTable:
    head = register_body.register_head(body, False, 409)
    assert head is not None
    return register_scan.PlainTable(body, head, 409, None)


def known(body: bytes) -> register_scan.KnownPieces:
    table = plain(body)
    pieces = table.known(table.queues())
    assert pieces is not None
    return pieces


def full(body: bytes) -> dict[str, register_body.QueueFields]:
    return register_body.decode_register_queues(body, False, 409)


@pytest.mark.parametrize(("stamp", "tail"), [(True, True), (False, True), (True, False),
                                             (False, False)])
def test_a_5x_table_is_cut_into_one_piece_per_topic(stamp: bool, tail: bool) -> None:
    body = body5(cfgs(5, T3={"+message.type": "NORMAL", "k": "v"}), stamp=stamp, tail=tail)
    table = plain(body)
    layout = table.layout()
    assert layout is not None and layout.per == 2
    assert body[layout.end:].startswith(b'},"topicQueueMappingDetailMap"' if tail else b"}}}")
    pieces = table.pieces()
    assert pieces is not None and len(pieces) == 5
    assert pieces[3] == (b',"T3":{"attributes":{"+message.type":"NORMAL","k":"v"},"order":false,'
                         b'"perm":6,"readQueueNums":16,"topicFilterType":"SINGLE_TAG",'
                         b'"topicName":"T3","topicSysFlag":0,"writeQueueNums":16')
    assert [register_scan.read_piece(p, i == 0) for i, p in enumerate(pieces)] == \
        [(t, f) for t, f in full(body).items()]


def test_a_changed_5x_table_is_read_in_its_changed_pieces_only() -> None:
    old = cfgs(200)
    new = {**old, "T7": register_body.topic_config("T7", perm=4, attributes={"a": "b"}),
           "NEW": register_body.topic_config("NEW", attributes={})}
    del new["T9"]
    diff = plain(body5(new, 2)).diff(known(body5(old)))
    assert diff is not None  # a removal, then an addition at the end: no common end, so the
    # pieces are looked up one by one (and the first is read every time)
    assert diff.changed() == {"T0": (6, 16, 0, 16), "T7": (4, 16, 0, 16),
                              "NEW": (6, 16, 0, 16)}
    del new["NEW"]
    diff = plain(body5(new, 2)).diff(known(body5(old)))
    assert diff is not None and diff.changed() == {"T7": (4, 16, 0, 16)}  # in spans


def test_changes_spread_over_a_5x_table_give_one_span_each() -> None:
    moved = range(5, 400, 40)
    new = {**cfgs(400), **{f"T{i}": register_body.topic_config(f"T{i}", perm=2,
                                                               attributes={"k": "v"})
                           for i in moved}}
    spans = plain(body5(new, 2))._changed_spans(known(body5(cfgs(400))))
    assert spans is not None and len(spans) == len(moved)
    diff = plain(body5(new, 2)).diff(known(body5(cfgs(400))))
    assert diff is not None and [t for _, t, _ in diff.decoded] == [f"T{i}" for i in moved]


@pytest.mark.parametrize(("step", "slack"), [(2, 1), (16, 8), (8192, 128)])
@pytest.mark.parametrize("where", ["attributes", "fields", "first", "last"])
def test_a_span_of_a_5x_table_covers_whole_pieces(
        step: int, slack: int, where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A change in the attributes or in the fields after them, the first or the last piece:
    the spans, however the common runs are cut, hold whole pieces on both sides."""
    monkeypatch.setattr(register_scan, "_FIRST_STEP", step)
    monkeypatch.setattr(register_scan, "_SLACK", slack)
    topic = {"first": "T0", "last": "T59"}.get(where, "T30")
    edit = register_body.topic_config(topic, perm=4 if where != "attributes" else 6,
                                      attributes={"a": "b"} if where == "attributes" else {})
    new = {**cfgs(60), topic: edit}
    diff = plain(body5(new, 2)).diff(known(body5(cfgs(60))))
    assert diff is not None
    assert diff.changed() == {topic: full(body5(new))[topic]}


def test_a_span_naming_a_topic_kept_outside_it_is_decoded_whole() -> None:
    old = known(body5(cfgs(100)))
    changed = body5({**cfgs(100), "T50": register_body.topic_config("T50", perm=2)}, 2)
    assert plain(changed).diff(old) is not None
    renamed = changed.replace(b'"T50"', b'"T3"')  # T3 twice: the full decode keeps the last
    assert full(renamed)["T3"][0] == 2
    assert plain(renamed).diff(old) is None


def test_a_5x_table_decodes_fast_and_named() -> None:
    """The full decode takes 5.x TopicConfigs column by column too, and says so."""
    body = body5(cfgs(30, T1={"x": "y"}))
    queues, named = register_body.decode_register_named_queues(body, 409)
    assert named and queues == register_body.queue_fields(
        register_body.decode_register_body(body, False, 409).topic_configs)


@pytest.mark.parametrize("attributes", [{"x": "}"}, {"y": "{,}"}, {"z": 'a\\"}'}])
def test_a_brace_in_a_string_leaves_the_table_to_the_full_decode(attributes: dict[str, str]
                                                                ) -> None:
    body = body5(cfgs(20, T4=attributes))
    table = plain(body)
    assert table.known(table.queues()) is None
    changed = body5({**cfgs(20, T4=attributes), "T8": register_body.topic_config("T8", perm=2)})
    assert plain(changed).diff(known(body5(cfgs(20)))) is None


def test_a_brace_in_a_string_cannot_realign_a_mixed_table() -> None:
    """A 5.x entry with a ``}`` in an attribute, then a 4.9 entry: four fragments, two
    pieces, two topics, but the pieces are not the entries (a table mixing the layouts is
    not read column by column, nor kept in pieces)."""
    configs = {"A": register_body.topic_config("A", attributes={"x": "}"}),
               "B": register_body.topic_config("B")}
    body = body5(configs).replace(b'"B":{"attributes":{},', b'"B":{')
    assert list(full(body)) == ["A", "B"]
    table = plain(body)
    pieces = table.pieces()
    assert pieces is not None and len(pieces) == 2
    assert table.known(table.queues()) is None


@pytest.mark.parametrize("bare", [False, True])
def test_mapping_info_in_the_tail(bare: bool) -> None:
    body = body5(cfgs(30), mappings={"T1": INFO})
    if bare:  # fastjson writes currIdMap's integer keys bare
        body = body.replace(b'{"0":0,"10":1}', b"{0:0,10:1}")
    assert plain(body).layout() is not None
    diff = plain(body5({**cfgs(30), "T3": register_body.topic_config("T3", perm=2)}, 2,
                       mappings={"T1": INFO})).diff(known(body))
    assert diff is not None and diff.changed()["T3"] == (2, 16, 0, 16)
    assert plain_mappings(body)["T1"]["currIdMap"] == {"0": 0, "10": 1}


@pytest.mark.parametrize(("edit", "why"), [
    ((b',"topicQueueMappingInfoMap":{}}}', b',"topicQueueMappingInfoMap":{},'
      b'"topicConfigTable":{}}}'), "a second table, which the full decode takes"),
    ((b',"topicQueueMappingInfoMap":{}}}', b',"topicQueueMappingInfoMap":{},'
      b'"dataVersion":{"counter":9}}}'), "a second DataVersion"),
    ((b',"topicQueueMappingInfoMap":{}}}', b',"topicQueueMappingInfoMap":{}]}'),
     "a tail that is no JSON"),
    ((b',"topicQueueMappingInfoMap":{}}}', b',"topicQueueMappingInfoMap":{}}} '),
     "trailing bytes"),
    ((STAMP, b'"mappingDataVersion":{"counter":},'), "a mappingDataVersion that is no JSON"),
    ((b'"topicConfigTable":{', b'"topicConfigTable" : {'), "spacing"),
])
def test_other_5x_layouts_are_not_cut(edit: tuple[bytes, bytes], why: str) -> None:
    body = body5(cfgs(10)).replace(*edit)
    assert plain(body).layout() is None, why
    assert plain(body).pieces() is None


def test_a_tail_beyond_the_search_is_not_cut() -> None:
    infos = {f"T{i}": {**INFO, "topic": f"T{i}", "bname": "b" * 400} for i in range(200)}
    body = body5(cfgs(10), mappings=infos)
    assert len(body) - body.index(b',"topicQueueMappingDetailMap"') > register_layout.MAX_TAIL
    table = plain(body)  # the maps would be pieces of the table: they do not read as entries
    assert table.known(table.queues()) is None
    assert plain(body).diff(known(body5(cfgs(10)))) is None
    assert len(plain_mappings(body)) == 200


def test_a_table_key_inside_the_last_entry_is_not_taken_for_the_tail() -> None:
    """``},"topicQueueMappingDetailMap":`` in the last TopicConfig of a body without a tail:
    the bytes after it do not read as the wrapper's last members."""
    configs = cfgs(3)
    body = body5(configs, tail=False).replace(
        b'"writeQueueNums":16}}}}',
        b'"writeQueueNums":16,"x":{},"topicQueueMappingDetailMap":{}}}}}')
    assert list(full(body)) == ["T0", "T1", "T2"]
    table = plain(body)
    assert table.known(table.queues()) is None


def test_mappings_with_a_key_in_an_attribute_are_read_from_the_whole_body() -> None:
    body = body5(cfgs(5, T2={"topicQueueMappingInfoMap": "x"}), mappings={"T1": INFO})
    assert list(plain_mappings(body)) == ["T1"]
    with pytest.raises(BodyError):
        plain_mappings(body.replace(b'"totalQueues":2', b'"totalQueues":"two"'))


@pytest.mark.parametrize(("attributes", "refused"), [
    (b'{"a":{"b":"c"}}', True),  # nested: the full decode refuses the body
    (b'{"a":["b"]}', True),
    (b'{"a":1}', False),  # a number: the full decode keeps it as text
    (b'{"a":null}', False),  # dropped by the full decode
    (b"[]", True),
])
def test_attributes_other_than_a_map_of_strings_are_left_to_the_full_decode(
        attributes: bytes, refused: bool) -> None:
    old = body5(cfgs(30))
    body = body5(cfgs(30), 2).replace(b'"T7":{"attributes":{}', b'"T7":{"attributes":'
                                      + attributes, 1)
    assert register_scan.read_piece(b',"T7":{"attributes":' + attributes + b',"order":false,'
                                    b'"perm":6,"readQueueNums":16,"topicFilterType":'
                                    b'"SINGLE_TAG","topicName":"T7","topicSysFlag":0,'
                                    b'"writeQueueNums":16', False) is None
    assert plain(body).diff(known(old)) is None
    if refused:
        with pytest.raises(BodyError):
            full(body)
    else:
        assert full(body)["T7"] == (6, 16, 0, 16)
