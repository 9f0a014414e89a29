"""Admin verbs against live nodes; and the same verbs through the real mqadmin 4.9.8.

The ``java`` test registers a real Java broker to two pynamesrv nodes and runs
each verb with ``mqadmin`` and with ``pynamesrv``: the lines mqadmin prints
must appear in pynamesrv's output (numbers that legitimately differ between
two calls, such as TPS and hours, normalised).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cluster.cli.main import main
from cluster.client.errors import RemoteError
from cluster.client.nsclient import NameServerClient
from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from tests.integration.test_audit_e2e import BROKER, TOPIC_BODY
from tests.nodeproc import Conn, NodeProcess, poll_until, start_all, stop_all

pytestmark = pytest.mark.integration



@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[list[NodeProcess]]:
    started = start_all(NodeProcess(tmp_path / name, name=name) for name in ("n1", "n2"))
    try:
        yield started
    finally:
        stop_all(n for n in started if n.proc is not None and n.proc.poll() is None)


def ns_addr(nodes: list[NodeProcess]) -> str:
    return ";".join(n.addr for n in nodes)


def out_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().out.splitlines()


def perms(client: NameServerClient, nodes: list[NodeProcess], topic: str) -> list[int]:
    return [client.get_route(topic, addr=n.addr)["queueDatas"][0]["perm"] for n in nodes]


def test_verbs_change_every_node(nodes: list[NodeProcess],
                                 capsys: pytest.CaptureFixture[str]) -> None:
    conns = [Conn(n.addr) for n in nodes]  # kept open: a closed one unregisters the broker
    client = NameServerClient(ns_addr(nodes))
    try:
        register = RemotingCommand(code=RequestCode.REGISTER_BROKER, version=409,
                                   ext_fields=dict(BROKER), body=TOPIC_BODY)
        assert all(c.call(register).code == ResponseCode.SUCCESS for c in conns)
        ns = ns_addr(nodes)

        assert main(["wipeWritePerm", "-n", ns, "-b", "broker-a"]) == 0
        assert out_lines(capsys) == [
            f"wipe write perm of broker[broker-a] in name server[{n.addr}] OK, 1" for n in nodes]
        assert perms(client, nodes, "TopicTest") == [4, 4]
        assert main(["addWritePerm", "-n", ns, "-b", "broker-a"]) == 0
        assert out_lines(capsys)[1].endswith("OK, 1")
        assert perms(client, nodes, "TopicTest") == [6, 6]

        assert main(["topicClusterList", "-n", ns, "-t", "TopicTest"]) == 0
        assert out_lines(capsys) == ["DefaultCluster"]
        assert main(["getBrokerMemberGroup", "-n", ns, "-c", "DefaultCluster",
                     "-b", "broker-a"]) == 0
        lines = out_lines(capsys)
        assert lines.count(f"{'DefaultCluster':<16}  {'broker-a':<22}  {0:<4}  127.0.0.1:10911") \
            == 2
        assert main(["clusterList", "-n", ns, "--no-broker-stats"]) == 0
        assert out_lines(capsys)[1].split()[:4] == ["DefaultCluster", "broker-a", "0",
                                                    "127.0.0.1:10911"]

        assert main(["deleteTopic", "-n", ns, "-t", "TopicTest", "-c", "DefaultCluster"]) == 0
        assert out_lines(capsys)[-1] == "delete topic [TopicTest] from NameServer success."
        for n in nodes:
            with pytest.raises(RemoteError) as exc:
                client.get_route("TopicTest", addr=n.addr)
            assert exc.value.code == ResponseCode.TOPIC_NOT_EXIST
    finally:
        client.close()
        for c in conns:
            c.close()


def test_a_stopped_node_is_reported_and_the_others_still_change(
        nodes: list[NodeProcess], capsys: pytest.CaptureFixture[str]) -> None:
    nodes[1].stop()
    ns = ns_addr(nodes)
    assert main(["updateKvConfig", "-n", ns, "-s", "ns", "-k", "k", "-v", "v",
                 "--timeout", "2"]) == 1
    out = capsys.readouterr()
    assert out.out.splitlines() == [f"{nodes[0].addr} update kv config success"]
    failed = out.err.splitlines()  # one line per failed node, its address once
    assert len(failed) == 1 and failed[0].startswith(f"pynamesrv: {nodes[1].addr}: failed"), \
        out.err
    assert failed[0].count(nodes[1].addr) == 1, out.err
    assert main(["getKvConfig", "-n", nodes[0].addr, "-s", "ns", "-k", "k"]) == 0
    assert out_lines(capsys) == ["v"]
    assert main(["getNamesrvConfig", "-n", nodes[0].addr, "--all"]) == 0
    lines = out_lines(capsys)
    assert lines[0] == f"============{nodes[0].addr}============"
    assert any(line.startswith("listenPort ") for line in lines)


# ------------------------------------------------------- against mqadmin

_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def normalised(lines: list[str]) -> list[str]:
    """Numbers become N, so TPS, hours and disk ratios taken moments apart compare equal."""
    return sorted(_NUMBER.sub("N", line) for line in lines if line.strip())


@pytest.mark.java
def test_same_verbs_as_mqadmin_against_pynamesrv_with_a_java_broker(
        nodes: list[NodeProcess], tmp_path: Path, port_factory: Callable[[], int],
        capsys: pytest.CaptureFixture[str]) -> None:
    from tests.javaproc import JavaBroker, java_missing, mqadmin

    if why := java_missing():
        pytest.skip(why)
    ns = ns_addr(nodes)
    port = poll_until(lambda: _broker_port(port_factory), what="ports P, P-2, P+1 for a broker")
    broker = JavaBroker(tmp_path / "broker", ns, "broker-a", "DefaultCluster", 0, port)
    client = NameServerClient(ns)
    home = tmp_path / "mqadmin-home"
    try:
        broker.start()
        runtime = RemotingCommand(code=28, version=409)
        poll_until(lambda: client.invoke(runtime, addr=broker.addr).code == 0, timeout=90,
                   interval=1.0, what="the broker's runtime stats")
        made = mqadmin("updateTopic", "-n", ns, "-b", broker.addr, "-t", "AdminT", home=home)
        assert made.returncode == 0, made.stdout + made.stderr
        poll_until(lambda: all(_has_route(client, n.addr, "AdminT") for n in nodes),
                   timeout=30, what="AdminT on every node")

        def both(*argv: str) -> tuple[list[str], list[str]]:
            java = mqadmin(*argv, "-n", ns, home=home)
            assert java.returncode == 0, java.stdout + java.stderr
            assert main([*argv, "-n", ns]) == 0
            return java.stdout.splitlines(), out_lines(capsys)

        for argv in (("clusterList",), ("clusterList", "-m"), ("topicClusterList", "-t", "AdminT"),
                     ("wipeWritePerm", "-b", "broker-a"), ("addWritePerm", "-b", "broker-a"),
                     ("getNamesrvConfig",)):
            java, ours = both(*argv)
            assert normalised(java) == normalised(ours), (argv, java, ours)
        for argv in (("updateKvConfig", "-s", "ns", "-k", "k", "-v", "v"),
                     ("deleteKvConfig", "-s", "ns", "-k", "k"),
                     ("updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "false")):
            java, ours = both(*argv)
            assert java and java == ours[-len(java):], (argv, java, ours)
        java = mqadmin("deleteTopic", "-n", ns, "-t", "AdminT", "-c", "DefaultCluster",
                       home=home).stdout.splitlines()
        assert main(["deleteTopic", "-n", ns, "-t", "AdminT", "-c", "DefaultCluster"]) == 0
        assert java[-1] == out_lines(capsys)[-1] == \
            "delete topic [AdminT] from NameServer success."
    finally:
        client.close()
        broker.stop()


def _broker_port(take: Callable[[], int]) -> int:
    """A port P with P-2 and P+1 free too (the broker's HA and fast ports), else 0."""
    port = take()
    for other in (port - 2, port + 1):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", other))
            except OSError:
                return 0
    return port


def _has_route(client: NameServerClient, addr: str, topic: str) -> bool:
    try:
        return bool(client.get_route(topic, addr=addr)["queueDatas"])
    except RemoteError:
        return False
