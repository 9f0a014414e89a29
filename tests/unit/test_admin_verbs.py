"""The admin verbs against fake nodes (and a fake broker): requests sent, lines, exit codes."""

from __future__ import annotations

import json
from collections.abc import Iterator

import orjson
import pytest

from cluster.cli.main import main
from cluster.core.protocol.codes import RequestCode
from cluster.core.protocol.command import RemotingCommand
from tests.unit.client_fakes import FakeNameServer, reply

BROKER_STATS = b'{"table":{"brokerVersionDesc":"V4_9_8","putTps":"1.0 1.0 1.0"}}'


class Nodes:
    """Two fake nodes and a fake broker answering GET_BROKER_RUNTIME_INFO (28)."""

    def __init__(self) -> None:
        self.broker = FakeNameServer(self.broker_handler).start()
        self.nodes = [FakeNameServer(self.node_handler).start() for _ in range(2)]

    @property
    def both(self) -> str:
        return ";".join(n.addr for n in self.nodes)

    def broker_handler(self, c: RemotingCommand) -> RemotingCommand:
        if c.code == 215:  # DELETE_TOPIC_IN_BROKER
            return reply()
        return reply(body=BROKER_STATS) if c.code == 28 else reply(3, "unsupported")

    def node_handler(self, c: RemotingCommand) -> RemotingCommand:
        code = c.code
        if code == RequestCode.GET_BROKER_CLUSTER_INFO:
            return reply(body=orjson.dumps({
                "brokerAddrTable": {"broker-a": {"brokerName": "broker-a", "cluster": "C",
                                                 "brokerAddrs": {"0": self.broker.addr}}},
                "clusterAddrTable": {"C": ["broker-a"]}}))
        if code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            return reply(body=b'{"brokerDatas":[{"brokerName":"broker-a","cluster":"C",'
                              b'"brokerAddrs":{0:"h:1"}}],"queueDatas":[],'
                              b'"filterServerTable":{}}')
        if code == RequestCode.WIPE_WRITE_PERM_OF_BROKER:
            return reply(ext={"wipeTopicCount": "2"})
        if code == RequestCode.ADD_WRITE_PERM_OF_BROKER:
            return reply(ext={"addTopicCount": "5"})
        if code == RequestCode.GET_BROKER_MEMBER_GROUP:
            return reply(body=b'{"brokerMemberGroup":{"brokerAddrs":{0:"h:1",1:"h:2"},'
                              b'"brokerName":"broker-a","cluster":"C"}}')
        if code == RequestCode.GET_NAMESRV_CONFIG:
            extra = b"ioWorkers=1\n" if c.field("all") == "true" else b""
            return reply(body=b"listenPort=9876\n" + extra)
        return reply()

    def stop(self) -> None:
        for srv in [*self.nodes, self.broker]:
            srv.stop()


@pytest.fixture
def fakes() -> Iterator[Nodes]:
    n = Nodes()
    yield n
    n.stop()


def lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_wipe_and_add_write_perm_one_line_per_node_in_given_order(
        fakes: Nodes, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = (n.addr for n in fakes.nodes)
    assert main(["wipeWritePerm", "-n", f"{b};{a}", "-b", " broker-a "]) == 0
    assert lines(capsys) == [
        f"wipe write perm of broker[broker-a] in name server[{b}] OK, 2",
        f"wipe write perm of broker[broker-a] in name server[{a}] OK, 2"]
    assert all(n.requests[-1].field("brokerName") == "broker-a" for n in fakes.nodes)
    assert main(["addWritePerm", "-n", fakes.both, "-b", "broker-a", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(o["status"], o["value"]) for o in doc.values()] == [("ok", 5), ("ok", 5)]


def test_a_failing_node_prints_failed_and_exits_1(
        fakes: Nodes, capsys: pytest.CaptureFixture[str]) -> None:
    fakes.nodes[1].handler = lambda c: reply(1, "boom")
    a, b = (n.addr for n in fakes.nodes)
    assert main(["wipeWritePerm", "-n", fakes.both, "-b", "broker-a"]) == 1
    out = capsys.readouterr()
    assert out.out.splitlines() == [
        f"wipe write perm of broker[broker-a] in name server[{a}] OK, 2",
        f"wipe write perm of broker[broker-a] in name server[{b}] Failed"]
    assert out.err.splitlines() == [f"pynamesrv: {b}: failed: response code 1: boom"]


def test_delete_topic_on_the_masters_then_216_with_the_cluster_to_every_node(
        fakes: Nodes, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deleteTopic", "-n", fakes.both, "-t", "T1", "-c", "C"]) == 0
    assert lines(capsys) == ["delete topic [T1] from cluster [C] success.",
                             "delete topic [T1] from NameServer success."]
    deleted = fakes.broker.requests[-1]
    assert (deleted.code, deleted.field("topic")) == (215, "T1")
    for node in fakes.nodes:
        req = node.requests[-1]
        assert req.code == RequestCode.DELETE_TOPIC_IN_NAMESRV
        assert (req.field("topic"), req.field("clusterName")) == ("T1", "C")


def test_delete_topic_stops_before_the_nodes_when_a_broker_fails(
        fakes: Nodes, capsys: pytest.CaptureFixture[str]) -> None:
    fakes.broker.handler = lambda c: reply(1, "no")
    assert main(["deleteTopic", "-n", fakes.both, "-t", "T1", "-c", "C"]) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.splitlines() == [f"pynamesrv: {fakes.broker.addr}: failed: "
                                    "response code 1: no"]
    assert all(r.code != RequestCode.DELETE_TOPIC_IN_NAMESRV
               for n in fakes.nodes for r in n.requests)


def test_delete_topic_of_an_unknown_cluster_prints_mqadmins_error_inline(
        fakes: Nodes, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deleteTopic", "-n", fakes.both, "-t", "T1", "-c", "Nope"]) == 0
    assert capsys.readouterr().out == (
        "[error] Make sure the specified clusterName exists or the name server connected to "
        "is correct.delete topic [T1] from cluster [Nope] success.\n"
        "delete topic [T1] from NameServer success.\n")


def test_member_group_per_node(fakes: Nodes, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["getBrokerMemberGroup", "-n", fakes.both, "-c", "C", "-b", "broker-a"]) == 0
    out = lines(capsys)
    assert out.count("#Cluster Name     #Broker Name            #BID  #Addr") == 2
    assert out[0] == f"============{fakes.nodes[0].addr}============"
    assert out[2].split() == ["C", "broker-a", "0", "h:1"]
    req = fakes.nodes[0].requests[-1]
    assert (req.code, req.field("clusterName"), req.field("brokerName")) == (901, "C", "broker-a")


def test_topic_cluster_list_and_cluster_list_with_broker_stats(
        fakes: Nodes, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topicClusterList", "-n", fakes.nodes[0].addr, "-t", "T"]) == 0
    assert lines(capsys) == ["C"]
    assert main(["clusterList", "-n", fakes.nodes[0].addr]) == 0
    row = lines(capsys)[1].split()
    assert row[:5] == ["C", "broker-a", "0", fakes.broker.addr, "V4_9_8"]
    assert row[5:7] == ["1.00(null,nullms)", "0.00(null,nullms|N,Nms)"]  # keys not sent
    assert main(["clusterList", "-n", fakes.nodes[0].addr, "--mqadmin", "4.9"]) == 0
    assert lines(capsys)[1].split()[5:7] == ["1.00(null,nullms)", "0.00(null,nullms)"]
    assert main(["clusterList", "-n", fakes.nodes[0].addr, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["brokerRuntimeStats"][fakes.broker.addr]["brokerVersionDesc"] == "V4_9_8"


def test_get_namesrv_config_all_sends_the_flag(
        fakes: Nodes, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["getNamesrvConfig", "-n", fakes.both]) == 0
    assert "ioWorkers" not in capsys.readouterr().out
    assert fakes.nodes[0].requests[-1].field("all") is None
    assert main(["getNamesrvConfig", "-n", fakes.both, "--all"]) == 0
    assert capsys.readouterr().out.count("ioWorkers") == 2
    assert all(n.requests[-1].field("all") == "true" for n in fakes.nodes)


@pytest.mark.parametrize("argv, message", [
    (["wipeWritePerm", "-n", "nohost", "-b", "x"], "expected host:port"),
    (["wipeWritePerm", "-n", "h:1;h:1", "-b", "x"], "given twice"),
    (["wipeWritePerm", "-n", "127.0.0.1:1", "-b", "  "], "-b must not be empty"),
    (["deleteTopic", "-n", "127.0.0.1:1", "-t", "T", "-c", ""], "-c must not be empty"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], message: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


@pytest.mark.parametrize("argv, message", [
    (["clusterList", "-n", "127.0.0.1:1", "-i", "0"], "-i/--interval: '0': must be more than"),
    (["topicList", "-n", "127.0.0.1:1", "--timeout", "3x"], "--timeout: not a duration: '3x'"),
])
def test_a_bad_time_is_one_line_and_exit_2(argv: list[str], message: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_a_node_that_fails_is_named_once_on_stderr_only(
        fakes: Nodes, capsys: pytest.CaptureFixture[str]) -> None:
    """A verb without a failure line of mqadmin's: stdout keeps the other node's line only."""
    fakes.nodes[1].handler = lambda c: reply(1, "boom")
    a, b = (n.addr for n in fakes.nodes)
    assert main(["updateKvConfig", "-n", fakes.both, "-s", "ns", "-k", "k", "-v", "v"]) == 1
    out = capsys.readouterr()
    assert out.out == ""  # mqadmin's line only when every node succeeded
    assert out.err.splitlines() == [f"pynamesrv: {b}: failed: response code 1: boom"]
    assert a not in out.err


def test_an_unreachable_node_is_one_stderr_line_with_its_address_once(
        fakes: Nodes, capsys: pytest.CaptureFixture[str]) -> None:
    gone = "127.0.0.1:1"
    both = f"{fakes.nodes[0].addr};{gone}"
    assert main(["wipeWritePerm", "-n", both, "-b", "broker-a", "--timeout", "500ms"]) == 1
    out = capsys.readouterr()
    assert out.out.splitlines()[-1] == (
        f"wipe write perm of broker[broker-a] in name server[{gone}] Failed")
    (line,) = out.err.splitlines()
    assert line.startswith(f"pynamesrv: {gone}: failed: ") and line.count(gone) == 1, line


def test_missing_required_option_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["getBrokerMemberGroup", "-n", "127.0.0.1:1", "-b", "x"])
    assert exc.value.code == 2
    assert "-c/--clusterName" in capsys.readouterr().err
