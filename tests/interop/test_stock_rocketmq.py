"""Stock Apache RocketMQ (broker, mqadmin, Java client; 5.x proxy; the Go client) against
pynamesrv, for the 4.9 line and the newest 5.x release.

pynamesrv runs through its installed ``pynamesrv`` entry point, once as a supervised
cluster (``pynamesrv up``) and once as three standalone nodes started from a shell that
exits at once and then left idle (see ``harness``). Every test runs against both, with
each release.
Tests in this module run in file order per mode and build on each other's steps
(the topic, the KV entry, broker-b's stop at the end).
"""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest

from cluster.peers import gobuild
from tests.interop.conftest import (
    GO_TOPIC,
    GRPC_TOPIC,
    KV_KEY,
    KV_NAMESPACE,
    KV_VALUE,
    MESSAGES,
    TOPIC,
    client_log,
)
from tests.interop.harness import (
    CLUSTER,
    IDLE_GAP_S,
    Deployment,
    parse_fastjson,
    show,
)
from tests.javaproc import RELEASE_5, terminate
from tests.nodeproc import poll_until

pytestmark = [pytest.mark.java]

Results = dict[str, subprocess.CompletedProcess[str]]
PERM_WRITE = 2
PERM_READ = 4
UNREGISTER_S = 30.0  # far below the 120 s broker expiry: this is the unregistration


def _no_exception(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0 and "Exception" not in done.stdout + done.stderr, show(done)


def _perms(route: Any) -> dict[str, int] | str:
    if not isinstance(route, dict):
        return str(route)
    return {q["brokerName"]: q["perm"] for q in route["queueDatas"]}


# ------------------------------------------------------------------ nodes


def test_nodes_kept_running(deployment: Deployment) -> None:
    if deployment.mode == "cluster":
        done, reply = deployment.status()
        assert reply is not None, show(done)
        summary = [(n["name"], n["state"], n["restarts"]) for n in reply["nodes"]]
        assert summary == [(f"n{i}", "running", 0) for i in (1, 2, 3)], show(done)
        return
    for shell in deployment.shells:
        assert (shell.returncode, shell.stdout, shell.stderr) == (0, "", ""), shell
    procs = deployment.node_processes()
    for addr in deployment.addrs:
        alive = [p for p in procs[addr] if p.is_running()]
        assert alive, f"no process left for standalone node {addr}:\n{deployment.node_log(addr)}"
    assert deployment.idle_s >= IDLE_GAP_S, deployment.idle_s
    assert deployment.after_idle == dict.fromkeys(deployment.addrs, ""), deployment.after_idle


def test_brokers_registered_on_every_node(deployment: Deployment,
                                          registered: dict[str, Any]) -> None:
    expected = deployment.expected_brokers()
    for addr in deployment.addrs:
        info = registered[addr]
        assert isinstance(info, dict), f"{addr}: GET_BROKER_CLUSTER_INFO failed: {info}"
        got = {n: b["brokerAddrs"] for n, b in info["brokerAddrTable"].items()}
        assert got == expected, f"{addr}: brokerAddrTable {info}\nexpected {expected}"
        assert sorted(info["clusterAddrTable"].get(CLUSTER, [])) == sorted(expected), \
            f"{addr}: clusterAddrTable {info['clusterAddrTable']}"


def test_broker_b_registers_compressed(deployment: Deployment, stage1: Results,
                                       registered: dict[str, Any]) -> None:
    done = stage1["getBrokerConfig broker-b"]
    _no_exception(done)
    config = dict(re.findall(r"^(\S+)\s*=  (.*)$", done.stdout, flags=re.M))
    assert config.get("compressedRegister") == "true", show(done)
    addr_b = deployment.broker_addr("broker-b/0")
    for addr, info in registered.items():
        assert isinstance(info, dict), f"{addr}: {info}"
        assert info["brokerAddrTable"].get("broker-b", {}).get("brokerAddrs") == {0: addr_b}, \
            f"{addr}: compressed registration of broker-b not applied: {info}"


# ---------------------------------------------------------------- mqadmin


def test_mqadmin_cluster_list(deployment: Deployment, stage1: Results) -> None:
    done = stage1["clusterList"]
    _no_exception(done)
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith(CLUSTER)]
    seen = {(r[1], r[2], r[3]) for r in rows if len(r) > 3}
    expected = {(name, str(bid), addr) for name, addrs in deployment.expected_brokers().items()
                for bid, addr in addrs.items()}
    assert seen == expected, show(done)


def test_mqadmin_get_namesrv_config(deployment: Deployment, stage1: Results) -> None:
    done = stage1["getNamesrvConfig"]
    _no_exception(done)
    sections = re.split(r"^============(\S+)============$", done.stdout, flags=re.M)
    configs = {sections[i]: sections[i + 1] for i in range(1, len(sections) - 1, 2)}
    assert sorted(configs) == sorted(deployment.addrs), show(done)
    for addr, body in configs.items():
        props = dict(re.findall(r"^(\S+)\s*=  (.*)$", body, flags=re.M))
        port = addr.rsplit(":", 1)[1]
        assert props.get("listenPort") == port, f"{addr}: {props}\n{show(done)}"


def test_mqadmin_update_topic_and_route_on_each_node(deployment: Deployment, stage1: Results,
                                                     stage2: Results) -> None:
    created = stage1["updateTopic"]
    _no_exception(created)
    masters = sorted(deployment.broker_addr(k) for k in ("broker-a/0", "broker-b/0"))
    assert sorted(re.findall(r"create topic to (\S+) success", created.stdout)) == masters, \
        show(created)
    expected = deployment.expected_brokers()
    for addr in deployment.addrs:
        done = stage2[f"topicRoute {addr}"]
        _no_exception(done)
        route = parse_fastjson(done.stdout)
        queues = {q["brokerName"]: q for q in route["queueDatas"]}
        assert "broker-a" in queues, f"{addr}: no queue data of broker-a\n{show(done)}"
        qa = queues["broker-a"]
        assert (qa["readQueueNums"], qa["writeQueueNums"], qa["perm"]) == (8, 8, 6), show(done)
        brokers = {b["brokerName"]: b for b in route["brokerDatas"]}
        assert {int(k): v for k, v in brokers["broker-a"]["brokerAddrs"].items()} \
            == expected["broker-a"], f"{addr}: broker-a addresses\n{show(done)}"
        assert brokers["broker-a"]["cluster"] == CLUSTER, show(done)
        assert "broker-b" in queues and "broker-b" in brokers, show(done)


def test_mqadmin_topic_list(stage2: Results) -> None:
    done = stage2["topicList"]
    _no_exception(done)
    topics = set(done.stdout.split())
    assert {TOPIC, "broker-a", "broker-b", CLUSTER} <= topics, show(done)


# --------------------------------------------------------- Java client


def test_java_producer_consumer_and_admin_api(deployment: Deployment, stage2: Results) -> None:
    done = stage2["java"]
    lines = done.stdout.splitlines()
    sent = [line.split() for line in lines if line.startswith("SENT ")]
    received = {line.split()[3] for line in lines if line.startswith("RECEIVED ")}
    context = f"{show(done)}\n--- client log ---\n{client_log(deployment)}"
    assert done.returncode == 0, context
    assert f"DONE sent={MESSAGES} received={MESSAGES} missing=[]" in lines, context
    assert len(sent) == MESSAGES and {s[1] for s in sent} == {"SEND_OK"}, context
    assert {s[2] for s in sent} == {"broker-a", "broker-b"}, context
    assert {s[4] for s in sent} == received, context


def test_java_admin_get_namesrv_config(deployment: Deployment, stage2: Results) -> None:
    done = stage2["java"]
    configs: dict[str, dict[str, str]] = {}
    for line in done.stdout.splitlines():
        if m := re.match(r"CONFIG (\S+) ([^=]+)=(.*)$", line):
            configs.setdefault(m[1], {})[m[2]] = m[3]
    assert "CONFIG-MISSING" not in done.stdout, show(done)
    assert sorted(configs) == sorted(deployment.addrs), show(done)
    for addr, props in configs.items():
        assert props.get("listenPort") == addr.rsplit(":", 1)[1], f"{addr}: {props}"


# ------------------------------------------------- Go client, 5.x proxy


def test_go_client_route_and_messages(deployment: Deployment, stage2: Results) -> None:
    if why := gobuild.missing():
        pytest.skip(why)
    route = stage2["go route"]
    assert route.returncode == 0, show(route)
    queues = {line.split()[1] for line in route.stdout.splitlines() if line.startswith("QUEUE ")}
    assert queues == {"broker-a", "broker-b"}, show(route)
    assert "HAS-TOPIC true" in route.stdout, show(route)
    done = stage2["go messages"]
    lines = done.stdout.splitlines()
    sent = {line.split()[4] for line in lines if line.startswith("SENT ")}
    received = {line.split()[3] for line in lines if line.startswith("RECEIVED ")}
    assert done.returncode == 0, show(done)
    assert f"DONE sent={MESSAGES} received={MESSAGES} missing=[]" in lines, show(done)
    assert len(sent) == MESSAGES and sent == received, show(done)
    assert not any(line.startswith("ERROR") for line in lines), show(done)
    routed = {a: _perms(r) for a, r in deployment.routes(GO_TOPIC).items()}
    assert routed == dict.fromkeys(deployment.addrs, {"broker-a": 6, "broker-b": 6}), routed


def test_proxy_grpc_client_sends_and_receives(deployment: Deployment, stage2: Results) -> None:
    if deployment.release != RELEASE_5:
        pytest.skip(f"RocketMQ {deployment.release} has no proxy")
    assert deployment.proxy is not None, deployment.proxy_error
    done = stage2["grpc"]
    proxy_log = deployment.proxy.output()[-1500:]
    assert done.returncode == 0, f"{show(done)}\n--- proxy ---\n{proxy_log}"
    assert "DONE received=1" in done.stdout, show(done)
    assert any(line.startswith("SENT ") for line in done.stdout.splitlines()), show(done)
    routes = deployment.routes(GRPC_TOPIC)
    assert all(isinstance(r, dict) and r["queueDatas"] for r in routes.values()), routes


# -------------------------------------------------------------------- KV


def test_kv_config(deployment: Deployment, stage1: Results, stage2: Results) -> None:
    updated = stage1["updateKvConfig"]
    _no_exception(updated)
    assert "create or update kv config to namespace success" in updated.stdout, show(updated)
    java = stage2["java"]
    kv = dict(re.findall(r"^KV (\S+) (.*)$", java.stdout, flags=re.M))
    assert kv == dict.fromkeys(deployment.addrs, KV_VALUE), show(java)
    stored = deployment.per_node(lambda a: deployment.client.get_kv(KV_NAMESPACE, KV_KEY, addr=a))
    assert stored == dict.fromkeys(deployment.addrs, KV_VALUE), stored

    deleted = deployment.mqadmin("deleteKvConfig", "-n", deployment.namesrv, "-s", KV_NAMESPACE,
                                 "-k", KV_KEY)
    _no_exception(deleted)
    assert "delete kv config from namespace success" in deleted.stdout, show(deleted)
    gone = deployment.per_node(lambda a: deployment.client.get_kv(KV_NAMESPACE, KV_KEY, addr=a))
    assert gone == dict.fromkeys(deployment.addrs), f"after deleteKvConfig: {gone}"


# ------------------------------------------------------------ write perm


def test_wipe_and_add_write_perm(deployment: Deployment, stage2: Results) -> None:
    ns = deployment.namesrv
    wiped = deployment.mqadmin("wipeWritePerm", "-n", ns, "-b", "broker-a")
    counts = dict(re.findall(r"wipe write perm of broker\[broker-a\] in name server\[(\S+)\] "
                             r"OK, (\d+)", wiped.stdout))
    assert sorted(counts) == sorted(deployment.addrs), show(wiped)
    assert len(set(counts.values())) == 1 and int(next(iter(counts.values()))) >= 1, show(wiped)
    perms = {a: _perms(r) for a, r in deployment.routes(TOPIC).items()}
    assert perms == dict.fromkeys(deployment.addrs, {"broker-a": PERM_READ, "broker-b": 6}), \
        f"routes of {TOPIC} after wipeWritePerm: {perms}\n{show(wiped)}"

    added = deployment.mqadmin("addWritePerm", "-n", ns, "-b", "broker-a")
    added_counts = dict(re.findall(r"add write perm of broker\[broker-a\] in name server\[(\S+)\] "
                                   r"OK, (\d+)", added.stdout))
    assert added_counts == counts, show(added)
    perms = {a: _perms(r) for a, r in deployment.routes(TOPIC).items()}
    assert perms == dict.fromkeys(deployment.addrs, {"broker-a": 6, "broker-b": 6}), \
        f"routes of {TOPIC} after addWritePerm: {perms}\n{show(added)}"


# ------------------------------------------------------ broker shutdown


def test_broker_sigterm_unregisters_from_every_node(deployment: Deployment,
                                                    stage2: Results) -> None:
    broker_b = deployment.brokers["broker-b/0"]
    code = terminate(broker_b)
    log = broker_b.output()[-2000:]
    assert code in (0, 143), f"broker-b exited with {code} on SIGTERM:\n{log}"
    last: dict[str, Any] = {}

    def dropped() -> bool:
        nonlocal last
        last = deployment.cluster_info()
        return all(isinstance(i, dict) and "broker-b" not in i["brokerAddrTable"]
                   and "broker-b" not in i["clusterAddrTable"].get(CLUSTER, [])
                   for i in last.values())

    try:
        poll_until(dropped, timeout=UNREGISTER_S, interval=0.5, what="broker-b gone everywhere")
    except AssertionError:
        pytest.fail(f"broker-b still on a node {UNREGISTER_S} s after its SIGTERM: {last}")
    expected_a = deployment.expected_brokers()["broker-a"]
    for addr, info in last.items():
        assert info["brokerAddrTable"]["broker-a"]["brokerAddrs"] == expected_a, (addr, info)
    perms = {a: _perms(r) for a, r in deployment.routes(TOPIC).items()}
    assert perms == dict.fromkeys(deployment.addrs, {"broker-a": 6}), perms
