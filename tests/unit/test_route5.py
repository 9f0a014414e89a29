"""5.x registration, unregistration and liveness rules (`state.route5`), with a fake clock."""

from __future__ import annotations

from typing import Any

from state import housekeeping, live, nsconfig, queries, route5
from state.applied import TopicTable
from state.store import Store, Txn

C = "C1"
DV1 = {"counter": 1, "stateVersion": 0, "timestamp": 1}
DV2 = {"counter": 2, "stateVersion": 0, "timestamp": 2}


def five(store: Store) -> Store:
    nsconfig.initialize(store, {"rocketmqVersion": "5.5.0"}, "", "")
    return store


def table(*topics: str, perm: int = 6) -> TopicTable:
    return TopicTable(lambda: {t: (perm, 4, 0, 4) for t in topics})


def reg(name: str, addr: str, bid: int, topics: TopicTable, dv: dict[str, int] = DV1,
        channel: str = "ch", **kw: Any) -> route5.Registration:
    return route5.Registration(C, addr, name, bid, addr + "0", dict(dv), topics, [], channel,
                               **kw)


def register(store: Store, r: route5.Registration, now: int = 1000, delete: bool = False
             ) -> dict[str, str | None] | None:
    with store.write() as t:
        return route5.register_broker(t, r, now, delete)


def qmaps(store: Store, topic: str) -> dict[str, Any] | None:
    with store.read() as t:
        got: dict[str, Any] | None = t.get("topic", topic)
        return got


def addrs(store: Store, name: str) -> dict[str, str] | None:
    with store.read() as t:
        bd = t.get("broker", name)
    return None if bd is None else bd["brokerAddrs"]


def is_live(t: Txn, addr: str) -> bool:
    return t.get("live", live.key(C, addr, True)) is not None


# ---------------------------------------------------------------- registration


def test_one_topic_before_the_first_registration_is_refused_but_leaves_its_broker_data(
        store: Store) -> None:
    five(store)
    assert register(store, reg("b", "a:1", 0, table("T1"))) is None
    assert addrs(store, "b") == {}  # 5.x created the BrokerData before it refused
    with store.read() as t:
        assert t.get("cluster", C) == ["b"] and not is_live(t, "a:1")
    assert register(store, reg("b", "a:1", 0, table("T1", "T2"))) == {
        "haServerAddr": None, "masterAddr": None}
    assert register(store, reg("b", "a:1", 0, table("T3"))) is not None  # its id is known now
    assert set(qmaps(store, "T3") or {}) == {"b"}


def test_a_slave_registering_its_masters_table_is_not_decoded(store: Store) -> None:
    """The single-topic rule counts the topics of a table the name applied last from its
    records; any other table is decoded to count them."""
    five(store)
    loads: list[str] = []

    def counted(digest: str, *topics: str) -> TopicTable:
        def load() -> dict[str, tuple[int, int, int, int]]:
            loads.append(digest)
            return {t: (6, 4, 0, 4) for t in topics}
        return TopicTable(load, lambda: digest)

    assert register(store, reg("b", "m:1", 0, counted("d2", "T1", "T2"))) == {
        "haServerAddr": None, "masterAddr": None}
    assert loads == ["d2"]
    assert register(store, reg("b", "s:1", 1, counted("d2", "T1", "T2"), acting=False)) == {
        "haServerAddr": "m:10", "masterAddr": "m:1"}
    assert loads == ["d2"]  # the master's table: counted from its records
    assert register(store, reg("b", "s:2", 2, counted("d1", "T1"), acting=False)) is None
    assert loads == ["d2", "d1"]  # another table of one topic: decoded, refused
    assert addrs(store, "b") == {"0": "m:1", "1": "s:1"}


def test_same_data_version_adds_missing_topics_only(store: Store) -> None:
    five(store)
    register(store, reg("b", "a:1", 0, table("T1", "T2")))
    register(store, reg("b", "a:1", 0, table("T1", "T3", perm=2)))  # same DataVersion
    assert (qmaps(store, "T1") or {})["b"]["perm"] == 6  # changed fields wait for a new version
    assert (qmaps(store, "T3") or {})["b"]["perm"] == 2
    register(store, reg("b", "a:1", 0, table("T1", perm=2), DV2))
    assert (qmaps(store, "T1") or {})["b"]["perm"] == 2


def test_a_stale_state_version_is_ignored_and_loses_its_live_entry(store: Store) -> None:
    five(store)
    register(store, reg("b", "x:1", 0, table("T1", "T2"), {**DV1, "stateVersion": 5}))
    register(store, reg("b", "y:1", 1, table("T1", "T2"), {**DV1, "stateVersion": 1}))
    assert register(store, reg("b", "y:1", 0, table("T1", "T2"),
                               {**DV1, "stateVersion": 3})) == {}
    assert addrs(store, "b") == {"0": "x:1"}  # y's id 1 went with the address switch
    with store.read() as t:
        assert is_live(t, "x:1") and not is_live(t, "y:1")
    register(store, reg("b", "y:1", 0, table("T1", "T2"), {**DV2, "stateVersion": 7}))
    assert addrs(store, "b") == {"0": "y:1"}


def test_split_registration_keeps_every_part(store: Store) -> None:
    five(store)
    register(store, reg("b", "a:1", 0, table("S1", "S2")))
    register(store, reg("b", "a:1", 0, table("S3", "S4")))  # the same DataVersion
    with store.read() as t:
        assert queries.all_topics(t, True) and sorted(t.keys("topic")) == ["S1", "S2", "S3",
                                                                          "S4"]


def test_delete_topic_with_broker_registration(store: Store) -> None:
    five(store)
    register(store, reg("b", "a:1", 0, table("T1", "T2", "T3")))
    register(store, reg("c", "c:1", 0, table("T2", "T9")))
    register(store, reg("b", "a:1", 0, table("T1", "T2"), DV2), delete=True)
    assert qmaps(store, "T3") is None and set(qmaps(store, "T2") or {}) == {"b", "c"}
    mapped = reg("b", "a:1", 0, table("T1"), {**DV2, "counter": 3},
                 mappings={"T1": {"bname": "b", "topic": "T1"}})
    register(store, mapped, delete=True)  # a table with static topics deletes nothing
    assert set(qmaps(store, "T2") or {}) == {"b", "c"}


def test_prime_slave_of_an_acting_group_applies_its_table_read_only(store: Store) -> None:
    five(store)
    register(store, reg("b", "s:1", 1, table("T1", "T2"), acting=True))
    assert (qmaps(store, "T1") or {})["b"]["perm"] == 4
    register(store, reg("b", "m:1", 0, table("T1", "T2"), acting=True))
    assert (qmaps(store, "T1") or {})["b"]["perm"] == 6
    register(store, reg("o", "s:2", 1, table("U1", "U2")))  # a 4.9 slave applies nothing
    assert qmaps(store, "U1") is None


def test_static_topic_mappings_follow_data_versions(store: Store) -> None:
    five(store)
    info = {"bname": "b", "epoch": 1, "topic": "S"}
    register(store, reg("b", "a:1", 0, table("S", "T"), mappings={"S": info}))
    register(store, reg("b", "a:1", 0, table("S", "T"), mappings={"S": {**info, "epoch": 2}}))
    with store.read() as t:
        assert t.get("mapping", "S") == {"b": info}
    register(store, reg("b", "a:1", 0, table("S", "T"), DV2, mappings={"S": {**info,
                                                                            "epoch": 3}}))
    with store.read() as t:
        route = queries.pickup_topic_route_data(t, "S", five=True)
    assert route is not None and route["topicQueueMappingByBroker"]["b"]["epoch"] == 3


# ---------------------------------------------------------------- unregistration


def test_unregistration_removes_the_address_under_any_id_and_wipes_acting_groups(
        store: Store) -> None:
    five(store)
    register(store, reg("b", "m:1", 0, table("T1", "T2"), acting=True))
    register(store, reg("b", "s:1", 1, table("T1", "T2"), acting=True))
    with store.write() as t:
        assert route5.apply_unregistrations(t, [route5.Unregistration(C, "m:1", "b")]) == ["m:1"]
    assert addrs(store, "b") == {"1": "s:1"}
    assert (qmaps(store, "T1") or {})["b"]["perm"] == 4  # no master: no writes
    with store.read() as t:
        route = queries.pickup_topic_route_data(t, "T1", five=True)
    assert route is not None
    acting = queries.with_acting_masters(route, "T1")["brokerDatas"][0]["brokerAddrs"]
    assert acting == {0: "s:1"} and route["brokerDatas"][0]["brokerAddrs"] == {1: "s:1"}
    with store.write() as t:
        route5.apply_unregistrations(t, [route5.Unregistration(C, "s:1", "b")])
    assert addrs(store, "b") is None and qmaps(store, "T1") is None
    with store.read() as t:
        assert t.get("cluster", C) is None


def test_a_stale_expiry_cannot_wipe_a_fresh_registration(store: Store) -> None:
    """apache/rocketmq#11043: the expiry is decided, the broker registers again (on a new
    connection), then the queued unregistration runs: it must find the broker changed."""
    five(store)
    register(store, reg("b", "a:1", 0, table("T1", "T2"), channel="old"), now=1000)
    with store.read() as t:  # decided at 1000 + 120 s + 1
        batch = route5.expired_unregistrations(t, 122_001, 120_000)
    assert [u.addr for u in batch] == ["a:1"]
    register(store, reg("b", "a:1", 0, table("T1", "T2"), channel="new"), now=122_002)
    with store.write() as t:
        assert route5.apply_unregistrations(t, batch) == []
    assert addrs(store, "b") == {"0": "a:1"} and qmaps(store, "T1") is not None
    # the same registration on the same connection, only refreshed, is fenced as well
    with store.read() as t:
        batch = route5.expired_unregistrations(t, 244_003, 120_000)
    with store.write() as t:
        live.touch(t, live.key(C, "a:1", True), 244_004)
        assert route5.apply_unregistrations(t, batch) == []


def test_a_stale_channel_close_and_an_unregister_interleaved_with_registrations(
        store: Store) -> None:
    five(store)
    register(store, reg("b", "a:1", 0, table("T1", "T2"), channel="c1"))
    with store.read() as t:
        stale = route5.channel_unregistrations(t, "c1")
    register(store, reg("b", "a:1", 0, table("T1", "T2"), channel="c2"), now=2000)
    with store.write() as t:  # c1's close is seen after the broker reconnected
        assert route5.apply_unregistrations(t, stale) == []
        assert route5.channel_unregistrations(t, "c1") == []
    assert housekeeping.channels_closed(store, [("c1", None)], True) == []
    with store.write() as t:  # its own UNREGISTER_BROKER is not fenced: it is the broker's
        route5.apply_unregistrations(t, [route5.Unregistration(C, "a:1", "b")])
    register(store, reg("b", "a:1", 0, table("T1", "T2"), channel="c3"), now=3000)
    # gone with the unregister
    assert housekeeping.channels_closed(store, [("c2", None)], True) == []
    assert addrs(store, "b") == {"0": "a:1"}
    assert housekeeping.channels_closed(store, [("c3", None)], True) == ["a:1"]
    assert addrs(store, "b") is None


def test_expiry_uses_each_brokers_timeout(store: Store) -> None:
    five(store)
    register(store, reg("b", "a:1", 0, table("T1", "T2"), timeout=1000), now=1000)
    register(store, reg("c", "c:1", 0, table("T1", "T2")), now=1000)
    assert housekeeping.scan_not_active(store, 2000, 120_000, True) == 0  # not strictly older
    assert housekeeping.scan_not_active(store, 2001, 120_000, True) == 1
    assert addrs(store, "b") is None and addrs(store, "c") == {"0": "c:1"}
    with store.write() as t:
        assert route5.broker_heartbeat(t, C, "c:1", 100_000)
        assert not route5.broker_heartbeat(t, "other", "c:1", 100_000)
    assert housekeeping.scan_not_active(store, 121_001, 120_000, True) == 0  # the heartbeat counted
    assert housekeeping.scan_not_active(store, 220_001, 120_000, True) == 1


def test_an_address_no_id_holds_keeps_its_live_entry_after_its_connection_closes(
        store: Store) -> None:
    five(store)
    register(store, reg("b", "x:1", 0, table("T1", "T2"), channel="cx"))
    register(store, reg("b", "y:1", 0, table("T1", "T2"), channel="cy"))  # takes id 0
    # as 5.x: nothing to unregister
    assert housekeeping.channels_closed(store, [("cx", None)], True) == []
    with store.write() as t:
        changed, stored = route5.query_data_version(t, C, "x:1", DV1, 5000)
    assert (changed, stored) == (False, DV1)


def test_the_live_table_is_keyed_by_cluster_and_address(store: Store) -> None:
    five(store)
    register(store, reg("b", "a:1", 0, table("T1", "T2")))
    other = route5.Registration("C2", "a:1", "b2", 0, None, dict(DV2), table("T1", "T2"), [],
                                "ch")
    with store.write() as t:
        route5.register_broker(t, other, 1000)
        assert route5.query_data_version(t, C, "a:1", DV1, 1)[0] is False
        assert route5.query_data_version(t, "C2", "a:1", DV1, 1)[0] is True
        assert route5.query_data_version(t, "C3", "a:1", DV1, 1) == (True, None)
