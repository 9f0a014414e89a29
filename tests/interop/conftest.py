"""Module-scoped interop fixtures: one deployment (nodes + brokers) per mode and release.

The stage fixtures run the independent tool calls of one step together (in parallel),
so the suite pays each JVM start once; the tests then assert on the recorded results.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from cluster.peers import gobuild
from tests.conftest import Reaper
from tests.interop.harness import (
    CLUSTER,
    MODES,
    PYNAMESRV,
    REGISTER_S,
    Deployment,
    tail,
)
from tests.javaproc import RELEASE_5, RELEASES, java_client_argv, java_missing, javac
from tests.nodeproc import ROOT, poll_until

TOPIC = "InteropTopic"
GO_TOPIC = "InteropGoTopic"  # the Go probe's messages, apart from the Java client's
GRPC_TOPIC = "InteropGrpcTopic"  # 5.x: a NORMAL message-type topic for the proxy's clients
KV_NAMESPACE = "INTEROP_NS"
KV_KEY = "interop.key"
KV_VALUE = "interop-value-1"
MESSAGES = 10
JAVA_DIR = Path(__file__).resolve().parent / "java"
ROUTE_S = 30.0
# Per release the standalone deployment first: the Java programs compile during its idle gap.
DEPLOYMENTS = [(mode, release) for release in RELEASES for mode in reversed(MODES)]


@pytest.fixture(scope="session")
def java_classes() -> dict[str, Path]:
    """Per release, ``tests/interop/java/*.java`` compiled against its jars (``compiled``)."""
    return {}


def compiled(classes: dict[str, Path], release: str, tmp: pytest.TempPathFactory) -> Path:
    if release not in classes:
        out = tmp.mktemp(f"interop-classes-{release}")
        javac(sorted(JAVA_DIR.glob("*.java")), out, release)
        classes[release] = out
    return classes[release]


@pytest.fixture(scope="module", params=DEPLOYMENTS, ids=lambda d: f"{d[0]}-{d[1]}")
def deployment(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
               java_classes: dict[str, Path]) -> Iterator[Deployment]:
    mode, release = request.param
    if why := java_missing(release):
        pytest.skip(why)
    reaper = Reaper()
    dep = Deployment(mode, release, tmp_path_factory.mktemp(f"interop-{mode}-{release}-"),
                     reaper)
    try:
        with ThreadPoolExecutor(1) as pool:  # javac while the nodes start (and sit idle)
            classes = pool.submit(compiled, java_classes, release, tmp_path_factory)
            dep.start_nodes()
            classes.result()
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
    deployment.start_proxy()
    return last


@pytest.fixture(scope="module")
def stage1(deployment: Deployment, registered: dict[str, Any]
           ) -> dict[str, subprocess.CompletedProcess[str]]:
    """clusterList, getNamesrvConfig, updateTopic (two topics, three with 5.x),
    updateKvConfig and getBrokerConfig together."""
    ns = deployment.namesrv
    jobs = {
        "clusterList": ["clusterList", "-n", ns],
        "getNamesrvConfig": ["getNamesrvConfig", "-n", ns],
        "updateTopic": ["updateTopic", "-n", ns, "-c", CLUSTER, "-t", TOPIC],
        "updateTopic go": ["updateTopic", "-n", ns, "-c", CLUSTER, "-t", GO_TOPIC],
        "updateKvConfig": ["updateKvConfig", "-n", ns, "-s", KV_NAMESPACE, "-k", KV_KEY,
                           "-v", KV_VALUE],
        "getBrokerConfig broker-b": ["getBrokerConfig", "-n", ns,
                                     "-b", deployment.broker_addr("broker-b/0")],
    }
    if deployment.release == RELEASE_5:
        jobs["updateTopic grpc"] = ["updateTopic", "-n", ns, "-c", CLUSTER, "-t", GRPC_TOPIC,
                                    "-a", "+message.type=NORMAL"]
    return deployment.mqadmin_batch(jobs)


def _route_complete(route: Any) -> bool:
    if not isinstance(route, dict):
        return False
    return {q["brokerName"] for q in route["queueDatas"]} == {"broker-a", "broker-b"}


def _run(argv: list[str], cwd: Path, timeout: float = 240.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, cwd=cwd)


@pytest.fixture(scope="module")
def stage2(deployment: Deployment, stage1: dict[str, subprocess.CompletedProcess[str]],
           java_classes: dict[str, Path]) -> dict[str, subprocess.CompletedProcess[str]]:
    """After the topics exist on every node: topicRoute per node, topicList, the Java client,
    the Go probe (route lookup, then messages) and, with 5.x, the proxy's gRPC client."""
    topics = [TOPIC, GO_TOPIC] + ([GRPC_TOPIC] if deployment.release == RELEASE_5 else [])
    with contextlib.suppress(AssertionError):  # the route tests report what the nodes show
        poll_until(lambda: all(_route_complete(r) for t in topics
                               for r in deployment.routes(t).values()),
                   timeout=ROUTE_S, interval=0.5, what=f"{topics} routed on every node")
    home = deployment.root / "java-client-home"
    home.mkdir(exist_ok=True)
    argv = java_client_argv("InteropClient", java_classes[deployment.release], home,
                            deployment.namesrv, TOPIC, str(MESSAGES), "60", KV_NAMESPACE, KV_KEY,
                            rel=deployment.release)
    extra = {"java": lambda: _run(argv, home)}
    probe = [str(PYNAMESRV), "peer", "goprobe", "--"]
    if not gobuild.missing():
        extra["go route"] = lambda: _run([*probe, "route", "-n", deployment.namesrv,
                                          "-t", GO_TOPIC], deployment.root)
        extra["go messages"] = lambda: _run([*probe, "produce-consume", "-n", deployment.namesrv,
                                             "-t", GO_TOPIC, "-c", str(MESSAGES),
                                             "-timeout", "60s"], deployment.root)
    proxy = deployment.proxy
    if proxy is not None:
        extra["grpc"] = lambda: _run([sys.executable, "-m", "tests.interop.grpc_roundtrip",
                                      proxy.grpc_addr, GRPC_TOPIC, "90"], ROOT)
    jobs = {f"topicRoute {a}": ["topicRoute", "-n", a, "-t", TOPIC] for a in deployment.addrs}
    jobs["topicList"] = ["topicList", "-n", deployment.namesrv]
    return deployment.mqadmin_batch(jobs, extra=extra)


def client_log(dep: Deployment) -> str:
    return tail(dep.root / "java-client-home" / "logs" / "rocketmqlogs" / "rocketmq_client.log")
