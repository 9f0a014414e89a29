"""The client's CLI commands against fake nodes: admin output, exit codes, broker-sim."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator

import pytest

from cluster.client import cli
from cluster.core.protocol.codes import RequestCode
from cluster.core.protocol.lenient import loads_lenient
from tests.unit.client_fakes import FakeNameServer
from tests.unit.test_client_nsclient import namesrv


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="pynamesrv")
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return int(args.func(args))


@pytest.fixture
def nodes() -> Iterator[list[FakeNameServer]]:
    started = [FakeNameServer(namesrv).start() for _ in range(2)]
    yield started
    for srv in started:
        srv.stop()


def test_cluster_list(nodes: list[FakeNameServer], capsys: pytest.CaptureFixture[str]) -> None:
    assert run("clusterList", "-n", nodes[0].addr, "--no-broker-stats") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("#Cluster Name")
    assert lines[1].split()[:4] == ["DefaultCluster", "broker-a", "0", "127.0.0.1:10911"]
    assert lines[2].split()[:4] == ["DefaultCluster", "broker-a", "1", "127.0.0.1:10931"]


def test_topic_route_json_and_missing(nodes: list[FakeNameServer],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert run("topicRoute", "-n", nodes[0].addr, "-t", "TopicTest", "--json") == 0
    route = json.loads(capsys.readouterr().out)
    assert route["queueDatas"][0]["brokerName"] == "broker-a"
    assert run("topicRoute", "-n", nodes[0].addr, "-t", "TopicTest") == 0
    text = capsys.readouterr().out  # fastjson's pretty form, as mqadmin prints it
    assert text.startswith('{\n\t"brokerDatas":[\n\t\t{\n\t\t\t"brokerAddrs":{\n')
    assert loads_lenient(text)["queueDatas"][0]["brokerName"] == "broker-a"
    assert run("topicRoute", "-n", nodes[0].addr, "-t", "Nope") == 1
    assert "response code 17" in capsys.readouterr().err


def test_kv_commands(nodes: list[FakeNameServer], capsys: pytest.CaptureFixture[str]) -> None:
    both = ";".join(n.addr for n in nodes)
    assert run("getKvConfig", "-n", both, "-s", "ns", "-k", "k1") == 0
    assert capsys.readouterr().out.strip() == "v1"
    assert run("getKvConfig", "-n", both, "-s", "ns", "-k", "zz") == 1
    capsys.readouterr()
    assert run("updateKvConfig", "-n", both, "-s", "ns", "-k", "k", "-v", "v", "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert {o["status"] for o in out.values()} == {"ok"}
    assert all(any(r.code == RequestCode.PUT_KV_CONFIG for r in n.requests) for n in nodes)


def test_namesrv_config(nodes: list[FakeNameServer], capsys: pytest.CaptureFixture[str]) -> None:
    both = ";".join(n.addr for n in nodes)
    assert run("getNamesrvConfig", "-n", both, "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert {o["value"]["listenPort"] for o in out.values()} == {"9876"}
    assert run("updateNamesrvConfig", "-n", both, "-k", "orderMessageEnable", "-v", "true") == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"update name server config success![{nodes[0].addr}, {nodes[1].addr}]",
                   "orderMessageEnable : true"]
    assert all(n.requests[-1].code == RequestCode.UPDATE_NAMESRV_CONFIG for n in nodes)


def test_unreachable_node_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("topicList", "-n", "127.0.0.1:1", "--timeout", "0.5") == 1
    assert "connect" in capsys.readouterr().err


def test_broker_sim_registers_and_unregisters(nodes: list[FakeNameServer],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    both = ";".join(n.addr for n in nodes)
    rc = run("broker-sim", "-n", both, "-b", "2", "--slaves", "1", "-t", "3",
             "--period", "0.2", "--min-period", "0.1", "--duration", "0.8",
             "--report-every", "0.3", "--churn-every", "0.25", "--json", "--seed", "1")
    assert rc == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    final = lines[-1]
    assert final["registrations"] >= 8
    assert set(final["nodes"]) == {n.addr for n in nodes}
    assert any("event" in x for x in lines)
    for node in nodes:
        registered = {r.field("brokerAddr") for r in node.requests
                      if r.code == RequestCode.REGISTER_BROKER}
        gone = {r.field("brokerAddr") for r in node.requests
                if r.code == RequestCode.UNREGISTER_BROKER}
        assert len(registered) == 4 and gone == registered
