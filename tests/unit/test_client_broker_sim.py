"""Broker simulator pieces: identities, data versions, topic changes, crash and stop."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest

from cluster.client.broker_sim import (
    BrokerSimulation,
    SimOptions,
    TopicSpec,
    broker_identity,
    every,
)
from cluster.core.protocol.codes import RequestCode
from tests.nodeproc import poll_until
from tests.unit.client_fakes import FakeNameServer

FAST = SimOptions(period=30.0, clamp=(0.1, 60.0), timeout=1.0, retry_interval=0.1)


@pytest.fixture
def node() -> Iterator[FakeNameServer]:
    srv = FakeNameServer().start()
    yield srv
    srv.stop()




def _registers(srv: FakeNameServer, addr: str) -> list[dict[str, object]]:
    return [orjson.loads(r.body or b"{}") for r in srv.requests
            if r.code == RequestCode.REGISTER_BROKER and r.field("brokerAddr") == addr]


def test_identities_are_deterministic() -> None:
    master, slave = broker_identity("C", 1, 0), broker_identity("C", 1, 1)
    assert (master.broker_name, master.broker_addr, master.broker_id) == \
        ("broker-1", "127.0.0.1:25921", 0)
    assert (slave.broker_name, slave.broker_addr, slave.ha_server_addr, slave.broker_id) == \
        ("broker-1", "127.0.0.1:25923", "127.0.0.1:25924", 1)


def test_every_runs_once_per_interval() -> None:
    calls: list[int] = []
    tick = every(1.0, lambda: calls.append(1))
    for t in (0.5, 1.0, 1.5, 3.2):
        tick(t)
    assert len(calls) == 3
    never = every(0.0, lambda: calls.append(2))
    never(100.0)
    assert 2 not in calls


def test_topic_changes_bump_the_version_and_re_register(node: FakeNameServer) -> None:
    sim = BrokerSimulation([node.addr], groups=1, slaves=1, topics=2, opts=FAST, seed=3)
    master = sim.brokers[0]
    try:
        sim.start()
        poll_until(lambda: len(_registers(node, master.who.broker_addr)) >= 1)
        master.add_topic(TopicSpec("Extra"))
        poll_until(lambda: len(_registers(node, master.who.broker_addr)) >= 2)
        body = _registers(node, master.who.broker_addr)[-1]
        wrapper = body["topicConfigSerializeWrapper"]
        assert "Extra" in wrapper["topicConfigTable"]  # type: ignore[index]
        assert wrapper["dataVersion"]["counter"] == 1  # type: ignore[index]
        assert master.remove_topic("Extra") and not master.remove_topic("Extra")
        assert master.current_version()["counter"] == 2
    finally:
        sim.stop()
    unregistered = {r.field("brokerAddr") for r in node.requests
                    if r.code == RequestCode.UNREGISTER_BROKER}
    assert unregistered == {b.who.broker_addr for b in sim.brokers}


def test_crash_stops_heartbeats_and_closes_connections(node: FakeNameServer) -> None:
    sim = BrokerSimulation([node.addr], groups=2, topics=1, opts=FAST, seed=1)
    try:
        sim.start()
        poll_until(lambda: len(node.requests) >= 2)
        crashed = sim.crash(1)
        assert [b.state for b in crashed] == ["crashed"] and len(sim.live()) == 1
        assert not crashed[0].api.pool.is_connected(node.addr)
    finally:
        sim.stop(unregister=False)
    assert not any(r.code == RequestCode.UNREGISTER_BROKER for r in node.requests)


def test_too_many_slaves_is_rejected() -> None:
    with pytest.raises(ValueError):
        BrokerSimulation(["127.0.0.1:1"], slaves=5)
