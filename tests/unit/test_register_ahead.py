"""What a registration reads before its write lock: the topic table's digest (equal digests,
nothing to apply) and the decision to decode the table ahead (``route.decode_ahead``)."""

from __future__ import annotations

from cluster.core.protocol import register_body, register_scan
from state import route
from state.store import Store
from tests.unit.test_register_fast import DV1, DV2, configs, plain_body


def test_digest_covers_only_the_topic_table() -> None:
    a = plain_body(configs(T=4), DV1, [])
    b = plain_body(configs(T=4), DV2, ["f:1"])
    c = plain_body(configs(T=5), DV1, [])
    ha, hb, hc = (register_body.register_head(x, False, 409) for x in (a, b, c))
    assert ha is not None and hb is not None and hc is not None
    assert register_scan.topic_table_digest(a, ha) == register_scan.topic_table_digest(b, hb)
    assert register_scan.topic_table_digest(a, ha) != register_scan.topic_table_digest(c, hc)


def test_digest_of_a_5x_body_leaves_out_the_mapping_data_version() -> None:
    def body5(stamp: int, queues: int) -> bytes:
        return (b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":'
                b'{"counter":%d,"stateVersion":0,"timestamp":%d},"mappingDataVersion":'
                b'{"counter":0,"stateVersion":0,"timestamp":%d},"topicConfigTable":{"T":'
                b'{"attributes":{},"order":false,"perm":6,"readQueueNums":%d,"topicFilterType":'
                b'"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":%d}},'
                b'"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}'
                % (stamp, stamp, stamp, queues, queues))

    def digest(body: bytes) -> str:
        head = register_body.register_head(body, False, 513)
        assert head is not None
        return register_scan.topic_table_digest(body, head)

    assert digest(body5(1, 4)) == digest(body5(2, 4))  # a new version, the same topics
    assert digest(body5(1, 4)) != digest(body5(1, 8))




def test_decode_ahead_decodes_only_what_the_write_will_read(store: Store) -> None:
    loads: list[int] = []

    def load() -> dict[str, register_body.QueueFields]:
        loads.append(1)
        return {"T": (6, 4, 0, 4)}

    route.decode_ahead(store, "b", 0, "a:1", DV1, route.TopicTable(load, lambda: "d1"))
    assert loads == [1]  # a first registration reads its table whole
    with store.write() as t:
        table = route.TopicTable(load, lambda: "d1")
        route.register_broker(t, "C", "a:1", "b", 0, None, DV1, table, None, "0.1.1", 0)
    loads.clear()
    route.decode_ahead(store, "b", 0, "a:1", DV1, route.TopicTable(load, lambda: "d1"))
    assert loads == []  # the same table again: nothing to decode
    route.decode_ahead(store, "b", None, "a:1", DV1, route.TopicTable(load, lambda: "d1"))
    assert loads == [1]  # no broker id: decoded, the write fails as Java does


