"""NameServerClient against fake nodes: sticky selection, failover, the exception
tree, reply decoding, and writes that fan out to every node."""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable, Iterator

import pytest

from cluster.client.errors import CallTimeout, ConnectError, ProtocolError, RemoteError
from cluster.client.fanout import Status
from cluster.client.nsclient import NameServerClient
from cluster.core.protocol.codes import RequestCode
from cluster.core.protocol.command import RemotingCommand
from tests.unit.client_fakes import FakeNameServer, reply

CLUSTER_INFO = (b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911",'
                b'1:"127.0.0.1:10931"},"brokerName":"broker-a","cluster":"DefaultCluster"}},'
                b'"clusterAddrTable":{"DefaultCluster":["broker-a"]}}')
ROUTE = (b'{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a",'
         b'"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":'
         b'"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}')
NOT_FOUND = ("No topic route info in name server for the topic: T\n"
             "See http://rocketmq.apache.org/docs/faq/ for further details.")


def namesrv(c: RemotingCommand) -> RemotingCommand:
    """A tiny NameServer: enough answers for the client's reads and writes."""
    code = c.code
    if code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
        return reply(body=ROUTE) if c.field("topic") == "TopicTest" else reply(17, NOT_FOUND)
    if code == RequestCode.GET_BROKER_CLUSTER_INFO:
        return reply(body=CLUSTER_INFO)
    if code == RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER:
        return reply(body=b'{"topicList":["TopicTest","TBW102"]}')
    if code == RequestCode.GET_KV_CONFIG:
        if c.field("key") == "k1":
            return reply(ext={"value": "v1"})
        return reply(22, f"No config item, Namespace: {c.field('namespace')} Key: "
                         f"{c.field('key')}", ext={})
    if code == RequestCode.GET_KVLIST_BY_NAMESPACE:
        return reply(body=b'{"table":{"k1":"v1"}}')
    if code == RequestCode.GET_NAMESRV_CONFIG:
        return reply(body=b"listenPort=9876\norderMessageEnable=false\n")
    return reply()


@pytest.fixture
def servers() -> Iterator[Callable[..., FakeNameServer]]:
    started: list[FakeNameServer] = []

    def make(handler: Callable[[RemotingCommand], object] = namesrv) -> FakeNameServer:
        srv = FakeNameServer(handler).start()
        started.append(srv)
        return srv

    yield make
    for srv in started:
        srv.stop()


def _dead_addr() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def _client(*addrs: str, timeout: float = 1.0) -> NameServerClient:
    return NameServerClient(list(addrs), timeout=timeout, rng=random.Random(7))


def test_reads_stick_to_one_node(servers: Callable[..., FakeNameServer]) -> None:
    nodes = [servers(), servers(), servers()]
    with _client(*(n.addr for n in nodes)) as c:
        for _ in range(5):
            c.get_cluster_info()
        chosen = c.chosen
    assert sorted(len(n.requests) for n in nodes) == [0, 0, 5]
    assert chosen in [n.addr for n in nodes if n.requests]


def test_dead_nodes_are_skipped_within_one_call(servers: Callable[..., FakeNameServer]) -> None:
    live = servers()
    with _client(_dead_addr(), _dead_addr(), live.addr) as c:
        assert c.get_all_topics()["topicList"] == ["TopicTest", "TBW102"]
        assert c.chosen == live.addr


def test_a_timeout_moves_the_next_call_to_another_node(
        servers: Callable[..., FakeNameServer]) -> None:
    silent, live = servers(lambda c: None), servers()
    with _client(silent.addr, live.addr, timeout=0.3) as c:
        c._index = c.addrs.index(silent.addr) - 1  # make the silent node the first choice
        start = time.monotonic()
        with pytest.raises(CallTimeout):
            c.get_cluster_info()
        assert time.monotonic() - start < 0.3 + 0.3
        assert c.get_cluster_info()["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}
        assert c.chosen == live.addr


def test_no_reachable_node_is_a_connect_error() -> None:
    with _client(_dead_addr(), _dead_addr()) as c, pytest.raises(ConnectError) as info:
        c.get_cluster_info()
    assert "no NameServer reachable" in str(info.value)


def test_route_and_missing_route(servers: Callable[..., FakeNameServer]) -> None:
    with _client(servers().addr) as c:
        route = c.get_route("TopicTest")
        assert route["brokerDatas"][0]["brokerAddrs"] == {0: "127.0.0.1:10911"}
        with pytest.raises(RemoteError) as info:
            c.get_route("T")
    assert info.value.code == 17 and info.value.remark == NOT_FOUND


def test_cluster_info_with_bare_integer_keys(servers: Callable[..., FakeNameServer]) -> None:
    with _client(servers().addr) as c:
        info = c.get_cluster_info()
    assert info["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {0: "127.0.0.1:10911",
                                                                  1: "127.0.0.1:10931"}


def test_garbage_body_is_a_protocol_error(servers: Callable[..., FakeNameServer]) -> None:
    with _client(servers(lambda c: reply(body=b"[1,2")).addr) as c, \
            pytest.raises(ProtocolError):
        c.get_cluster_info()


def test_kv_reads(servers: Callable[..., FakeNameServer]) -> None:
    with _client(servers().addr) as c:
        assert c.get_kv("ns", "k1") == "v1"
        assert c.get_kv("ns", "missing") is None
        assert c.get_kv_list("ns") == {"k1": "v1"}


def test_kv_writes_and_config_fan_out(servers: Callable[..., FakeNameServer]) -> None:
    nodes = [servers(), servers()]
    dead = _dead_addr()
    with _client(*(n.addr for n in nodes), dead) as c:
        put = c.put_kv("ns", "k", "v")
        config = c.get_namesrv_config()
        update = c.update_namesrv_config({"orderMessageEnable": "true"})
    assert sorted(put.ok) == sorted(n.addr for n in nodes) and put.failed == [dead]
    assert config.outcomes[nodes[0].addr].value["listenPort"] == "9876"
    assert update.outcomes[dead].status is Status.FAILED
    sent = [r for r in nodes[0].requests if r.code == RequestCode.UPDATE_NAMESRV_CONFIG]
    assert sent[0].body == b"orderMessageEnable=true\n"
    puts = [r for r in nodes[1].requests if r.code == RequestCode.PUT_KV_CONFIG]
    assert puts[0].ext_fields == {"namespace": "ns", "key": "k", "value": "v"}


def test_update_addrs_keeps_a_valid_choice(servers: Callable[..., FakeNameServer]) -> None:
    a, b = servers(), servers()
    with _client(a.addr, b.addr) as c:
        c.get_cluster_info()
        first = c.chosen
        c.update_addrs([b.addr, a.addr])
        assert c.chosen == first
        other = a.addr if first == b.addr else b.addr
        c.update_addrs(other)
        assert c.chosen is None
        c.get_cluster_info()
        assert c.chosen == other
