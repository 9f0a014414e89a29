"""REGISTER_BROKER shortcuts: head-only parsing, QueueData-only decoding, applied-table digests,
and applying only the topics whose fields differ from the broker's last applied table."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from cluster.core.protocol import body_common, register_body, register_scan, table_memo
from cluster.core.protocol.codes import ResponseCode
from cluster.core.protocol.command import RemotingCommand
from state import applied as applied_records
from state import route
from state.store import APPLIED, APPLIED_QUEUES, Store
from tests.unit.test_processors import call, make_ctx, register_request, request, route_request
from worker.business.context import NodeContext

DV1 = {"counter": 1, "timestamp": 1}
DV2 = {"counter": 2, "timestamp": 1}
TOPICS = {"TopicA": 4, "TopicB": 8}


@pytest.fixture()
def now() -> list[int]:
    return [1000]


@pytest.fixture()
def ctx(store: Store, tmp_path: Path, now: list[int]) -> NodeContext:
    return make_ctx(store, clock=lambda: now[0], kv_path=str(tmp_path / "kv.json"),
                    config_path=str(tmp_path / "ns.properties"))


@pytest.fixture()
def decodes(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts full-body and topic-table decodes made by the processors (no pieces of
    earlier tests' tables known)."""
    monkeypatch.setattr(applied_records, "_PIECES",
                        register_scan.PieceMemo(applied_records.PIECES_MAX_BYTES))
    monkeypatch.setattr(applied_records, "_TABLES", table_memo.TableMemo(
        applied_records._TABLES.min_bytes, applied_records._TABLES.max_bytes))
    counts = {"body": 0, "queues": 0}

    def counting(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return fn(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(register_body, "decode_register_body",
                        counting("body", register_body.decode_register_body))
    monkeypatch.setattr(register_body, "decode_register_queues",
                        counting("queues", register_body.decode_register_queues))
    monkeypatch.setattr(register_scan, "decode_register_named_queues",
                        counting("queues", register_scan.decode_register_named_queues))
    return counts


@pytest.fixture()
def table_reads(decodes: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """`decodes`, and how many tables were read from the pieces of tables read before."""
    decodes["pieces"] = 0
    real = register_scan.PlainTable.queues_from

    def counted(self: register_scan.PlainTable, memo: register_scan.PieceMemo) -> Any:
        queues = real(self, memo)
        decodes["pieces"] += queues is not None
        return queues

    monkeypatch.setattr(register_scan.PlainTable, "queues_from", counted)
    return decodes


def register(ctx: NodeContext, topics: dict[str, int] = TOPICS, dv: dict[str, int] = DV1,
             **kw: Any) -> RemotingCommand:
    reply = call(ctx, register_request("broker-a", "10.0.0.1:10911", topics, dv=dv, **kw))
    assert reply.code == ResponseCode.SUCCESS, reply.remark
    return reply


def queue_nums(ctx: NodeContext, topic: str) -> dict[str, int] | None:
    with ctx.store.read() as t:
        qmap = t.get("topic", topic)
    return None if qmap is None else {n: q["readQueueNums"] for n, q in qmap.items()}


def read(ctx: NodeContext, table: str, key: str) -> Any:
    with ctx.store.read() as t:
        return t.get(table, key)


def generation(ctx: NodeContext) -> int:
    with ctx.store.read() as t:
        return t.generation()


def plain_body(configs: dict[str, Any], dv: dict[str, int] = DV1,
               filters: Sequence[str] | None = (), **kw: Any) -> bytes:
    return register_body.encode_register_body(
        dv, configs, None if filters is None else list(filters), False, **kw)


def configs(**queues: int) -> dict[str, dict[str, Any]]:
    return {t: register_body.topic_config(t, read_queue_nums=q, write_queue_nums=q)
            for t, q in queues.items()}


# ---------------------------------------------------------------- through handle()


def test_first_registration_applies(ctx: NodeContext, decodes: dict[str, int]) -> None:
    register(ctx)
    assert queue_nums(ctx, "TopicA") == {"broker-a": 4}
    assert decodes == {"body": 0, "queues": 1}


def test_unchanged_version_skips_topics_but_refreshes_live_and_filters(
        ctx: NodeContext, decodes: dict[str, int], now: list[int]) -> None:
    register(ctx, filters=["f:1"])
    now[0] = 5000
    register(ctx, {"TopicA": 7, "TopicC": 1}, filters=["f:2"])
    assert decodes == {"body": 0, "queues": 1}
    assert queue_nums(ctx, "TopicA") == {"broker-a": 4} and queue_nums(ctx, "TopicC") is None
    live = read(ctx, "live", "10.0.0.1:10911")
    assert live["lastUpdateTimestamp"] == 5000 and live["dataVersion"] == DV1
    assert read(ctx, "filter", "10.0.0.1:10911") == ["f:2"]
    register(ctx, filters=[])
    assert read(ctx, "filter", "10.0.0.1:10911") is None


def test_unchanged_version_never_reads_a_malformed_table(ctx: NodeContext) -> None:
    register(ctx)
    good = register_request("broker-a", "10.0.0.1:10911", TOPICS)
    assert good.body is not None and good.ext_fields is not None
    body = good.body[:-3] + b"<not json>"
    good.ext_fields["bodyCrc32"] = str(body_common.crc32_java(body))
    reply = call(ctx, request(103, good.ext_fields, body))
    assert reply.code == ResponseCode.SUCCESS


def test_unexpected_shape_falls_back_to_the_full_decode(
        ctx: NodeContext, decodes: dict[str, int]) -> None:
    register(ctx, compressed=True)
    register(ctx, compressed=True)
    assert decodes["body"] == 2
    register(ctx, {"TopicA": 9}, dv=DV2, compressed=True)
    assert queue_nums(ctx, "TopicA") == {"broker-a": 9}
    body = b'{"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"timestamp":1},' \
           b'"topicConfigTable":{"TopicA":{"topicName":"TopicA","readQueueNums":2}}},' \
           b'"filterServerList":[]}'
    ext = {"brokerName": "broker-a", "brokerAddr": "10.0.0.1:10911", "clusterName": "C",
           "brokerId": "0", "bodyCrc32": "0"}
    assert call(ctx, request(103, ext, body)).code == ResponseCode.SUCCESS
    assert decodes["body"] == 4
    assert queue_nums(ctx, "TopicA") == {"broker-a": 2}


def test_changed_version_reapplies(ctx: NodeContext, decodes: dict[str, int]) -> None:
    register(ctx)
    register(ctx, {"TopicA": 6, "TopicC": 1}, dv=DV2)
    assert decodes["queues"] == 2
    assert queue_nums(ctx, "TopicA") == {"broker-a": 6}
    assert queue_nums(ctx, "TopicB") == {"broker-a": 8}
    assert queue_nums(ctx, "TopicC") == {"broker-a": 1}


def test_slave_never_applies_nor_decodes(ctx: NodeContext, decodes: dict[str, int]) -> None:
    call(ctx, register_request("broker-a", "10.0.0.2:10911", {"TopicS": 4}, broker_id=1))
    call(ctx, register_request("broker-a", "10.0.0.2:10911", {"TopicS": 4}, broker_id=1,
                               dv=DV2))
    assert decodes == {"body": 0, "queues": 0}
    assert queue_nums(ctx, "TopicS") is None


def test_identical_table_with_new_version_is_not_decoded_again(
        ctx: NodeContext, decodes: dict[str, int]) -> None:
    register(ctx)
    gen = generation(ctx)
    register(ctx, dv=DV2)
    register(ctx, dv={"counter": 3, "timestamp": 1})
    assert decodes["queues"] == 1
    assert generation(ctx) == gen
    assert read(ctx, "live", "10.0.0.1:10911")["dataVersion"]["counter"] == 3


CLUSTER_TOPICS = {f"T{i:03d}": 4 for i in range(40)}


def test_a_broker_carrying_topics_read_in_another_brokers_table_is_not_decoded_whole(
        ctx: NodeContext, table_reads: dict[str, int]) -> None:
    decodes = table_reads
    call(ctx, register_request("broker-a", "10.0.0.1:10911", CLUSTER_TOPICS))
    assert decodes["queues"] == 1
    # the same topics, and then the same but for a few: read in the new pieces only
    call(ctx, register_request("broker-b", "10.0.0.2:10911", CLUSTER_TOPICS))
    changed = {**CLUSTER_TOPICS, "T003": 8, "Own": 2}
    del changed["T010"]
    call(ctx, register_request("broker-c", "10.0.0.3:10911", changed))
    assert decodes["queues"] == 1 and decodes["pieces"] == 2
    assert queue_nums(ctx, "T003") == {"broker-a": 4, "broker-b": 4, "broker-c": 8}
    assert queue_nums(ctx, "T010") == {"broker-a": 4, "broker-b": 4}
    assert queue_nums(ctx, "Own") == {"broker-c": 2}
    # mostly new pieces: decoded whole
    call(ctx, register_request("broker-d", "10.0.0.4:10911",
                               {f"T{i:03d}": 16 for i in range(40)}))
    assert decodes["queues"] == 2
    assert queue_nums(ctx, "T000") == {"broker-a": 4, "broker-b": 4, "broker-c": 4,
                                       "broker-d": 16}


def test_a_table_naming_a_topic_twice_is_decoded_whole_though_its_pieces_are_known(
        ctx: NodeContext, table_reads: dict[str, int]) -> None:
    decodes = table_reads
    call(ctx, register_request("broker-a", "10.0.0.1:10911", CLUSTER_TOPICS))
    twice = register_request("broker-b", "10.0.0.2:10911", CLUSTER_TOPICS)
    assert twice.body is not None
    piece = twice.body[twice.body.index(b',"T005":') : twice.body.index(b',"T006":')]
    twice.body = twice.body.replace(piece, piece + piece.replace(b'"T005":', b'"T005":', 1)
                                    .replace(b'"readQueueNums":4', b'"readQueueNums":2'))
    twice.ext_fields["bodyCrc32"] = str(body_common.crc32_java(twice.body))
    assert call(ctx, twice).code == ResponseCode.SUCCESS
    assert decodes["queues"] == 2 and decodes["pieces"] == 0
    assert queue_nums(ctx, "T005") == {"broker-a": 4, "broker-b": 2}  # the last config wins


def test_a_master_registering_the_very_table_of_another_is_not_read_again(
        ctx: NodeContext, table_reads: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    decodes = table_reads
    monkeypatch.setattr(applied_records, "_TABLES", table_memo.TableMemo(1, 1 << 20))
    call(ctx, register_request("broker-a", "10.0.0.1:10911", CLUSTER_TOPICS))
    call(ctx, register_request("broker-b", "10.0.0.2:10911", CLUSTER_TOPICS))
    assert decodes["queues"] == 1 and decodes["pieces"] == 0  # b: a's table, by its text
    # b's next table changes a topic: the records b applied are edited in place; the table
    # held for its text is not
    changed = {**CLUSTER_TOPICS, "T003": 8}
    call(ctx, register_request("broker-b", "10.0.0.2:10911", changed, dv={"counter": 2,
                                                                          "timestamp": 2}))
    call(ctx, register_request("broker-c", "10.0.0.3:10911", CLUSTER_TOPICS))
    assert decodes["queues"] == 1
    assert queue_nums(ctx, "T003") == {"broker-a": 4, "broker-b": 8, "broker-c": 4}
    assert queue_nums(ctx, "T039") == {"broker-a": 4, "broker-b": 4, "broker-c": 4}


def test_the_pieces_read_before_are_bounded() -> None:
    memo = register_scan.PieceMemo(100)
    memo.learn({b",a" * 20: ("a", (6, 1, 0, 1))})
    memo.learn({b",b" * 20: ("b", (6, 1, 0, 1))})
    assert memo.size == 80 and len(memo.entries) == 2
    memo.learn({b",c" * 20: ("c", (6, 1, 0, 1))})  # full: emptied first
    assert memo.size == 40 and list(memo.entries) == [b",c" * 20]
    memo.learn({b",d" * 60: ("d", (6, 1, 0, 1))})  # more than it holds: not kept
    assert list(memo.entries) == [b",c" * 20]


@pytest.mark.parametrize("edit", [
    request(216, {"topic": "TopicA"}),
    request(205, {"brokerName": "broker-a"}),
])
def test_other_topic_edits_void_the_applied_digest(
        ctx: NodeContext, table_reads: dict[str, int], edit: RemotingCommand) -> None:
    decodes = table_reads  # tables read again, whole or from their pieces
    register(ctx)
    assert call(ctx, edit).code == ResponseCode.SUCCESS
    assert read(ctx, APPLIED, "broker-a") is None
    register(ctx, dv=DV2)
    assert decodes["queues"] + decodes["pieces"] == 2
    assert queue_nums(ctx, "TopicA") == {"broker-a": 4}
    route_data = call(ctx, route_request("TopicA"))
    assert route_data.code == ResponseCode.SUCCESS


def test_table_applied_without_digest_voids_that_brokers_digest(
        ctx: NodeContext, table_reads: dict[str, int]) -> None:
    decodes = table_reads  # tables read again, whole or from their pieces
    register(ctx)
    register(ctx, {"TopicA": 9}, dv=DV2, compressed=True)
    assert queue_nums(ctx, "TopicA") == {"broker-a": 9}
    register(ctx, dv={"counter": 3, "timestamp": 1})
    assert queue_nums(ctx, "TopicA") == {"broker-a": 4}
    assert decodes["queues"] + decodes["pieces"] == 2


def test_other_brokers_registrations_keep_the_digest(
        ctx: NodeContext, table_reads: dict[str, int]) -> None:
    decodes = table_reads  # tables read again, whole or from their pieces
    register(ctx)
    call(ctx, register_request("broker-b", "10.0.0.9:10911", {"TopicA": 2}))
    register(ctx, dv=DV2)
    assert decodes["queues"] + decodes["pieces"] == 2
    assert queue_nums(ctx, "TopicA") == {"broker-a": 4, "broker-b": 2}


# ---------------------------------------------------------------- route level


def test_table_is_decoded_inside_the_write_when_the_state_moved(store: Store) -> None:
    loads: list[int] = []

    def load() -> dict[str, register_body.QueueFields]:
        loads.append(1)
        return {"T": (6, 4, 0, 4)}

    table = route.TopicTable(load, lambda: "d1")
    with store.read() as t:
        assert route.needs_topic_queues(t, "b", 0, "a:1", DV1, table)
    with store.write() as t:
        route.register_broker(t, "C", "a:1", "b", 0, None, DV1, table, None, "0.1.1", 0)
        assert t.get(APPLIED, "b") == "d1" and t.get("topic", "T") is not None
    assert loads == [1]
    with store.read() as t:
        assert not route.needs_topic_queues(t, "b", 0, "a:1", DV2, table)
        assert not route.needs_topic_queues(t, "b", 0, "a:1", DV1, route.TopicTable(load))


def test_unregistering_the_name_drops_its_digest(store: Store) -> None:
    with store.write() as t:
        route.register_broker(t, "C", "a:1", "b", 0, None, DV1,
                              route.TopicTable(dict, lambda: "d"), None, "0.1.1", 0)
        assert t.get(APPLIED, "b") == "d"
        route.unregister_broker(t, "C", "a:1", "b", 0)
        assert t.get(APPLIED, "b") is None


# ---------------------------------------------------------------- applying only what changed


@pytest.fixture()
def applied(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, register_body.QueueFields]]:
    """The topic → QueueFields maps handed to applied._apply_queues, one per application."""
    calls: list[dict[str, register_body.QueueFields]] = []
    real = applied_records._apply_queues

    def spy(t: Any, name: str, queues: Any) -> None:
        calls.append(dict(queues))
        real(t, name, queues)

    monkeypatch.setattr(applied_records, "_apply_queues", spy)
    return calls


DV3 = {"counter": 3, "timestamp": 1}


def perms(ctx: NodeContext, topic: str) -> dict[str, int] | None:
    qmap = read(ctx, "topic", topic)
    return None if qmap is None else {n: q["perm"] for n, q in qmap.items()}


def test_changed_version_applies_only_the_changed_topics(
        ctx: NodeContext, applied: list[dict[str, register_body.QueueFields]]) -> None:
    register(ctx, {"TopicA": 4, "TopicB": 8, "TopicC": 2})
    register(ctx, {"TopicA": 4, "TopicB": 9, "TopicC": 2, "TopicD": 1}, dv=DV2)
    assert applied[1] == {"TopicB": (6, 9, 0, 9), "TopicD": (6, 1, 0, 1)}
    assert [queue_nums(ctx, t) for t in ("TopicA", "TopicB", "TopicC", "TopicD")] == [
        {"broker-a": 4}, {"broker-a": 9}, {"broker-a": 2}, {"broker-a": 1}]
    assert read(ctx, APPLIED_QUEUES, "broker-a") == {
        "TopicA": [6, 4, 0, 4], "TopicB": [6, 9, 0, 9], "TopicC": [6, 2, 0, 2],
        "TopicD": [6, 1, 0, 1]}


def test_topics_left_out_stay_and_come_back_without_a_write(
        ctx: NodeContext, applied: list[dict[str, register_body.QueueFields]]) -> None:
    register(ctx, {"TopicA": 4, "TopicB": 8})
    register(ctx, {"TopicA": 5}, dv=DV2)
    assert queue_nums(ctx, "TopicB") == {"broker-a": 8}
    gen = generation(ctx)
    register(ctx, {"TopicA": 5, "TopicB": 8}, dv=DV3)
    assert applied[2] == {"TopicB": (6, 8, 0, 8)}
    assert generation(ctx) == gen
    register(ctx, {"TopicA": 5, "TopicB": 3}, dv={"counter": 4, "timestamp": 1})
    assert queue_nums(ctx, "TopicB") == {"broker-a": 3}


@pytest.mark.parametrize("edit", [
    request(205, {"brokerName": "broker-a"}),
    request(216, {"topic": "TopicA"}),
])
def test_a_wiped_or_deleted_topic_is_restored_by_the_next_changed_table(
        ctx: NodeContext, applied: list[dict[str, register_body.QueueFields]],
        edit: RemotingCommand) -> None:
    register(ctx, {"TopicA": 4, "TopicB": 8})
    assert call(ctx, edit).code == ResponseCode.SUCCESS
    assert read(ctx, APPLIED_QUEUES, "broker-a") is None
    assert perms(ctx, "TopicA") in ({"broker-a": 4}, None)
    register(ctx, {"TopicA": 4, "TopicB": 9}, dv=DV2)
    assert applied[1] == {"TopicA": (6, 4, 0, 4), "TopicB": (6, 9, 0, 9)}
    assert perms(ctx, "TopicA") == {"broker-a": 6}
    assert queue_nums(ctx, "TopicA") == {"broker-a": 4}
    assert queue_nums(ctx, "TopicB") == {"broker-a": 9}


def register_configs(ctx: NodeContext, cfgs: dict[str, dict[str, Any]],
                     dv: dict[str, int]) -> None:
    body = plain_body(cfgs, dv)
    ext = {"brokerName": "broker-a", "brokerAddr": "10.0.0.1:10911", "clusterName": "C",
           "brokerId": "0", "bodyCrc32": str(body_common.crc32_java(body))}
    assert call(ctx, request(103, ext, body)).code == ResponseCode.SUCCESS


def test_add_write_perm_and_register_topic_also_void_the_applied_queues(
        ctx: NodeContext) -> None:
    cfgs = configs(TopicA=4, TopicB=8)
    cfgs["TopicA"]["perm"] = 4
    register_configs(ctx, cfgs, DV1)
    assert call(ctx, request(327, {"brokerName": "broker-a"})).code == ResponseCode.SUCCESS
    assert read(ctx, APPLIED_QUEUES, "broker-a") is None
    assert perms(ctx, "TopicA") == {"broker-a": 6}
    register_configs(ctx, {**cfgs, "TopicB": configs(TopicB=9)["TopicB"]}, DV2)
    assert perms(ctx, "TopicA") == {"broker-a": 4}
    with ctx.store.write() as t:
        route.register_topic(t, "TopicA", [{"brokerName": "broker-a", "perm": 2,
                                            "readQueueNums": 1, "writeQueueNums": 1}])
        assert t.get_raw(APPLIED_QUEUES, "broker-a") is None
    register_configs(ctx, {**cfgs, "TopicB": configs(TopicB=7)["TopicB"]}, DV3)
    assert perms(ctx, "TopicA") == {"broker-a": 4}
    assert queue_nums(ctx, "TopicA") == {"broker-a": 4}


def test_two_brokers_sharing_topics_keep_their_own_applied_queues(
        ctx: NodeContext, applied: list[dict[str, register_body.QueueFields]]) -> None:
    def register_b(topics: dict[str, int], dv: dict[str, int]) -> None:
        reply = call(ctx, register_request("broker-b", "10.0.0.9:10911", topics, dv=dv))
        assert reply.code == ResponseCode.SUCCESS

    register(ctx, {"TopicA": 4, "TopicB": 8})
    register_b({"TopicA": 2, "TopicC": 1}, DV1)
    register(ctx, {"TopicA": 4, "TopicB": 5}, dv=DV2)
    register_b({"TopicA": 3, "TopicC": 1}, DV2)
    assert applied[2:] == [{"TopicB": (6, 5, 0, 5)}, {"TopicA": (6, 3, 0, 3)}]
    register(ctx, {"TopicA": 4, "TopicB": 5, "TopicC": 6}, dv=DV3)
    assert applied[4] == {"TopicC": (6, 6, 0, 6)}
    assert queue_nums(ctx, "TopicA") == {"broker-a": 4, "broker-b": 3}
    assert queue_nums(ctx, "TopicB") == {"broker-a": 5}
    assert queue_nums(ctx, "TopicC") == {"broker-b": 1, "broker-a": 6}


def test_slave_never_applies_nor_touches_the_applied_queues(
        ctx: NodeContext, applied: list[dict[str, register_body.QueueFields]]) -> None:
    register(ctx, {"TopicA": 4})
    stored = read(ctx, APPLIED_QUEUES, "broker-a")
    for dv in (DV1, DV2, DV3):
        reply = call(ctx, register_request("broker-a", "10.0.0.2:10911", {"TopicA": 9,
                                                                          "TopicS": 1},
                                           broker_id=1, dv=dv))
        assert reply.code == ResponseCode.SUCCESS
    assert len(applied) == 1
    assert read(ctx, APPLIED_QUEUES, "broker-a") == stored
    assert queue_nums(ctx, "TopicA") == {"broker-a": 4} and queue_nums(ctx, "TopicS") is None


def test_removing_the_broker_drops_its_applied_queues(
        ctx: NodeContext, applied: list[dict[str, register_body.QueueFields]]) -> None:
    register(ctx, {"TopicA": 4})
    unregister = request(104, {"brokerName": "broker-a", "brokerAddr": "10.0.0.1:10911",
                               "clusterName": "DefaultCluster", "brokerId": "0"})
    assert call(ctx, unregister).code == ResponseCode.SUCCESS
    assert read(ctx, APPLIED_QUEUES, "broker-a") is None and queue_nums(ctx, "TopicA") is None
    register(ctx, {"TopicA": 4})
    assert applied[1] == {"TopicA": (6, 4, 0, 4)}
    assert queue_nums(ctx, "TopicA") == {"broker-a": 4}


def test_compressed_tables_use_the_applied_queues_too(
        ctx: NodeContext, applied: list[dict[str, register_body.QueueFields]]) -> None:
    register(ctx, {"TopicA": 4, "TopicB": 8}, compressed=True)
    register(ctx, {"TopicA": 4, "TopicB": 2}, dv=DV2, compressed=True)
    assert applied[1] == {"TopicB": (6, 2, 0, 2)}
    assert read(ctx, APPLIED, "broker-a") is None
    assert queue_nums(ctx, "TopicB") == {"broker-a": 2}
