"""One real node over real TCP: protocol, cleanup, overload, worker crashes, shutdown."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cluster.core.protocol.codes import (
    FLAG_ONEWAY,
    V5_3_1,
    RequestCode,
    ResponseCode,
    SerializeType,
)
from cluster.core.protocol.command import RemotingCommand
from tests.nodeproc import ROOT, Conn, NodeProcess, free_port, poll_until

pytestmark = pytest.mark.integration

BROKER = {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911",
          "clusterName": "DefaultCluster", "haServerAddr": "127.0.0.1:10912", "brokerId": "0"}


def kv_put(ns: str, key: str, value: str) -> RemotingCommand:
    return RemotingCommand(code=RequestCode.PUT_KV_CONFIG, version=409,
                           ext_fields={"namespace": ns, "key": key, "value": value})


def kv_get(ns: str, key: str, stype: SerializeType = SerializeType.JSON) -> RemotingCommand:
    return RemotingCommand(code=RequestCode.GET_KV_CONFIG, version=409, serialize_type=stype,
                           ext_fields={"namespace": ns, "key": key})


def route(topic: str) -> RemotingCommand:
    return RemotingCommand(code=RequestCode.GET_ROUTEINFO_BY_TOPIC, version=409,
                           ext_fields={"topic": topic})


def register(topic: str = "TopicTest", flag: int = 0) -> RemotingCommand:
    body = ('{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":'
            f'{{"counter":1,"timestamp":1}},"topicConfigTable":{{"{topic}":{{"order":false,"perm":6,'
            f'"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"{topic}",'
            '"topicSysFlag":0,"writeQueueNums":4}}}}').encode()
    return RemotingCommand(code=RequestCode.REGISTER_BROKER, version=409, flag=flag,
                           ext_fields={**BROKER, "compressed": "false", "bodyCrc32": "0"},
                           body=body)


def test_boot_line_names_the_address(node: NodeProcess) -> None:
    assert f"address 127.0.0.1:{node.port}" in node.boot_line


@pytest.mark.parametrize("stype", [SerializeType.JSON, SerializeType.ROCKETMQ])
def test_kv_round_trip_in_both_header_types(node: NodeProcess, stype: SerializeType) -> None:
    c = Conn(node.addr)
    put = kv_put("ns", "k", "v1")
    put.serialize_type = stype
    assert c.call(put).code == ResponseCode.SUCCESS
    reply = c.call(kv_get("ns", "k", stype))
    assert reply.serialize_type == stype
    assert (reply.code, reply.ext_fields) == (ResponseCode.SUCCESS, {"value": "v1"})


def test_unknown_code_is_answered(node: NodeProcess) -> None:
    reply = Conn(node.addr).call(RemotingCommand(code=9999, version=409))
    assert reply.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert reply.remark == " request type 9999 not supported"


def test_oneway_gets_no_reply_but_is_applied(node: NodeProcess) -> None:
    c = Conn(node.addr)
    c.send(register(flag=FLAG_ONEWAY))
    # route lookups have their own lane, so they may overtake the registration
    poll_until(lambda: c.call(route("TopicTest")).code == ResponseCode.SUCCESS,
               what="the oneway registration to be applied")
    c.sock.settimeout(0.3)
    with pytest.raises(TimeoutError):
        c.recv()  # nothing else arrives: the oneway request had no reply


def test_closing_the_broker_connection_removes_its_routes(node: NodeProcess) -> None:
    broker = Conn(node.addr)
    assert broker.call(register()).code == ResponseCode.SUCCESS
    client = Conn(node.addr)
    assert client.call(route("TopicTest")).code == ResponseCode.SUCCESS
    broker.close()
    poll_until(lambda: client.call(route("TopicTest")).code == ResponseCode.TOPIC_NOT_EXIST,
               what="routes of the closed broker connection to disappear")


@pytest.mark.parametrize("garbage", [
    struct.pack(">i", 2**31 - 1),                        # frame over the limit
    struct.pack(">iI", 8, (7 << 24) | 4) + b"xxxx",      # unknown serialize type
    struct.pack(">iI", 8, 100) + b"xxxx",                # header longer than the frame
    struct.pack(">iI", 12, 8) + b"not json",             # header that is not JSON
])
def test_malformed_frame_closes_only_that_connection(node: NodeProcess, garbage: bytes) -> None:
    bad, good = Conn(node.addr), Conn(node.addr)
    bad.send_raw(garbage)
    assert bad.is_closed_by_peer()
    assert good.call(kv_get("ns", "missing")).code == ResponseCode.QUERY_NOT_FOUND


@pytest.mark.serial  # a burst outruns the business worker only on a machine of its own
def test_overload_answers_system_busy_and_answers_everything(tmp_path: Path) -> None:
    n = NodeProcess(tmp_path / "busy", props={"ioMaxPending": "4", "businessWindow": "1",
                                               "businessWorkers": "1"}).start()
    try:
        c = Conn(n.addr)
        sent = [c.send(route("T")) for _ in range(500)]
        replies = [c.recv() for _ in sent]
        assert sorted(r.opaque for r in replies) == sorted(sent)
        codes = {r.code for r in replies}
        assert ResponseCode.SYSTEM_BUSY in codes
        assert codes <= {ResponseCode.SYSTEM_BUSY, ResponseCode.TOPIC_NOT_EXIST}
    finally:
        n.stop()


def test_business_worker_sigkill_while_requests_flow(node: NodeProcess) -> None:
    c = Conn(node.addr)
    assert c.call(kv_put("ns", "acked", "yes")).code == ResponseCode.SUCCESS
    victim = node.workers("biz")[0]
    sent = [c.send(route("T")) for _ in range(200)]
    os.kill(victim.pid, signal.SIGKILL)
    sent += [c.send(route("T")) for _ in range(200)]
    replies = [c.recv() for _ in sent]
    assert sorted(r.opaque for r in replies) == sorted(sent)
    poll_until(lambda: len(node.workers("biz")) == 2 and victim.pid not in
               [p.pid for p in node.workers("biz")], what="business worker restart")
    assert c.call(kv_get("ns", "acked")).ext_fields == {"value": "yes"}


def test_io_worker_sigkill_cleans_up_its_brokers(node: NodeProcess) -> None:
    broker = Conn(node.addr)
    assert broker.call(register()).code == ResponseCode.SUCCESS
    victim = next(p for p in node.workers("io") if p.name() == "pns-io-0")
    os.kill(victim.pid, signal.SIGKILL)

    def route_gone() -> bool:
        try:
            return Conn(node.addr).call(route("TopicTest")).code == ResponseCode.TOPIC_NOT_EXIST
        except OSError:
            return False

    poll_until(route_gone, timeout=15, what="new I/O worker serving without the dead broker")


def test_sigterm_exits_zero_and_keeps_acknowledged_kv(tmp_path: Path) -> None:
    n = NodeProcess(tmp_path / "persist").start()
    try:
        assert Conn(n.addr).call(kv_put("ns", "k", "durable")).code == ResponseCode.SUCCESS
        kids = n.children()
        assert n.terminate() == 0
        poll_until(lambda: not [k for k in kids if k.is_running() and k.status() != "zombie"],
                   timeout=15, what="every process of the node to exit")
    finally:
        n.stop()
    again = NodeProcess(tmp_path / "persist", port=free_port()).start()
    try:
        assert Conn(again.addr).call(kv_get("ns", "k")).ext_fields == {"value": "durable"}
    finally:
        again.stop()


def test_sigterm_to_the_whole_group_answers_what_was_read_then_closes(tmp_path: Path) -> None:
    """A supervisor (or systemd) signals every process of a node at once: the business
    workers still answer what the I/O workers had read, nothing more is read, and the
    clients see their connections close as soon as that is done, not at the drain bound."""
    n = NodeProcess(tmp_path / "group", props={"shutdownDrainMillis": "60000"}).start()
    try:
        assert n.proc is not None
        writer, reader = Conn(n.addr, timeout=20), Conn(n.addr, timeout=20)
        sent = [writer.send(kv_put("ns", f"k{i}", "v")) for i in range(5000)]
        first = writer.recv()
        os.killpg(n.proc.pid, signal.SIGTERM)
        replies = [first]
        with pytest.raises(ConnectionError):
            while True:
                replies.append(writer.recv())
        assert {r.code for r in replies} == {ResponseCode.SUCCESS}  # none lost on the way
        assert len({r.opaque for r in replies}) == len(replies) and \
            {r.opaque for r in replies} <= set(sent)
        with pytest.raises(ConnectionError):  # a client that goes on asking is closed
            while True:
                reader.call(route("T"))
        assert n.proc.wait(timeout=20) == 0
    finally:
        n.stop()
    again = NodeProcess(tmp_path / "group", port=free_port()).start()
    try:
        c = Conn(again.addr)
        for r in replies:
            key = f"k{sent.index(r.opaque)}"
            assert c.call(kv_get("ns", key)).ext_fields == {"value": "v"}, key
    finally:
        again.stop()


def test_during_the_go_away_window_older_clients_are_served_after_a_group_sigterm(
        tmp_path: Path) -> None:
    """5.x graceful shutdown under a supervisor's SIGTERM (every process of the node at
    once): for ``shutdownWaitTimeSeconds`` a client newer than 5.3.1 is told to go away
    and an older one is served as usual, by business workers that are still there."""
    n = NodeProcess(tmp_path / "go-away", props={"enableShutdownGracefully": "true",
                                                 "shutdownWaitTimeSeconds": "2"}).start()
    try:
        assert n.proc is not None
        old, new = Conn(n.addr, timeout=10), Conn(n.addr, timeout=10)
        assert old.call(kv_put("ns", "before", "v")).code == ResponseCode.SUCCESS
        os.killpg(n.proc.pid, signal.SIGTERM)
        began = time.monotonic()
        poll_until(lambda: new.call(RemotingCommand(
            code=RequestCode.GET_KV_CONFIG, version=V5_3_1 + 1,
            ext_fields={"namespace": "ns", "key": "before"})).code == ResponseCode.GO_AWAY,
            timeout=10, what="GO_AWAY for a 5.x client")
        served = []
        with pytest.raises(ConnectionError):
            while True:
                assert old.call(kv_put("ns", f"k{len(served)}", "v")).code == \
                    ResponseCode.SUCCESS
                served.append(time.monotonic() - began)
        assert served and served[-1] >= 1.0, served  # answered well into the 2 s window
        assert n.proc.wait(timeout=20) == 0
    finally:
        n.stop()


def _run_node(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "worker.controller", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)


def test_busy_port_exits_2_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        res = _run_node("--port", str(port), "--data-dir", str(tmp_path))
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"pynamesrv node: error: port {port} on 127.0.0.1 is already in use"]


def test_bad_config_exits_2_naming_the_key(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.properties"
    cfg.write_text("ioWorkers=many\n")
    res = _run_node("--port", str(free_port()), "--data-dir", str(tmp_path), "--config", str(cfg))
    assert res.returncode == 2
    assert "key ioWorkers" in res.stderr and "Traceback" not in res.stderr


def test_stopped_business_worker_is_bypassed_and_never_answers_twice(tmp_path: Path) -> None:
    n = NodeProcess(tmp_path / "stop", props={"businessWorkers": "2"}).start()
    try:
        c = Conn(n.addr, timeout=10)
        victim = n.workers("biz")[0]
        os.kill(victim.pid, signal.SIGSTOP)
        try:
            sent = [c.send(route("T")) for _ in range(300)]
            replies = [c.recv() for _ in sent]
        finally:
            os.kill(victim.pid, signal.SIGCONT)
        assert sorted(r.opaque for r in replies) == sorted(sent)
        assert {r.code for r in replies} <= {ResponseCode.TOPIC_NOT_EXIST,
                                             ResponseCode.SYSTEM_ERROR}
        after = c.call(kv_get("ns", "missing"))  # a duplicate would arrive before this
        assert after.code == ResponseCode.QUERY_NOT_FOUND
    finally:
        n.stop()


def test_idle_connection_is_closed_and_its_broker_removed(tmp_path: Path) -> None:
    n = NodeProcess(tmp_path / "idle", props={"serverChannelMaxIdleTimeSeconds": "1"}).start()
    try:
        broker = Conn(n.addr)
        assert broker.call(register()).code == ResponseCode.SUCCESS
        assert broker.is_closed_by_peer(timeout=10)

        def gone() -> bool:
            return Conn(n.addr).call(route("TopicTest")).code == ResponseCode.TOPIC_NOT_EXIST

        poll_until(gone, what="routes of the idle broker to disappear")
    finally:
        n.stop()


def test_workers_killed_under_load_never_abort_a_peer(tmp_path: Path) -> None:
    """SIGKILL of I/O and business workers while requests stream: the survivors read no
    message half way (no libzmq abort), and every request is answered or its connection
    closed."""
    node = NodeProcess(tmp_path / "n").start()
    stop = threading.Event()
    answered = [0]

    def load() -> None:
        while not stop.is_set():
            try:
                conn = Conn(node.addr, timeout=10)
                for _ in range(50):
                    sent = [conn.send(route(f"T{i}")) for i in range(20)]
                    assert sorted(conn.recv().opaque for _ in sent) == sorted(sent)
                    answered[0] += len(sent)
                conn.close()
            except (ConnectionError, OSError):
                continue  # the I/O worker holding it was killed

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    try:
        for kind in ("io", "biz", "io", "biz", "io", "biz"):
            victim = node.workers(kind)[0]
            before = answered[0]
            victim.kill()
            poll_until(lambda v=victim, k=kind, b=before:
                       v.pid not in {p.pid for p in node.workers(k)}
                       and len(node.workers(k)) >= 1 and answered[0] > b + 100,
                       timeout=20, what=f"{kind} worker replaced and requests answered")
    finally:
        stop.set()
        thread.join(15)
        err = node.stop()
    assert "Assertion failed" not in err and "Traceback" not in err, err[-3000:]
