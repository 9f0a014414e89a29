"""Routes across a restart, with real processes: a node SIGKILLed (its whole process group)
and started again on its data dir answers the routes it had at once; a broker that never
comes back expires on the bound from its last heartbeat, one that heartbeats stays; a
graceful stop and start keeps the routes too."""

from __future__ import annotations

import os
import signal
import time

import pytest

from cluster.client.errors import RemoteError
from cluster.client.fanout import BrokerIdentity, BrokerOuterAPI, RegisterPayload
from cluster.client.heartbeat import HeartbeatLoop
from cluster.client.nsclient import NameServerClient
from cluster.core.protocol.codes import ResponseCode
from tests.nodeproc import NodeProcess, poll_until

pytestmark = pytest.mark.integration

EXPIRY_S = 6.0
SCAN_S = 0.2
PROPS = {"brokerChannelExpiredTime": str(int(EXPIRY_S * 1000)),
         "scanNotActiveBrokerInterval": str(int(SCAN_S * 1000))}
GONE = BrokerIdentity("DefaultCluster", "broker-gone", "127.0.0.1:30911", 0, "127.0.0.1:30912")
STAYS = BrokerIdentity("DefaultCluster", "broker-stays", "127.0.0.1:31911", 0,
                       "127.0.0.1:31912")


def _payload(topic: str) -> RegisterPayload:
    table = {topic: {"topicName": topic, "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}}
    return RegisterPayload.build({"counter": 1, "timestamp": 1700000000000}, table, [], False)


@pytest.fixture
def node_props() -> dict[str, str]:
    return PROPS


def _brokers(client: NameServerClient, addr: str, topic: str) -> list[str]:
    try:
        route = client.get_route(topic, addr=addr)
    except RemoteError as exc:
        if exc.code == ResponseCode.TOPIC_NOT_EXIST:
            return []
        raise
    return sorted(b["brokerName"] for b in route["brokerDatas"])


def _restart(old: NodeProcess, kill: bool) -> NodeProcess:
    assert old.proc is not None
    if kill:
        os.killpg(old.proc.pid, signal.SIGKILL)
        old.proc.wait(10)
    old.stop()
    return NodeProcess(old.data_dir, port=old.port, name=old.name).start()


def test_routes_survive_a_sigkill_and_a_dead_broker_still_expires(node: NodeProcess) -> None:
    addr = node.addr
    with BrokerOuterAPI([addr]) as api, NameServerClient([addr], timeout=2.0) as client:
        last_heartbeat = time.time()
        assert api.register_broker_all(GONE, _payload("GoneTopic"), timeout=5.0).all_ok
        hb = HeartbeatLoop(api, STAYS, lambda: _payload("StaysTopic"), period=1.0,
                           clamp=(0.5, 60.0), timeout=1.0, retry_interval=0.2)
        hb.start()
        try:
            poll_until(lambda: _brokers(client, addr, "StaysTopic") == ["broker-stays"], 10,
                       what="the heartbeating broker registered")
            node = _restart(node, kill=True)
            # answered right after the restart, before any broker registered again
            assert _brokers(client, addr, "GoneTopic") == ["broker-gone"]
            assert time.time() < last_heartbeat + EXPIRY_S, "restart took longer than expiry"
            poll_until(lambda: _brokers(client, addr, "GoneTopic") == [],
                       EXPIRY_S + 10, 0.05, "the broker that never came back expired")
            gone_at = time.time()
            assert gone_at >= last_heartbeat + EXPIRY_S  # not before its bound
            assert _brokers(client, addr, "StaysTopic") == ["broker-stays"]
        finally:
            hb.stop()
            node.stop()


def test_routes_survive_a_graceful_restart(node: NodeProcess) -> None:
    addr = node.addr
    with BrokerOuterAPI([addr]) as api, NameServerClient([addr], timeout=2.0) as client:
        assert api.register_broker_all(STAYS, _payload("StaysTopic"), timeout=5.0).all_ok
        node = _restart(node, kill=False)
        try:
            assert _brokers(client, addr, "StaysTopic") == ["broker-stays"]
            assert "event=routes_restored brokers=1 topics=1 expired=0" in node.stop()
        finally:
            node.stop()
