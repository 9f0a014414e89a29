"""Route lookups answered from the I/O worker's templates are never stale: each read
reflects every write acknowledged before the read was sent, on any connection; so are
the first lookups of topics answered from the template of a topic of the same route."""

from __future__ import annotations

import dataclasses
import random
import threading
import time
from pathlib import Path

import orjson
import pytest

from cluster.core.protocol.codes import RequestCode, ResponseCode, SerializeType
from cluster.core.protocol.command import RemotingCommand
from tests.integration.test_metrics import MetricsNode, value
from tests.nodeproc import Conn, NodeProcess, free_port

pytestmark = pytest.mark.integration

TOPIC = "FreshTopic"
READERS = 6
RUN_S = 6.0
BROKER = {"brokerName": "broker-f", "brokerAddr": "127.0.0.1:10911",
          "clusterName": "C", "haServerAddr": "127.0.0.1:10912", "brokerId": "0",
          "compressed": "false", "bodyCrc32": "0"}


def register(queues: int, topics: tuple[str, ...] = (TOPIC,)) -> RemotingCommand:
    """broker-f's table with ``queues`` write queues for each of ``topics``, data version
    ``queues``."""
    table = {t: {"order": False, "perm": 6, "readQueueNums": 4, "topicFilterType":
                 "SINGLE_TAG", "topicName": t, "topicSysFlag": 0, "writeQueueNums": queues}
             for t in topics}
    body = orjson.dumps({"filterServerList": [], "topicConfigSerializeWrapper": {
        "dataVersion": {"counter": queues, "timestamp": queues}, "topicConfigTable": table}})
    return RemotingCommand(code=RequestCode.REGISTER_BROKER, version=409, ext_fields=BROKER,
                           body=body)


def lookup(stype: SerializeType, topic: str = TOPIC) -> RemotingCommand:
    return RemotingCommand(code=RequestCode.GET_ROUTEINFO_BY_TOPIC, version=409,
                           ext_fields={"topic": topic}, serialize_type=stype)


def queues_in(reply: RemotingCommand) -> int:
    assert reply.code == ResponseCode.SUCCESS, (reply.code, reply.remark)
    return int(orjson.loads(reply.body or b"{}")["queueDatas"][0]["writeQueueNums"])


def race(addr: str, writer: Conn, topics: tuple[str, ...]) -> int:
    """READERS connections look up `topics` at random while `writer` (the broker's
    connection: closing it would remove the broker) rewrites their queues for RUN_S: no
    read may be older than a write acknowledged before it was sent. The last queue count
    written."""
    assert writer.call(register(1, topics)).code == ResponseCode.SUCCESS
    acked = [1]  # the newest write acknowledged so far
    stale: list[str] = []
    reads = [0] * READERS
    stop = threading.Event()

    def read(index: int) -> None:
        conn, rng = Conn(addr), random.Random(index)
        stype = SerializeType.ROCKETMQ if index % 2 else SerializeType.JSON
        while not stop.is_set():
            floor, topic = acked[0], rng.choice(topics)  # taken before the request is sent
            try:
                seen = queues_in(conn.call(lookup(stype, topic)))
            except AssertionError as exc:  # not a route: the test fails, not only the thread
                stale.append(f"reader {index} asked for {topic}: {exc}")
                break
            if seen < floor:
                stale.append(f"reader {index} saw {seen} for {topic} after write {floor} "
                             "was acknowledged")
            reads[index] += 1
        conn.close()

    threads = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(READERS)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + RUN_S
    queues = 1
    while time.monotonic() < deadline:
        queues += 1
        assert writer.call(register(queues, topics)).code == ResponseCode.SUCCESS
        acked[0] = queues
    stop.set()
    for t in threads:
        t.join(10)
    assert not stale, stale[:5]
    assert queues > 20 and min(reads) > 20, (queues, reads)
    return queues


def test_no_read_is_older_than_an_acknowledged_write(node: NodeProcess) -> None:
    writer = Conn(node.addr)
    queues = race(node.addr, writer, (TOPIC,))
    assert queues_in(Conn(node.addr).call(lookup(SerializeType.JSON))) == queues


def test_first_lookups_answered_from_a_sibling_topic_are_never_stale(tmp_path: Path) -> None:
    """Forty topics of equal queue datas, rewritten together: most first lookups after each
    write are answered from the template of one of the others."""
    port = free_port()
    node = NodeProcess(tmp_path / "n", props={"metricsPort": str(port)}).start()
    try:
        topics = tuple(f"Sib{i}" for i in range(40))
        writer = Conn(node.addr)
        queues = race(node.addr, writer, topics)
        reader = Conn(node.addr)
        final = [reader.call(lookup(SerializeType.JSON, t)) for t in topics]
        assert len({r.body for r in final}) == 1 and queues_in(final[0]) == queues
        metrics = MetricsNode(node, f"http://127.0.0.1:{port}/metrics")
        metrics.scrape_until(lambda m: value(m, "pynamesrv_route_template_shared_total") > 0,
                             "first lookups answered from a sibling's template")
    finally:
        node.stop()


def test_absent_topics_first_lookups_name_each_its_own_and_follow_a_registration(
        tmp_path: Path) -> None:
    """Lookups of topics the node does not hold, answered in the I/O worker from another
    absent topic's reply once one was learned: each names its own topic; a topic
    registered since is found."""
    port = free_port()
    node = NodeProcess(tmp_path / "n", props={"metricsPort": str(port)}).start()
    try:
        names = [f"Nope-{i:02d}" for i in range(40)] + ["Nope-longer-1", "N-2"]
        reader = Conn(node.addr)
        alike = set()  # what the replies hold besides their opaques and remarks
        for topic in names:
            reply = reader.call(lookup(SerializeType.JSON, topic))
            assert reply.code == ResponseCode.TOPIC_NOT_EXIST, (topic, reply.code)
            assert (reply.remark or "").split("\n")[0] == \
                f"No topic route info in name server for the topic: {topic}"
            alike.add(orjson.dumps(dataclasses.replace(
                reply, opaque=0, remark=(reply.remark or "").replace(topic, "<topic>"))))
        assert len(alike) == 1
        metrics = MetricsNode(node, f"http://127.0.0.1:{port}/metrics")
        metrics.scrape_until(lambda m: value(m, "pynamesrv_route_template_shared_total") > 0,
                             "first lookups of absent topics answered from another's reply")
        writer = Conn(node.addr)
        assert writer.call(register(3, ("Nope-07",))).code == ResponseCode.SUCCESS
        assert queues_in(reader.call(lookup(SerializeType.JSON, "Nope-07"))) == 3
        assert reader.call(lookup(SerializeType.JSON, "Nope-08")).code == \
            ResponseCode.TOPIC_NOT_EXIST
    finally:
        node.stop()
