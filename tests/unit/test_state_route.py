"""RouteInfoManager semantics (reference §3), ported from the Java tests, fake clock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from state import housekeeping, queries, route
from state.store import Store

DV1 = {"counter": 1, "timestamp": 1000}
DV2 = {"counter": 2, "timestamp": 2000}
C = "DefaultCluster"


@pytest.fixture()
def store(tmp_path: Any) -> Iterator[Store]:
    s = Store.create(str(tmp_path / "lmdb"), 32 << 20)
    yield s
    s.destroy()


def tc(name: str, perm: int = 6, sysflag: int = 0, queues: int = 4) -> dict[str, Any]:
    return {"topicName": name, "perm": perm, "readQueueNums": queues, "writeQueueNums": queues,
            "topicSysFlag": sysflag, "order": False, "topicFilterType": "SINGLE_TAG"}


def reg(store: Store, name: str, addr: str, bid: int = 0, topics: dict[str, Any] | None = None,
        dv: dict[str, int] = DV1, now: int = 0, channel: str = "0.1.1", cluster: str = C,
        filters: list[str] | None = None, ha: str | None = None) -> dict[str, Any]:
    with store.write() as t:
        return route.register_broker(t, cluster, addr, name, bid, ha or addr + "ha", dv,
                                     topics if topics is not None else {}, filters, channel, now)


def pick(store: Store, topic: str) -> dict[str, Any] | None:
    with store.read() as t:
        return queries.pickup_topic_route_data(t, topic)


def addrs_of(store: Store, topic: str) -> dict[int, str]:
    data = pick(store, topic)
    assert data is not None
    return data["brokerDatas"][0]["brokerAddrs"]


def test_master_result_is_empty_and_slave_gets_master(store: Store) -> None:
    assert reg(store, "b", "m:1", 0, {"T": tc("T")}) == {"haServerAddr": None, "masterAddr": None}
    res = reg(store, "b", "s:1", 1, {"T": tc("T")}, channel="0.1.2")
    assert res == {"haServerAddr": "m:1ha", "masterAddr": "m:1"}
    assert addrs_of(store, "T") == {0: "m:1", 1: "s:1"}


def test_slave_without_live_master_gets_no_master(store: Store) -> None:
    assert reg(store, "b", "s:1", 1) == {"haServerAddr": None, "masterAddr": None}


def test_slave_never_changes_topics(store: Store) -> None:
    reg(store, "b", "s:1", 1, {"T": tc("T")})
    assert pick(store, "T") is None


def test_topic_configs_applied_only_on_first_or_changed_version(store: Store) -> None:
    reg(store, "b", "m:1", 0, {"T": tc("T", perm=6)}, dv=DV1)
    reg(store, "b", "m:1", 0, {"T": tc("T", perm=2), "U": tc("U")}, dv=DV1)
    assert pick(store, "T")["queueDatas"][0]["perm"] == 6  # type: ignore[index]
    assert pick(store, "U") is None
    reg(store, "b", "m:1", 0, {"T": tc("T", perm=2)}, dv=DV2)
    assert pick(store, "T")["queueDatas"][0]["perm"] == 2  # type: ignore[index]


def test_topic_name_comes_from_the_config_object(store: Store) -> None:
    reg(store, "b", "m:1", 0, {"key": tc("Real")})
    assert pick(store, "Real") is not None and pick(store, "key") is None


def test_master_change_from_slave(store: Store) -> None:
    """testMasterChangeFromSlave: the slave's address re-registers as id 0."""
    reg(store, "b", "m:1", 0, {"T": tc("T")})
    reg(store, "b", "s:1", 1, channel="0.1.2")
    with store.write() as t:
        route.unregister_broker(t, C, "m:1", "b", 0)
    reg(store, "b", "s:1", 0, {"T": tc("T")}, dv=DV2, channel="0.1.2")
    assert addrs_of(store, "T") == {0: "s:1"}


def test_unregister_by_id_keeps_other_ids(store: Store) -> None:
    reg(store, "b", "m:1", 0, {"T": tc("T")})
    reg(store, "b", "s:2", 2, channel="0.1.2")
    with store.write() as t:
        route.unregister_broker(t, C, "s:2", "b", 2)
    assert addrs_of(store, "T") == {0: "m:1"}


def test_unregister_last_member_removes_name_cluster_and_topics(store: Store) -> None:
    reg(store, "a", "a:1", 0, {"T": tc("T"), "A": tc("A")})
    reg(store, "b", "b:1", 0, {"T": tc("T")}, channel="0.1.2")
    with store.write() as t:
        route.unregister_broker(t, C, "a:1", "a", 0)
        assert queries.cluster_info(t)[1] == {C: ["b"]}
        assert t.get("topic", "A") is None and list(t.get("topic", "T")) == ["b"]
        assert t.get("live", "a:1") is None and t.get("channel", "0.1.1") is None


def test_master_leaving_keeps_queue_data_with_write_bit(store: Store) -> None:
    reg(store, "b", "m:1", 0, {"T": tc("T")})
    reg(store, "b", "s:1", 1, channel="0.1.2")
    with store.write() as t:
        route.unregister_broker(t, C, "m:1", "b", 0)
    data = pick(store, "T")
    assert data["brokerDatas"][0]["brokerAddrs"] == {1: "s:1"}  # type: ignore[index]
    assert data["queueDatas"][0]["perm"] == 6  # type: ignore[index]


def _static_setup(store: Store) -> None:
    """RouteInfoManagerStaticRegisterTest: 3 names x 3 brokers x 10 topics."""
    for n in range(3):
        for b in range(3):
            topics = {f"t{i}": tc(f"t{i}") for i in range(10)}
            reg(store, f"name{n}", f"10.0.{n}.{b}:10911", b, topics, channel=f"0.1.{n}{b}")


def test_static_register(store: Store) -> None:
    _static_setup(store)
    with store.read() as t:
        brokers, clusters = queries.cluster_info(t)
        assert sorted(clusters[C]) == ["name0", "name1", "name2"]
        assert len(brokers["name1"]["brokerAddrs"]) == 3
        assert sorted(queries.all_topics(t)) == sorted(f"t{i}" for i in range(10))
        assert sorted(queries.topics_by_cluster(t, C)) == sorted(f"t{i}" for i in range(10))
        assert queries.topics_by_cluster(t, "nope") == []
        names, addr = queries.system_topics(t)
        assert sorted(names) == sorted([C, "name0", "name1", "name2"]) and addr is not None
        data = queries.pickup_topic_route_data(t, "t3")
    assert data is not None and len(data["brokerDatas"]) == 3
    assert all(q == route.queue_data(q["brokerName"], tc("t3")) for q in data["queueDatas"])
    with store.write() as t:
        route.delete_topic(t, "t3")
    assert pick(store, "t3") is None


def test_delete_topic_by_cluster(store: Store) -> None:
    reg(store, "a", "a:1", 0, {"T": tc("T")}, cluster="c1")
    reg(store, "b", "b:1", 0, {"T": tc("T")}, cluster="c2", channel="0.1.2")
    with store.write() as t:
        route.delete_topic(t, "T", "unknown")
        route.delete_topic(t, "T", "c1")
    assert [q["brokerName"] for q in pick(store, "T")["queueDatas"]] == ["b"]  # type: ignore[index]
    with store.write() as t:
        route.delete_topic(t, "T", "c2")
    assert pick(store, "T") is None


@pytest.mark.parametrize(("perm", "add", "expected"), [(4, True, 6), (4, False, 4), (6, False, 4),
                                                       (7, False, 5), (7, True, 6)])
def test_write_perm(store: Store, perm: int, add: bool, expected: int) -> None:
    reg(store, "b", "m:1", 0, {"T": tc("T", perm=perm)})
    with store.write() as t:
        assert route.change_write_perm(t, "b", add) == 1
        assert route.change_write_perm(t, "nobody", add) == 0
    assert pick(store, "T")["queueDatas"][0]["perm"] == expected  # type: ignore[index]


def test_unit_topic_lists(store: Store) -> None:
    reg(store, "b", "m:1", 0, {"U": tc("U", sysflag=1), "S": tc("S", sysflag=2),
                               "US": tc("US", sysflag=3), "N": tc("N")})
    with store.read() as t:
        assert sorted(queries.unit_topics(t, queries.UnitList.UNIT)) == ["U", "US"]
        assert sorted(queries.unit_topics(t, queries.UnitList.HAS_UNIT_SUB)) == ["S", "US"]
        assert queries.unit_topics(t, queries.UnitList.HAS_UNIT_SUB_UNUNIT) == ["S"]


def test_filter_servers(store: Store) -> None:
    reg(store, "b", "m:1", 0, {"T": tc("T")}, filters=["f:1"])
    assert pick(store, "T")["filterServerTable"] == {"m:1": ["f:1"]}  # type: ignore[index]
    reg(store, "b", "m:1", 0, {"T": tc("T")}, filters=None)
    assert pick(store, "T")["filterServerTable"] == {"m:1": ["f:1"]}  # type: ignore[index]
    reg(store, "b", "m:1", 0, {"T": tc("T")}, filters=[])
    assert pick(store, "T")["filterServerTable"] == {}  # type: ignore[index]


def test_scan_expires_strictly_older(store: Store) -> None:
    reg(store, "a", "a:1", 0, {"T": tc("T")}, now=1000)
    reg(store, "b", "b:1", 0, {"T": tc("T")}, now=2000, channel="0.1.2")
    assert housekeeping.scan_not_active(store, 1000 + 120_000, 120_000, False) == 0
    assert housekeeping.scan_not_active(store, 1001 + 120_000, 120_000, False) == 1
    assert [q["brokerName"] for q in pick(store, "T")["queueDatas"]] == ["b"]  # type: ignore[index]
    assert housekeeping.scan_not_active(store, 2001 + 120_000, 120_000, False) == 1
    assert pick(store, "T") is None


def test_scan_uses_a_5x_broker_timeout(store: Store) -> None:
    with store.write() as t:
        route.register_broker(t, C, "a:1", "a", 0, None, DV1, {}, None, "0.1.1", 0, 10_000)
    assert housekeeping.scan_not_active(store, 10_001, 120_000, False) == 1


def test_query_data_version_refreshes_only_when_unchanged(store: Store) -> None:
    reg(store, "a", "a:1", 0, now=0, dv=DV1)
    with store.write() as t:
        assert route.query_data_version(t, "a:1", DV2, 50_000) == (True, DV1)
        assert t.get("live", "a:1")["lastUpdateTimestamp"] == 0
        assert route.query_data_version(t, "a:1", dict(DV1), 60_000) == (False, DV1)
        assert t.get("live", "a:1")["lastUpdateTimestamp"] == 60_000
        assert route.query_data_version(t, "x:1", DV1, 1) == (True, None)
        assert route.query_data_version(t, "a:1", None, 1)[0] is True


def test_broker_heartbeat(store: Store) -> None:
    reg(store, "a", "a:1", 0, now=0)
    with store.write() as t:
        assert route.broker_heartbeat(t, "a:1", 99) and not route.broker_heartbeat(t, "z", 1)
    assert housekeeping.scan_not_active(store, 120_099, 120_000, False) == 0


def test_channel_destroy_removes_every_broker_of_the_channel(store: Store) -> None:
    reg(store, "a", "a:1", 0, {"T": tc("T")}, channel="0.9.1")
    reg(store, "b", "b:1", 0, {"T": tc("T")}, channel="0.9.1")
    reg(store, "c", "c:1", 0, {"T": tc("T")}, channel="0.9.2")
    assert housekeeping.channels_closed(store, [("0.9.7", "127.0.0.1:5555")], False) == []
    assert sorted(housekeeping.channels_closed(store, [("0.9.1", "x")], False)) == ["a:1", "b:1"]
    assert [q["brokerName"] for q in pick(store, "T")["queueDatas"]] == ["c"]  # type: ignore[index]


def test_channel_destroy_falls_back_to_peer_address(store: Store) -> None:
    reg(store, "a", "a:1", 0, {"T": tc("T")}, channel="0.9.1")
    assert housekeeping.channels_closed(store, [("0.9.5", "a:1")], False) == ["a:1"]
    assert pick(store, "T") is None


def test_reregistration_on_a_new_channel_moves_the_binding(store: Store) -> None:
    reg(store, "a", "a:1", 0, {"T": tc("T")}, channel="0.9.1")
    reg(store, "a", "a:1", 0, {"T": tc("T")}, channel="0.9.2")
    assert housekeeping.channels_closed(store, [("0.9.1", None)], False) == []
    assert pick(store, "T") is not None
    assert housekeeping.channels_closed(store, [("0.9.2", None)], False) == ["a:1"]


def test_cleanup_channel_prefix(store: Store) -> None:
    reg(store, "a", "a:1", 0, {"T": tc("T")}, channel="0.100.1")
    reg(store, "b", "b:1", 0, {"T": tc("T")}, channel="0.100.2")
    reg(store, "c", "c:1", 0, {"T": tc("T")}, channel="0.1000.1")
    reg(store, "d", "d:1", 0, {"T": tc("T")}, channel="1.100.1")
    assert housekeeping.io_worker_gone(store, "0.100.", False) == 2
    assert housekeeping.io_worker_gone(store, "0.100.", False) == 0
    names = sorted(q["brokerName"] for q in pick(store, "T")["queueDatas"])  # type: ignore[index]
    assert names == ["c", "d"]


def test_register_topic_needs_known_brokers(store: Store) -> None:
    reg(store, "a", "a:1", 0)
    qd = route.queue_data
    with store.write() as t:
        route.register_topic(t, "N", [qd("zz", tc("N")), qd("a", tc("N"))])
        assert t.get("topic", "N") is None
        route.register_topic(t, "N", [qd("a", tc("N"))])
        assert list(t.get("topic", "N")) == ["a"]


def test_broker_member_group(store: Store) -> None:
    reg(store, "a", "a:1", 0)
    reg(store, "a", "a:2", 1, channel="0.1.2")
    with store.read() as t:
        assert queries.broker_member_group(t, "a") == {0: "a:1", 1: "a:2"}
        assert queries.broker_member_group(t, "zz") == {}


def test_generation_moves_only_on_route_changes(store: Store) -> None:
    reg(store, "a", "a:1", 0, {"T": tc("T")}, now=1)
    with store.read() as t:
        gen = t.generation()
    reg(store, "a", "a:1", 0, {"T": tc("T")}, now=2)
    with store.write() as t:
        route.broker_heartbeat(t, "a:1", 3)
    with store.read() as t:
        assert t.generation() == gen
    with store.write() as t:
        route.change_write_perm(t, "a", add=False)
    with store.read() as t:
        assert t.generation() == gen + 1


def test_removing_queue_datas_finds_a_name_only_as_a_key(store: Store) -> None:
    """The scan passes over a topic by a byte search for the name as a key: a name that is
    the end of another, or that stands as a value, must not be mistaken for it."""
    qd = {"perm": 6, "readQueueNums": 4, "topicSysFlag": 0, "writeQueueNums": 4}
    with store.write() as t:
        t.put("topic", "T1", {"b": {"brokerName": "b", **qd}, "ab": {"brokerName": "ab", **qd}})
        t.put("topic", "T2", {"ab": {"brokerName": "ab", **qd}})
        t.put("topic", "T3", {"c": {"brokerName": "b", **qd}})  # "b" only as a value
        t.put("topic", 'T"4', {'x"b': {"brokerName": 'x"b', **qd}})  # escaped in the key
        route.remove_queue_datas(t, {"b", 'x"b'})
    with store.read() as t:
        assert dict(t.items("topic")) == {
            "T1": {"ab": {"brokerName": "ab", **qd}},
            "T2": {"ab": {"brokerName": "ab", **qd}},
            "T3": {"c": {"brokerName": "b", **qd}},
        }


def test_channels_closed_together_leave_the_topics_as_one_at_a_time(store: Store) -> None:
    """Names that vanish leave the topic table in one pass at the end: the same tables as
    closing the channels one by one, a master whose slave stays keeping its queue data."""
    def setup(s: Store) -> None:
        for i, name in enumerate(("a", "b", "c")):
            reg(s, name, f"{name}:1", 0, {"T": tc("T"), f"T{name}": tc(f"T{name}")},
                channel=f"0.9.{i}")
        reg(s, "c", "c:2", 1, channel="0.9.9")  # c's slave stays

    def tables(s: Store) -> dict[str, Any]:
        with s.read() as t:
            return {name: dict(t.items(name)) for name in ("topic", "broker", "cluster", "live")}

    setup(store)
    closed = [("0.9.0", None), ("0.9.1", None), ("0.9.2", None)]
    assert housekeeping.channels_closed(store, closed, False) == ["a:1", "b:1", "c:1"]
    together = tables(store)
    with store.write() as t:
        for name in list(dict(t.items("topic"))):
            t.delete("topic", name)
        for table in ("broker", "cluster", "live", "channel"):
            for key in list(dict(t.items(table))):
                t.delete(table, key)
    setup(store)
    for ch, peer in closed:
        housekeeping.channels_closed(store, [(ch, peer)], False)
    assert tables(store) == together
    assert set(together["topic"]) == {"T", "Tc"}  # c's name stays through its slave


def test_brokers_expiring_in_one_scan_leave_the_topics_together(store: Store) -> None:
    """One scan expiring several masters drops the names that vanish from the topics in one
    pass; a master whose slave is still alive keeps its name and its queue data."""
    for i, name in enumerate(("a", "b", "c")):
        reg(store, name, f"{name}:1", 0, {"T": tc("T"), f"T{name}": tc(f"T{name}")},
            now=1000, channel=f"0.9.{i}")
    reg(store, "c", "c:2", 1, now=100_000, channel="0.9.9")
    assert housekeeping.scan_not_active(store, 1001 + 120_000, 120_000, False) == 3
    with store.read() as t:
        assert set(dict(t.items("topic"))) == {"T", "Tc"}
        assert set(dict(t.items("broker"))) == {"c"}
    assert [q["brokerName"] for q in pick(store, "T")["queueDatas"]] == ["c"]  # type: ignore[index]


def _topics_by_cluster_as_java_loops(t: Any, cluster: str, five: bool) -> list[str]:
    """RouteInfoManager.getTopicsByCluster as written: a pass over the table per broker."""
    names = t.get("cluster", cluster) or ()
    table = queries._topic_table(t, five)
    return queries._topic_list((topic for name in queries.hashmap_order(names)
                                for topic, qmap in table if name in qmap), five)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("five", [False, True])
def test_topics_by_cluster_in_the_order_of_javas_loops(store: Store, seed: int,
                                                       five: bool) -> None:
    """Brokers of two clusters over shared and own topics: the one-pass list is the nested
    loops' list, order included (enough topics for the Java sets to resize and collide)."""
    import random
    rnd = random.Random(seed)
    clusters = ("A", "B")
    for b in range(rnd.randint(1, 12)):
        topics = {f"T{rnd.randrange(400)}": None for _ in range(rnd.randint(0, 300))}
        reg(store, f"b{b}", f"10.0.0.{b}:10911", 0, {n: tc(n) for n in topics},
            cluster=rnd.choice(clusters), channel=f"0.1.{b}")
    with store.read() as t:
        for cluster in (*clusters, "nope"):
            assert queries.topics_by_cluster(t, cluster, five) == \
                _topics_by_cluster_as_java_loops(t, cluster, five)
