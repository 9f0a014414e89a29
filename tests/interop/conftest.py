"""Module-scoped interop fixtures: one deployment (nodes + Java brokers) per mode.

The stage fixtures run the independent tool calls of one step together (in parallel),
so the suite pays each JVM start once; the tests then assert on the recorded results.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Reaper
from tests.interop.harness import (
    CLUSTER,
    MODES,
    PYNAMESRV,
    REGISTER_S,
    Deployment,
    tail,
)
from tests.javaproc import java_client_argv, java_rocketmq_missing, javac
from tests.nodeproc import poll_until

TOPIC = "InteropTopic"
KV_NAMESPACE = "INTEROP_NS"
KV_KEY = "interop.key"
KV_VALUE = "interop-value-1"
MESSAGES = 10
JAVA_DIR = Path(__file__).resolve().parent / "java"
ROUTE_S = 30.0


@pytest.fixture(scope="session")
def java_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``tests/interop/java/*.java`` compiled against the 4.9.8 jars."""
    missing = java_rocketmq_missing()
    if missing:
        pytest.skip(missing)
    out = tmp_path_factory.mktemp("interop-classes")
    javac(sorted(JAVA_DIR.glob("*.java")), out)
    return out


@pytest.fixture(scope="module", params=MODES)
def deployment(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
               java_classes: Path) -> Iterator[Deployment]:
    mode: str = request.param
    reaper = Reaper()
    dep = Deployment(mode, tmp_path_factory.mktemp(f"interop-{mode}-"), reaper)
    try:
        dep.start_nodes()
        broken = {a: why for a, why in dep.after_idle.items() if why}
        if broken:
            procs = dep.node_processes()
            raise AssertionError(
                f"standalone nodes stopped answering after {dep.idle_s:.1f} s idle: {broken}\n"
                + "\n".join(f"{a}: live processes {[p.pid for p in procs[a]]}\n"
                            f"log:\n{dep.node_log(a)}" for a in broken))
        dep.start_brokers()
        yield dep
    finally:
        dep.close()
        dep.stop_brokers()
        if mode == "standalone":
            dep.stop_standalone()
        if dep.up is not None and dep.up.poll() is None:
            subprocess.run([str(PYNAMESRV), "stop", "-c", str(dep.config)], capture_output=True,
                           timeout=60, stdin=subprocess.DEVNULL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                dep.up.wait(30)
        reaper.reap()


def _registered(dep: Deployment, info: dict[str, Any]) -> bool:
    expected = dep.expected_brokers()
    for value in info.values():
        if not isinstance(value, dict):
            return False
        table = value["brokerAddrTable"]
        for name, addrs in expected.items():
            if name not in table or table[name]["brokerAddrs"] != addrs:
                return False
        if sorted(value["clusterAddrTable"].get(CLUSTER, [])) != sorted(expected):
            return False
    return True


@pytest.fixture(scope="module")
def registered(deployment: Deployment) -> dict[str, Any]:
    """Every node's cluster info once all brokers show on all nodes (or at the deadline)."""
    last: dict[str, Any] = {}

    def check() -> bool:
        nonlocal last
        last = deployment.cluster_info()
        return _registered(deployment, last)

    with contextlib.suppress(AssertionError):  # the tests report what the nodes show
        poll_until(check, timeout=REGISTER_S, interval=0.5, what="brokers on every node")
    return last


@pytest.fixture(scope="module")
def stage1(deployment: Deployment, registered: dict[str, Any]
           ) -> dict[str, subprocess.CompletedProcess[str]]:
    """clusterList, getNamesrvConfig, updateTopic, updateKvConfig, getBrokerConfig together."""
    ns = deployment.namesrv
    return deployment.mqadmin_batch({
        "clusterList": ["clusterList", "-n", ns],
        "getNamesrvConfig": ["getNamesrvConfig", "-n", ns],
        "updateTopic": ["updateTopic", "-n", ns, "-c", CLUSTER, "-t", TOPIC],
        "updateKvConfig": ["updateKvConfig", "-n", ns, "-s", KV_NAMESPACE, "-k", KV_KEY,
                           "-v", KV_VALUE],
        "getBrokerConfig broker-b": ["getBrokerConfig", "-n", ns,
                                     "-b", deployment.broker_addr("broker-b/0")],
    })


def _route_complete(route: Any) -> bool:
    if not isinstance(route, dict):
        return False
    return {q["brokerName"] for q in route["queueDatas"]} == {"broker-a", "broker-b"}


@pytest.fixture(scope="module")
def stage2(deployment: Deployment, stage1: dict[str, subprocess.CompletedProcess[str]],
           java_classes: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    """After the topic exists on every node: topicRoute per node, topicList, Java client."""
    with contextlib.suppress(AssertionError):  # the route tests report what the nodes show
        poll_until(lambda: all(map(_route_complete, deployment.routes(TOPIC).values())),
                   timeout=ROUTE_S, interval=0.5, what=f"{TOPIC} routed on every node")
    home = deployment.root / "java-client-home"
    home.mkdir(exist_ok=True)
    argv = java_client_argv("InteropClient", java_classes, home, deployment.namesrv, TOPIC,
                            str(MESSAGES), "60", KV_NAMESPACE, KV_KEY)

    def java_client() -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, capture_output=True, text=True, timeout=240,
                              stdin=subprocess.DEVNULL, cwd=home)

    jobs = {f"topicRoute {a}": ["topicRoute", "-n", a, "-t", TOPIC] for a in deployment.addrs}
    jobs["topicList"] = ["topicList", "-n", deployment.namesrv]
    return deployment.mqadmin_batch(jobs, extra={"java": java_client})


def client_log(dep: Deployment) -> str:
    return tail(dep.root / "java-client-home" / "logs" / "rocketmqlogs" / "rocketmq_client.log")
