"""Fan-out client, heartbeat and NameServer client against real node processes.

Three nodes on free ports; one is SIGKILLed and one SIGSTOPped (its whole
process group, so its I/O workers stop too). Every process is reaped by the
``cluster3`` fixture, paused ones are resumed first.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster.client.errors import ConnectError
from cluster.client.fanout import BrokerIdentity, BrokerOuterAPI, RegisterPayload, Status
from cluster.client.heartbeat import HeartbeatLoop
from cluster.client.nsclient import NameServerClient
from tests.nodeproc import NodeProcess, poll_until, start_all, stop_all

pytestmark = pytest.mark.integration

MARGIN = 0.5
WHO = BrokerIdentity("DefaultCluster", "broker-it", "127.0.0.1:20911", 0, "127.0.0.1:20912")


def _topics(n: int = 3) -> dict[str, dict[str, object]]:
    return {f"ItTopic{i}": {"topicName": f"ItTopic{i}", "readQueueNums": 4,
                            "writeQueueNums": 4, "perm": 6} for i in range(n)}


def _payload(counter: int = 1, compressed: bool = False) -> RegisterPayload:
    return RegisterPayload.build({"counter": counter, "timestamp": 1700000000000 + counter},
                                 _topics(), [], compressed)


class Cluster:
    def __init__(self, root: Path, size: int) -> None:
        self.root = root
        self.nodes = [NodeProcess(root / f"n{i}", name=f"n{i}") for i in range(size)]
        self.paused: set[int] = set()
        self.reaped: set[int] = set()

    @property
    def addrs(self) -> list[str]:
        return [n.addr for n in self.nodes]

    def kill(self, i: int) -> None:
        node = self.nodes[i]
        assert node.proc is not None
        os.killpg(node.proc.pid, signal.SIGKILL)
        node.proc.wait(10)
        node.stop()
        self.reaped.add(i)

    def pause(self, i: int) -> None:
        node = self.nodes[i]
        assert node.proc is not None
        os.killpg(node.proc.pid, signal.SIGSTOP)
        self.paused.add(i)

    def resume(self, i: int) -> None:
        node = self.nodes[i]
        assert node.proc is not None
        os.killpg(node.proc.pid, signal.SIGCONT)
        self.paused.discard(i)

    def restart(self, i: int) -> NodeProcess:
        old = self.nodes[i]
        self.nodes[i] = NodeProcess(old.data_dir, port=old.port, name=old.name)
        node = self.nodes[i].start()  # reaps itself when it fails to boot
        self.reaped.discard(i)
        return node

    def stop(self) -> None:
        for i in list(self.paused):
            self.resume(i)
        stop_all(node for i, node in enumerate(self.nodes) if i not in self.reaped)


@pytest.fixture
def cluster3(tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path, 3)
    try:
        start_all(cluster.nodes)
        yield cluster
    finally:
        cluster.stop()


def _has_broker(addr: str, name: str = WHO.broker_name) -> bool:
    with NameServerClient(addr, timeout=2.0) as c:
        try:
            return name in c.get_cluster_info()["brokerAddrTable"]
        except ConnectError:
            return False


def test_fanout_reports_dead_and_paused_nodes_within_the_timeout(cluster3: Cluster) -> None:
    live, dead, paused = cluster3.addrs
    with BrokerOuterAPI(cluster3.addrs) as api:
        assert api.register_broker_all(WHO, _payload(), timeout=5.0).all_ok
        cluster3.kill(1)
        cluster3.pause(2)
        start = time.monotonic()
        result = api.register_broker_all(WHO, _payload(2), timeout=2.0)
        took = time.monotonic() - start
        assert _has_broker(live)
    assert took < 2.0 + MARGIN
    assert result.outcomes[live].status is Status.OK
    assert result.outcomes[dead].status is Status.FAILED
    assert isinstance(result.outcomes[dead].error, ConnectError)
    assert result.outcomes[paused].status is Status.TIMED_OUT
    assert result.outcomes[live].elapsed < 1.0


def test_compressed_registration_and_need_register(cluster3: Cluster) -> None:
    addr = cluster3.addrs[0]
    with BrokerOuterAPI([addr]) as api:
        assert api.register_broker_all(WHO, _payload(5, compressed=True), timeout=5.0).all_ok
        dv = {"counter": 5, "timestamp": 1700000000005}
        assert api.need_register(WHO, dv, timeout=3.0)[0] is False
        assert api.need_register(WHO, {**dv, "counter": 6}, timeout=3.0)[0] is True
        with NameServerClient(addr) as c:  # while the broker's connection is open
            route = c.get_route("ItTopic1")
    assert route["queueDatas"][0]["brokerName"] == WHO.broker_name


def test_closing_the_broker_connection_removes_the_broker(cluster3: Cluster) -> None:
    addr = cluster3.addrs[0]
    with BrokerOuterAPI([addr]) as api:
        assert api.register_broker_all(WHO, _payload(), timeout=5.0).all_ok
        assert _has_broker(addr)
    poll_until(lambda: not _has_broker(addr), 5.0, what="onChannelDestroy")


def test_heartbeat_re_registers_a_restarted_node_within_one_period(cluster3: Cluster) -> None:
    period = 2.0
    with BrokerOuterAPI(cluster3.addrs) as api:
        hb = HeartbeatLoop(api, WHO, _payload, period=period, clamp=(0.5, 60.0), timeout=1.0,
                           retry_interval=0.2)
        hb.start()
        try:
            # the nodes hold the broker before the loop has read every node's reply
            poll_until(lambda: all(hb.state.stats[a].ok and _has_broker(a) for a in cluster3.addrs),
                       10.0, what="first registration on every node")
            cluster3.kill(1)
            back = cluster3.addrs[1]
            poll_until(lambda: hb.state.stats[back].failed > 0, 10.0, what="failure seen")
            cluster3.restart(1)
            booted = time.monotonic()
            # the restarted node kept its routes; what matters is the broker registering again
            poll_until(lambda: (hb.state.stats[back].last_ok_at or 0) > booted,
                       period + MARGIN, interval=0.05, what="re-registration of the restarted node")
            assert time.monotonic() - booted < period + MARGIN and _has_broker(back)
        finally:
            hb.stop()


def test_route_lookup_fails_over_to_a_live_node(cluster3: Cluster) -> None:
    api = BrokerOuterAPI(cluster3.addrs)
    assert api.register_broker_all(WHO, _payload(), timeout=5.0).all_ok
    with api, NameServerClient(cluster3.addrs, timeout=1.0) as c:
        assert c.get_route("ItTopic0")["queueDatas"]
        chosen = c.chosen
        assert chosen is not None
        cluster3.kill(cluster3.addrs.index(chosen))
        route = None
        for _ in range(2):  # the call that meets the dead connection may fail; the next moves on
            try:
                route = c.get_route("ItTopic0")
                break
            except ConnectError:
                continue
        assert route is not None and c.chosen != chosen
