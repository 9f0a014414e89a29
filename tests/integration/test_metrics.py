"""A node with metricsPort: /metrics counts requests, hits, limits and worker restarts."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cluster.core.protocol.codes import FLAG_ONEWAY, ORIGIN_FIELD, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from tests.integration.test_node import kv_put, register, route
from tests.nodeproc import Conn, NodeProcess, free_port, poll_until

pytestmark = pytest.mark.integration

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
REQUESTS = "pynamesrv_requests_total"
LATENCY = "pynamesrv_request_latency_seconds"
ROUTE = "105"
PUT_KV = "100"
UNKNOWN = "4242"


@dataclass
class MetricsNode:
    node: NodeProcess
    url: str

    def text(self) -> str:
        with urllib.request.urlopen(self.url, timeout=10) as resp:  # noqa: S310 - loopback
            return str(resp.read().decode())

    def scrape(self) -> Samples:
        text = self.text()
        out: Samples = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                out[(s.name, frozenset(s.labels.items()))] = s.value
        return out

    def scrape_until(self, ok: Callable[[Samples], bool], what: str) -> Samples:
        """The first scrape that satisfies ``ok``, polled with a deadline."""
        def attempt() -> Samples | None:
            m = self.scrape()
            return m if ok(m) else None
        return poll_until(attempt, timeout=30, interval=0.2, what=what)


@pytest.fixture
def mnode(tmp_path: Path) -> Iterator[MetricsNode]:
    port = free_port()
    n = NodeProcess(tmp_path / "m1", props={"metricsPort": str(port)}).start()
    yield MetricsNode(n, f"http://127.0.0.1:{port}/metrics")
    n.stop()


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """Sum of every sample of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


def _traffic(c: Conn) -> None:
    """Nine requests: a registration, 3 + 2 lookups, two KV puts (one oneway), an unknown code."""
    assert c.call(register()).code == ResponseCode.SUCCESS
    for _ in range(3):
        assert c.call(route("TopicTest")).code == ResponseCode.SUCCESS
    for _ in range(2):
        assert c.call(route("NoSuchTopic")).code == ResponseCode.TOPIC_NOT_EXIST
    assert c.call(kv_put("ns", "k1", "v")).code == ResponseCode.SUCCESS
    oneway = kv_put("ns", "k2", "v")
    oneway.flag = FLAG_ONEWAY
    c.send(oneway)
    unknown = RemotingCommand(code=int(UNKNOWN), version=409)
    assert c.call(unknown).code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


def _monitoring(c: Conn) -> None:
    """Two requests named as a supervisor's probe and a status page's digest."""
    probe = RemotingCommand(code=319, version=409, ext_fields={ORIGIN_FIELD: "probe"})
    assert c.call(probe).code == ResponseCode.SUCCESS
    digest = RemotingCommand(code=60002, version=409, ext_fields={ORIGIN_FIELD: "status"})
    assert c.call(digest).code == ResponseCode.SUCCESS


def test_requests_latency_hits_and_state(mnode: MetricsNode) -> None:
    c = Conn(mnode.node.addr)
    _traffic(c)
    _monitoring(c)
    s = mnode.scrape_until(lambda m: value(m, "pynamesrv_kv_entries") == 2 and
                           total(m, REQUESTS) >= 11, "counts on /metrics")
    assert total(s, REQUESTS, origin="client") == 9
    assert value(s, REQUESTS, code="319", result="0", origin="probe") == 1
    assert value(s, REQUESTS, code="60002", result="0", origin="status") == 1
    assert [ls for (n, ls) in s if n == "pynamesrv_build_info"] != []
    assert value(s, REQUESTS, code=ROUTE, result="0", origin="client") == 3
    assert value(s, REQUESTS, code=ROUTE, result="17", origin="client") == 2
    assert value(s, REQUESTS, code=PUT_KV, result="0", origin="client") == 1
    assert value(s, REQUESTS, code=PUT_KV, result="none", origin="client") == 1
    assert value(s, REQUESTS, code=UNKNOWN, result="3", origin="client") == 1
    assert value(s, REQUESTS, code="103", result="0", origin="client") == 1
    hits = value(s, "pynamesrv_route_template_hits_total")
    misses = value(s, "pynamesrv_route_template_misses_total")
    assert hits + misses == 5 and hits >= 3  # the second and third lookup of each topic
    # latency: one observation per reply written, hits included; none for the oneway put
    assert value(s, f"{LATENCY}_count", code=ROUTE) == 5
    assert value(s, f"{LATENCY}_bucket", code=ROUTE, le="+Inf") == 5
    assert value(s, f"{LATENCY}_count", code=PUT_KV) == 1
    assert value(s, f"{LATENCY}_count", code=UNKNOWN) == 1
    buckets = sorted((float(dict(ls)["le"]), v) for (n, ls), v in s.items()
                     if n == f"{LATENCY}_bucket" and dict(ls)["code"] == ROUTE)
    assert [v for _, v in buckets] == sorted(v for _, v in buckets)  # cumulative
    assert 0 < value(s, f"{LATENCY}_sum", code=ROUTE) < 5
    assert value(s, "pynamesrv_live_brokers") == 1
    assert value(s, "pynamesrv_topics") >= 1
    assert value(s, "pynamesrv_store_generation") >= 1
    assert value(s, "pynamesrv_connections_opened_total") >= 1
    assert value(s, "pynamesrv_connections_open") >= 1
    assert value(s, "pynamesrv_system_busy_total") == 0
    for proc in ("controller", "io-0", "business-0", "business-1"):
        assert value(s, "pynamesrv_process_resident_memory_bytes", process=proc) > 0
        # a worker forked by the zygote may not have used 10 ms of CPU yet: present, >= 0
        assert ("pynamesrv_process_cpu_seconds_total",
                frozenset({("process", proc)})) in s
    c.close()
    s = mnode.scrape_until(lambda m: value(m, "pynamesrv_connections_closed_total") >= 1,
                           "connection close counted")
    assert value(s, "pynamesrv_connections_open") == 0


def test_counters_survive_a_business_worker_sigkill(mnode: MetricsNode) -> None:
    c = Conn(mnode.node.addr)
    _traffic(c)
    before = mnode.scrape_until(lambda m: total(m, REQUESTS) >= 9, "counts on /metrics")
    assert value(before, "pynamesrv_worker_restarts_total", kind="business") == 0
    victim = next(p for p in mnode.node.workers("biz") if p.name() == "pns-biz-0")
    os.kill(victim.pid, signal.SIGKILL)

    def restarted() -> Samples | None:
        m = mnode.scrape()
        for key, v in before.items():
            if key[0] in (REQUESTS, f"{LATENCY}_count"):
                assert m.get(key, 0.0) >= v, key  # never down, not even for one scrape
        return m if value(m, "pynamesrv_worker_restarts_total", kind="business") == 1 else None

    poll_until(restarted, timeout=30, interval=0.2, what="restart counted")
    poll_until(lambda: len(mnode.node.workers("biz")) == 2, timeout=30, what="worker back")
    assert c.call(kv_put("ns", "k3", "v")).code == ResponseCode.SUCCESS
    after = mnode.scrape_until(
        lambda m: value(m, REQUESTS, code=PUT_KV, result="0", origin="client") >= 2,
        "new request counted")
    assert total(after, REQUESTS) >= total(before, REQUESTS) + 1
    assert value(after, "pynamesrv_worker_restarts_total", kind="io") == 0


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_promtool_accepts_the_exposition(mnode: MetricsNode) -> None:
    _traffic(Conn(mnode.node.addr))
    mnode.scrape_until(lambda m: total(m, REQUESTS) >= 9, "counts on /metrics")
    checked = subprocess.run(["promtool", "check", "metrics"], input=mnode.text().encode(),
                             capture_output=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
