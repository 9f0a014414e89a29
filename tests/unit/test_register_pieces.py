"""A topic table cut into pieces and compared with the table applied last
(``cluster.core.protocol.register_scan.PlainTable``): which pieces are read, which spans are
compared, and when it gives up for the full decode. Pure."""

from __future__ import annotations

from typing import Any

import pytest

from cluster.core.protocol import plain_config, register_body, register_layout, register_scan


def test_pieces_of_fastjson_bodies() -> None:
    cfgs = {t: register_body.topic_config(t, read_queue_nums=4, write_queue_nums=4) for t in "AB"}
    body = register_body.encode_register_body({"counter": 1, "timestamp": 1}, cfgs, [], False)
    head = register_body.register_head(body, False, 409)
    assert head is not None
    pieces = register_scan.PlainTable(body, head, 409, None).pieces()
    assert pieces is not None and len(pieces) == 2
    assert pieces[1].startswith(b',"B":{') and not pieces[1].endswith(b"}")
    assert register_scan.read_piece(pieces[0], True) == ("A", (6, 4, 0, 4))
    assert register_scan.read_piece(pieces[1], False) == ("B", (6, 4, 0, 4))
    assert register_scan.read_piece(pieces[1], True) is None
    assert register_scan.read_piece(pieces[0], False) is None


@pytest.mark.parametrize("body", [
    b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1},'
    b'"mappingDataVersion":{"counter":1},"topicConfigTable":{}}}',
    b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1},'
    b'"topicConfigTable":{"A":{"perm":6}}} }',
])
def test_other_layouts_are_not_cut(body: bytes) -> None:
    head = register_body.register_head(body, False, 409)
    assert head is not None
    assert register_scan.PlainTable(body, head, 409, None).pieces() is None


def test_many_new_pieces_give_up_for_the_full_decode() -> None:
    def table(n: int, read: int) -> register_scan.PlainTable:
        cfgs = {f"T{i}": register_body.topic_config(f"T{i}", read_queue_nums=read)
                for i in range(n)}
        body = register_body.encode_register_body({"counter": 1, "timestamp": 1}, cfgs, [], False)
        head = register_body.register_head(body, False, 409)
        assert head is not None
        return register_scan.PlainTable(body, head, 409, None)

    old = table(64, 4)
    known = old.known(old.queues())
    assert known is not None and len(known.entries) == 63
    assert table(64, 5).diff(known) is None
    diff = table(64, 4).diff(known)
    assert diff is not None and diff.changed() == {}  # the same table: nothing read


def _plain(cfgs: dict[str, dict[str, Any]], counter: int = 1) -> register_scan.PlainTable:
    body = register_body.encode_register_body({"counter": counter, "timestamp": 1}, cfgs, [],
                                              False)
    head = register_body.register_head(body, False, 409)
    assert head is not None
    return register_scan.PlainTable(body, head, 409, None)


def _known(cfgs: dict[str, dict[str, Any]]) -> register_scan.KnownPieces:
    old = _plain(cfgs)
    known = old.known(old.queues())
    assert known is not None
    return known


CFGS = {f"T{i}": register_body.topic_config(f"T{i}") for i in range(400)}


@pytest.mark.parametrize(("edit", "read"), [
    ({"T200": register_body.topic_config("T200", perm=2)}, ["T200"]),  # one entry changed
    ({"T0": register_body.topic_config("T0", perm=2)}, ["T0"]),  # the first one
    ({"T399": register_body.topic_config("T399", perm=2)}, ["T399"]),  # the last one
    ({"NEW": register_body.topic_config("NEW")}, ["NEW"]),  # one added at the end
    ({"T7": None}, []),  # one removed
    ({"T7": register_body.topic_config("T7", read_queue_nums=100),
      "T9": register_body.topic_config("T9", read_queue_nums=100)}, ["T7", "T9"]),
])
def test_a_table_differing_in_a_short_span_is_read_in_that_span_only(
        edit: dict[str, Any], read: list[str]) -> None:
    cfgs = {k: v for k, v in {**CFGS, **edit}.items() if v is not None}
    diff = _plain(cfgs, counter=2).diff(_known(CFGS))
    assert diff is not None
    assert [topic for _, topic, _ in diff.decoded] == read
    same = _plain(cfgs).diff(_known(cfgs))
    assert same is not None
    full = register_body.decode_register_queues(same.body, False, 409)
    assert all(full[t] == f for t, f in diff.changed().items())


def test_changes_spread_over_a_table_give_one_span_each() -> None:
    moved = range(5, 400, 40)
    cfgs = {**CFGS, **{f"T{i}": register_body.topic_config(f"T{i}", perm=2) for i in moved}}
    spans = _plain(cfgs, counter=2)._changed_spans(_known(CFGS))
    assert spans is not None and len(spans) == len(moved)
    diff = _plain(cfgs, counter=2).diff(_known(CFGS))
    assert diff is not None and [t for _, t, _ in diff.decoded] == [f"T{i}" for i in moved]


def test_a_table_of_other_topics_is_not_compared_span_by_span(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The next part of a 5.x split registration shares no piece with the last part: the
    spans are given up after SPANS_TRIED of them, not once they hold an eighth of it."""
    runs: list[int] = []
    common_prefix = register_scan._common_prefix
    monkeypatch.setattr(register_scan, "_common_prefix",
                        lambda *args: runs.append(1) or common_prefix(*args))
    other = {f"U{i}": register_body.topic_config(f"U{i}") for i in range(400)}
    assert _plain(other, counter=2)._changed_spans(_known(CFGS)) is None
    assert len(runs) == register_scan.SPANS_TRIED
    assert _plain(other, counter=2).diff(_known(CFGS)) is None  # decoded whole


def test_a_span_naming_a_topic_kept_outside_it_is_decoded_whole() -> None:
    known = _known(CFGS)
    changed = _plain({**CFGS, "T200": register_body.topic_config("T200", perm=2)}, counter=2)
    assert changed.diff(known) is not None  # as written: T200 changed
    renamed = changed._body.replace(b'"T200"', b'"T3"')  # key and topicName
    head = register_body.register_head(renamed, False, 409)
    assert head is not None
    # T3 now twice: unchanged before the span, and in it; the full decode keeps the last
    assert register_body.decode_register_queues(renamed, False, 409)["T3"][0] == 2
    assert register_scan.PlainTable(renamed, head, 409, None).diff(known) is None


def test_a_topic_read_alone_must_not_also_be_known_in_the_same_table() -> None:
    def plain(body: bytes) -> register_scan.PlainTable:
        head = register_body.register_head(body, False, 409)
        assert head is not None
        return register_scan.PlainTable(body, head, 409, None)

    cfgs = {t: register_body.topic_config(t) for t in ("A", "B", *(f"C{i}" for i in range(20)))}
    old = plain(register_body.encode_register_body({"counter": 1, "timestamp": 1}, cfgs, [], False))
    known = old.known(old.queues())
    assert known is not None and known.owner("B") is not None
    again = {**cfgs, "B2": {**register_body.topic_config("B"), "perm": 2}}
    body = register_body.encode_register_body({"counter": 2, "timestamp": 1}, again, [], False)
    body = body.replace(b'"B2"', b'"B"')
    assert register_body.decode_register_queues(body, False, 409)["B"] == (2, 16, 0, 16)
    assert plain(body).diff(known) is None


def test_a_table_seen_through_a_view_keeps_bytes_and_reads_as_bytes() -> None:
    cfgs = {f"T{i}": register_body.topic_config(f"T{i}") for i in range(64)}
    body = register_body.encode_register_body({"counter": 1, "timestamp": 1}, cfgs, [], False)
    view = memoryview(bytearray(body))
    head = register_body.register_head(view, False, 409)
    assert head == register_body.register_head(body, False, 409) and head is not None
    assert register_scan.topic_table_digest(view, head) == \
        register_scan.topic_table_digest(body, head)
    old = register_scan.PlainTable(view, head, 409, None)
    known = old.known(old.queues())
    assert known is not None and type(known.body) is bytes and known.body == body
    cfgs["T7"] = register_body.topic_config("T7", perm=4)
    changed = register_body.encode_register_body({"counter": 2, "timestamp": 1}, cfgs, [],
                                                 False)
    new_head = register_body.register_head(changed, False, 409)
    assert new_head is not None
    diff = register_scan.PlainTable(memoryview(changed), new_head, 409, None).diff(known)
    assert diff is not None and diff.changed() == {"T7": (4, 16, 0, 16)}
    assert type(diff.body) is bytes and diff.body == changed  # what KnownPieces.learn keeps


def _pieces(body: bytes) -> tuple[list[bytes], int]:
    head = register_body.register_head(body, False, 409)
    assert head is not None
    table = register_scan.PlainTable(body, head, 409, None)
    pieces, layout = table.pieces(), table.layout()
    assert pieces is not None and layout is not None
    return pieces, layout.per


def _alone(pieces: list[bytes]) -> list[Any]:
    """What each of a table's pieces reads alone, the first of them the table's first."""
    return [plain_config.read_piece(p, not i) for i, p in enumerate(pieces)]


@pytest.mark.parametrize("five", [False, True])
def test_pieces_read_together_give_what_each_reads_alone(five: bool) -> None:
    cfgs = {f"T{i}": register_body.topic_config(f"T{i}", perm=2 + 4 * (i % 2), attributes={
        "+message.type": "NORMAL"} if five and i % 3 else {}) for i in range(12)}
    body = register_body.encode_register_body({"counter": 1, "timestamp": 1}, cfgs, [], False,
                                              with_attributes=five)
    pieces, per = _pieces(body)
    assert per == (2 if five else 1)
    together = plain_config.read_pieces(pieces, per)
    assert together == _alone(pieces) and len(together) == 12
    some = [pieces[0], pieces[3], pieces[4], pieces[9]]  # not side by side
    assert plain_config.read_pieces(some, per) == _alone(some)
    assert plain_config.read_pieces([], per) == []


A49 = b'"A":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG",' \
      b'"topicName":"A","topicSysFlag":0,"writeQueueNums":4}'
B49 = b"," + A49.replace(b'"A"', b'"B"')
A5 = A49.replace(b'"A":{', b'"A":{"attributes":{},')


def _cut(table: bytes, per: int) -> list[bytes]:
    """A table's entries cut as PlainTable.pieces cuts them."""
    fragments = table.split(b"}")
    assert fragments.pop() == b""
    pieces = register_layout.group(fragments, per)
    assert pieces is not None
    return pieces


@pytest.mark.parametrize(("table", "per", "alone"), [
    # a } in a string: cut there too, the pieces are not the entries (a 5.x one, then a 4.9
    # one: as many members as pieces, but the table mixes the layouts)
    (A5.replace(b"{}", b'{"x":"}"}') + B49, 2, False),
    (A5.replace(b"{}", b'{"x":"}"}') + b"," + A5.replace(b"{}", b'{"x":"}"}').replace(
        b'"A"', b'"B"'), 2, False),  # two entries, three pieces
    # 4.9 entries in a 5.x table, each with a } in a string: the members need not close where
    # the pieces do (each reads alone; the table is decoded whole)
    (A49.replace(b"SINGLE_TAG", b"}") + B49.replace(b"SINGLE_TAG", b"}"), 2, True),
    (A49.replace(b'"topicName":"A"', b'"topicName":"Z"') + B49, 1, False),
    (A49 + B49.replace(b'"B"', b'"A"'), 1, True),  # a topic twice
    (A49 + B49[1:], 1, False),  # a piece after the first without its comma
    (A49 + B49.replace(b"false", b"flase"), 1, False),  # not JSON
])
def test_pieces_not_read_together(table: bytes, per: int, alone: bool) -> None:
    pieces = _cut(table, per)
    assert plain_config.read_pieces(pieces, per) is None
    assert (None not in _alone(pieces)) is alone
