"""Route tables across a restart (fake clock): kept with each broker's last heartbeat, the
previous run's volatile state forgotten, expiry on the normal bound, nothing stale served."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lmdb
import orjson
import pytest

from state import housekeeping, queries, route
from state.restore import restore_routes
from state.store import FORMAT, Store
from tests.unit.test_state_route import DV1, DV2, tc
from worker.controller.bootstrap import open_state
from worker.controller.settings import NodeSettings, load_settings

EXPIRY = 120_000
C = "DefaultCluster"


def reg(store: Store, name: str, addr: str, now: int, channel: str, dv: dict[str, int] = DV1,
        topics: dict[str, Any] | None = None) -> None:
    with store.write() as t:
        route.register_broker(t, C, addr, name, 0, None, dv,
                              {"T": tc("T")} if topics is None else topics, None, channel, now)


def reopened(path: Path) -> Store:
    store = Store.reopen(path)
    assert store is not None
    return store


def routed(store: Store, topic: str = "T") -> list[str]:
    with store.read() as t:
        data = queries.pickup_topic_route_data(t, topic)
    return [] if data is None else sorted(b["brokerName"] for b in data["brokerDatas"])


def test_routes_are_kept_and_the_runs_connections_forgotten(tmp_path: Path) -> None:
    path = tmp_path / "lmdb"
    store = Store.create(path, 32 << 20)
    reg(store, "a", "10.0.0.1:10911", now=1_000, channel="0.111.1@10.0.0.1:50000")
    reg(store, "b", "10.0.0.2:10911", now=5_000, channel="0.111.2@10.0.0.2:50000")
    with store.write() as t:
        t.put("kv", "NS", {"k": "v"})
        t.put("meta", "snapshot_seq", 7)
        t.put("meta", "snapshot_run", 1_000)
        gen = t.generation()
    store.close()

    store = reopened(path)
    restored = restore_routes(store, five=True)
    assert (restored.brokers, restored.topics, restored.newest_heartbeat) == (2, 1, 5_000)
    assert routed(store) == ["a", "b"]
    with store.read() as t:
        assert t.keys("channel") == [] and t.keys("kv") == [] and t.keys("applied") == []
        assert all("channel" not in live for _, live in t.items("live"))
        assert t.get("meta", "snapshot_seq") is None and t.get("meta", "snapshot_run") is None
        assert t.generation() > gen
        assert t.get("live", "10.0.0.1:10911")["lastUpdateTimestamp"] == 1_000
    # the previous run's connections are gone: closing a channel of that run removes nothing
    closed = [("0.111.1@10.0.0.1:50000", "10.0.0.1:50000")]
    assert housekeeping.channels_closed(store, closed, False) == []
    store.close()


def test_each_broker_expires_on_the_bound_from_its_last_heartbeat(tmp_path: Path) -> None:
    path = tmp_path / "lmdb"
    store = Store.create(path, 32 << 20)
    reg(store, "gone", "10.0.0.1:10911", now=1_000, channel="0.1.1@p:1", topics={"G": tc("G")})
    reg(store, "back", "10.0.0.2:10911", now=1_000, channel="0.1.2@p:2")
    store.close()
    store = reopened(path)
    restore_routes(store, five=True)
    # the node restarted at 60 s; "back" registers again on a new connection at 70 s
    reg(store, "back", "10.0.0.2:10911", now=70_000, channel="0.222.1@p:3", dv=DV2)
    # not past the bound yet
    assert housekeeping.scan_not_active(store, 1_000 + EXPIRY, EXPIRY, False) == 0
    assert routed(store, "G") == ["gone"]
    assert housekeeping.scan_not_active(store, 1_000 + EXPIRY + 1, EXPIRY, False) == 1
    assert routed(store, "G") == [] and routed(store) == ["back"]
    assert housekeeping.scan_not_active(store, 70_000 + EXPIRY, EXPIRY, False) == 0
    assert housekeeping.scan_not_active(store, 70_000 + EXPIRY + 1, EXPIRY, False) == 1
    assert routed(store) == []
    # the new connection is bound: its close removes the broker at once, as before a restart
    reg(store, "back", "10.0.0.2:10911", now=300_000, channel="0.222.1@p:3")
    closed = [("0.222.1@p:3", "p:3")]
    assert housekeeping.channels_closed(store, closed, False) == ["10.0.0.2:10911"]
    store.close()


def _node_dir(tmp_path: Path, kv: dict[str, dict[str, str]]) -> Path:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "kvConfig.json").write_bytes(orjson.dumps({"configTable": kv}))
    return data


def _following(tmp_path: Path, data: Path, release: str) -> NodeSettings:
    conf = tmp_path / f"{release}.properties"
    conf.write_text(f"rocketmqVersion={release}\n")
    return load_settings(data, conf)


def test_open_state_expires_before_serving_and_reloads_kv_and_config(tmp_path: Path) -> None:
    data = _node_dir(tmp_path, {"NS": {"k": "file"}})
    settings = _following(tmp_path, data, "4.9.8")  # the registrations below follow 4.9.8
    path = tmp_path / "lmdb"
    store = open_state(path, settings, now=1_000)
    reg(store, "old", "10.0.0.1:10911", now=1_000, channel="0.1.1@p:1", topics={"O": tc("O")})
    reg(store, "new", "10.0.0.2:10911", now=100_000, channel="0.1.2@p:2")
    with store.write() as t:
        t.put("kv", "NS", {"k": "store only"})
        t.put("config", "orderMessageEnable", "true")
    store.close()

    store = open_state(path, settings, now=1_000 + EXPIRY + 1)  # "old" is past its bound
    assert routed(store, "O") == [] and routed(store) == ["new"]
    with store.read() as t:
        assert t.get("kv", "NS") == {"k": "file"}
        assert t.get("config", "orderMessageEnable") == "false"
    store.close()


def test_a_node_following_another_release_than_its_last_run_starts_without_routes(
        tmp_path: Path) -> None:
    data = _node_dir(tmp_path, {})
    path = tmp_path / "lmdb"
    store = open_state(path, _following(tmp_path, data, "4.9.8"), now=1_000)
    reg(store, "b", "10.0.0.1:10911", now=1_000, channel="0.1.1@p:1")
    store.close()
    store = open_state(path, _following(tmp_path, data, "4.9.8"), now=2_000)
    assert routed(store) == ["b"]  # same release: kept
    store.close()
    store = open_state(path, _following(tmp_path, data, "5.5.0"), now=3_000)
    with store.read() as t:  # 5.x keys the live table by cluster too: nothing carried over
        assert routed(store) == [] and t.keys("live") == [] and t.keys("broker") == []
    store.close()


def test_a_store_that_cannot_be_reopened_is_replaced(tmp_path: Path) -> None:
    assert Store.reopen(tmp_path / "absent") is None
    other = Store.create(tmp_path / "other", 16 << 20)
    with other.write() as t:
        t.put("meta", "format", FORMAT + 1)
    other.close()
    assert Store.reopen(tmp_path / "other") is None
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "data.mdb").write_bytes(b"not an lmdb file" * 512)
    assert Store.reopen(garbage) is None
    settings = load_settings(_node_dir(tmp_path, {}))
    store = open_state(garbage, settings, now=0)
    with store.read() as t:
        assert t.get("meta", "format") == FORMAT and t.keys("topic") == []
    store.close()


def test_reopen_refuses_a_store_missing_a_table(tmp_path: Path) -> None:
    env = lmdb.open(str(tmp_path / "old"), map_size=16 << 20, max_dbs=4)
    env.open_db(b"topic")
    env.close()
    assert Store.reopen(tmp_path / "old") is None


@pytest.mark.parametrize("now", [1_000, 1_000 + EXPIRY])
def test_a_broker_within_its_bound_is_served_right_after_the_restart(tmp_path: Path,
                                                                       now: int) -> None:
    settings = load_settings(_node_dir(tmp_path, {}))
    store = open_state(tmp_path / "lmdb", settings, now=0)
    reg(store, "a", "10.0.0.1:10911", now=1_000, channel="0.1.1@p:1")
    store.close()
    store = open_state(tmp_path / "lmdb", settings, now=now)
    assert routed(store) == ["a"]
    store.close()
