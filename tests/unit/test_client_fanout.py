"""Fan-out and heartbeat against in-process fake nodes: per-node outcomes, the latch
deadline, bad replies, needRegister, and re-registration of a node that comes back."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator

import pytest

from cluster.client.errors import ConnectError, ConnectionLost, ProtocolError, RemoteError
from cluster.client.fanout import (
    BrokerIdentity,
    BrokerOuterAPI,
    RegisterBrokerResult,
    RegisterPayload,
    Status,
)
from cluster.client.heartbeat import HeartbeatLoop, NodeStats, clamp_period
from cluster.core.protocol.codes import RequestCode
from cluster.core.protocol.command import RemotingCommand
from tests.nodeproc import poll_until
from tests.unit.client_fakes import CLOSE, Delay, FakeNameServer, reply

MARGIN = 0.3
WHO = BrokerIdentity("DefaultCluster", "broker-a", "127.0.0.1:10911", 0, "127.0.0.1:10912")
DV = {"counter": 3, "timestamp": 1700000000000}
TOPICS = {"TopicA": {"topicName": "TopicA", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _payload(compressed: bool = False) -> RegisterPayload:
    return RegisterPayload.build(DV, TOPICS, [], compressed)




@pytest.fixture
def servers() -> Iterator[Callable[..., FakeNameServer]]:
    started: list[FakeNameServer] = []

    def make(handler: Callable[[RemotingCommand], object], port: int = 0) -> FakeNameServer:
        srv = FakeNameServer(handler, port).start()
        started.append(srv)
        return srv

    yield make
    for srv in started:
        srv.stop()


def _api(*addrs: str, timeout: float = 0.5) -> BrokerOuterAPI:
    return BrokerOuterAPI(list(addrs), register_timeout=timeout, connect_timeout=1.0)


def test_ok_silent_and_dead_nodes_within_the_timeout(servers: Callable[..., FakeNameServer]
                                                     ) -> None:
    good, silent = servers(lambda c: reply(ext={})), servers(lambda c: None)
    dead = f"127.0.0.1:{_free_port()}"
    with _api(good.addr, silent.addr, dead) as api:
        start = time.monotonic()
        result = api.register_broker_all(WHO, _payload(), timeout=0.5)
        assert time.monotonic() - start < 0.5 + MARGIN
    assert result.ok == [good.addr]
    assert result.timed_out == [silent.addr]
    assert result.failed == [dead]
    assert isinstance(result.outcomes[dead].error, ConnectError)
    assert result.outcomes[dead].elapsed < 0.3
    assert result.first_value() == RegisterBrokerResult(None, None, None)
    assert list(result.outcomes) == [good.addr, silent.addr, dead]


def test_latch_returns_as_soon_as_every_node_answered(servers: Callable[..., FakeNameServer]
                                                      ) -> None:
    slow = servers(lambda c: Delay(0.2, reply()))
    fast = servers(lambda c: reply())
    with _api(slow.addr, fast.addr) as api:
        result = api.register_broker_all(WHO, _payload(), timeout=3.0)
    assert result.all_ok
    assert 0.2 <= result.elapsed < 1.0


def test_bad_answers_are_reported_per_node(servers: Callable[..., FakeNameServer]) -> None:
    error = servers(lambda c: reply(1, "crc32 not match"))
    garbage = servers(lambda c: b"\x00\x00\x00\x06\x05\x00\x00\x00zz")
    closer = servers(lambda c: CLOSE)
    bad_body = servers(lambda c: reply(body=b"{not json"))
    with _api(error.addr, garbage.addr, closer.addr, bad_body.addr) as api:
        result = api.register_broker_all(WHO, _payload(), timeout=1.0)
    assert result.failed == [error.addr, garbage.addr, closer.addr, bad_body.addr]
    err = result.outcomes[error.addr].error
    assert isinstance(err, RemoteError) and (err.code, err.remark) == (1, "crc32 not match")
    assert isinstance(result.outcomes[garbage.addr].error, ProtocolError)
    assert isinstance(result.outcomes[closer.addr].error, ConnectionLost)
    assert isinstance(result.outcomes[bad_body.addr].error, ProtocolError)


def test_every_node_gets_the_same_request(servers: Callable[..., FakeNameServer]) -> None:
    nodes = [servers(lambda c: reply()) for _ in range(3)]
    with _api(*(n.addr for n in nodes)) as api:
        assert api.register_broker_all(WHO, _payload(True), timeout=2.0).all_ok
    sent = [n.requests[0] for n in nodes]
    assert all(r.code == RequestCode.REGISTER_BROKER for r in sent)
    assert len({(r.body, tuple((r.ext_fields or {}).items())) for r in sent}) == 1
    assert sent[0].field("compressed") == "true"


def test_slave_reply_carries_master_and_order_config(servers: Callable[..., FakeNameServer]
                                                     ) -> None:
    srv = servers(lambda c: reply(ext={"haServerAddr": "h:1", "masterAddr": "m:2"},
                                  body=b'{"table":{"TopicA":"broker-a:4"}}'))
    with _api(srv.addr) as api:
        value = api.register_broker_all(WHO, _payload(), timeout=2.0).first_value()
    assert value == RegisterBrokerResult("h:1", "m:2", {"TopicA": "broker-a:4"})


def test_oneway_does_not_wait_for_replies(servers: Callable[..., FakeNameServer]) -> None:
    silent = servers(lambda c: None)
    with _api(silent.addr) as api:
        result = api.register_broker_all(WHO, _payload(), oneway=True, timeout=2.0)
    assert result.outcomes[silent.addr].status is Status.SENT and result.elapsed < 0.5
    poll_until(lambda: silent.requests)
    assert silent.requests[0].is_oneway


def test_unregister_fans_out(servers: Callable[..., FakeNameServer]) -> None:
    nodes = [servers(lambda c: reply()) for _ in range(2)]
    with _api(*(n.addr for n in nodes)) as api:
        assert api.unregister_broker_all(WHO, timeout=1.0).all_ok
    assert [n.requests[0].code for n in nodes] == [RequestCode.UNREGISTER_BROKER] * 2


def _dv_reply(changed: bool, body: bytes | None = b'{"counter":3,"timestamp":1700000000000}'
              ) -> Callable[[RemotingCommand], RemotingCommand]:
    return lambda c: reply(ext={"changed": "true" if changed else "false"}, body=body)


@pytest.mark.parametrize(("handlers", "expected"), [
    ([_dv_reply(False), _dv_reply(False)], False),
    ([_dv_reply(False), _dv_reply(True)], True),
    ([_dv_reply(False), _dv_reply(False, b'{"counter":2,"timestamp":1}')], True),
    ([_dv_reply(False), lambda c: reply(1, "boom")], False),  # non-SUCCESS: unchanged
    ([_dv_reply(False), lambda c: CLOSE], True),  # unreachable: register
])
def test_need_register(servers: Callable[..., FakeNameServer],
                       handlers: list[Callable[[RemotingCommand], object]],
                       expected: bool) -> None:
    nodes = [servers(h) for h in handlers]
    with _api(*(n.addr for n in nodes)) as api:
        need, result = api.need_register(WHO, DV, timeout=1.0)
    assert need is expected
    assert nodes[0].requests[0].body == b'{"counter":3,"timestamp":1700000000000}'


def test_period_clamp() -> None:
    assert clamp_period(30.0) == 30.0
    assert clamp_period(1.0) == 10.0
    assert clamp_period(120.0) == 60.0
    assert clamp_period(0.05, 0.2, 60.0) == 0.2


def test_heartbeat_stats_name_every_node_before_the_first_reply() -> None:
    addrs = ["127.0.0.1:1", "127.0.0.1:2"]
    with _api(*addrs) as api:
        hb = HeartbeatLoop(api, WHO, _payload)
        assert list(hb.state.stats) == addrs
        assert all(s == NodeStats() for s in hb.state.stats.values())


def test_heartbeat_registers_a_node_as_soon_as_it_is_back(
        servers: Callable[..., FakeNameServer]) -> None:
    up = servers(lambda c: reply())
    port = _free_port()
    late_addr = f"127.0.0.1:{port}"
    with _api(up.addr, late_addr) as api:
        hb = HeartbeatLoop(api, WHO, _payload, period=30.0, clamp=(0.1, 60.0), timeout=0.5,
                           retry_interval=0.1)
        hb.start()
        try:
            poll_until(lambda: hb.state.stats[late_addr].failed)
            late = servers(lambda c: reply(), port)
            poll_until(lambda: late.requests, timeout=2.0)
            poll_until(lambda: hb.state.stats[late_addr].ok >= 1)
        finally:
            hb.stop()
    assert len(up.requests) == 1  # the period (30 s) has not come round again


def test_heartbeat_skips_registration_when_nothing_changed(
        servers: Callable[..., FakeNameServer]) -> None:
    def handler(c: RemotingCommand) -> RemotingCommand:
        if c.code == RequestCode.QUERY_DATA_VERSION:
            return reply(ext={"changed": "false"}, body=c.body)
        return reply()

    srv = servers(handler)
    with _api(srv.addr) as api:
        hb = HeartbeatLoop(api, WHO, _payload, period=0.1, clamp=(0.1, 60.0), timeout=0.5,
                           force_register=False, data_version_fn=lambda: DV)
        hb.start()
        try:
            poll_until(lambda: hb.state.stats[srv.addr].skipped >= 2)
        finally:
            hb.stop()
    codes = [r.code for r in srv.requests]
    assert codes[0] == RequestCode.REGISTER_BROKER  # forced at start-up
    assert codes.count(RequestCode.REGISTER_BROKER) == 1
    assert codes.count(RequestCode.QUERY_DATA_VERSION) >= 2


def test_heartbeat_requires_a_version_source_without_force() -> None:
    with _api("127.0.0.1:1") as api, pytest.raises(ValueError):
        HeartbeatLoop(api, WHO, _payload, force_register=False)
