"""The controller's ``/metrics``: worker snapshots summed, state read at scrape time.

``NodeCollector`` turns the ``MetricsBook`` (``worker.controller.metrics_book``), one read
transaction of the store and the process tree's CPU and memory (psutil) into Prometheus
families; prometheus_client's own HTTP server serves them on its thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psutil
from prometheus_client import start_http_server
from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from cluster.core.build import BUILD_INFO_HELP, BUILD_INFO_NAME, build_labels
from worker.controller.metrics_book import MetricsBook, Slot, Totals
from worker.metrics import LATENCY_BOUNDS, OTHER

# Worker counters (``WorkerMetrics.counters`` names) served as ``pynamesrv_<name>_total``.
COUNTERS: dict[str, str] = {
    "system_busy": "requests answered SYSTEM_BUSY (the I/O worker's queue was full)",
    "connections_opened": "client connections admitted",
    "connections_closed": "client connections closed, by either side",
    "connections_handed_off": "client connections passed to the large-frame I/O worker "
    "(a connection's next frame was 256 KiB or more)",
    "route_template_hits": "route lookups answered from a template by the I/O worker",
    "route_template_misses": "route lookups sent to the business pool to be learned",
    "route_template_shared": "first route lookups of a topic answered from the template of "
    "another topic of the same route (counted in the hits too)",
}


def _code(code: int) -> str:
    return "other" if code == OTHER else str(code)


def counter_families(totals: Totals) -> Iterator[Metric]:
    requests = CounterMetricFamily("pynamesrv_requests", "requests answered, by request code, "
                                   "response code (none: oneway) and origin (client, or the "
                                   "monitoring tool that sent it: probe, status, audit)",
                                   labels=["code", "result", "origin"])
    for (code, result, origin), n in sorted(totals.requests.items()):
        requests.add_metric([_code(code), result, origin], n)
    yield requests
    latency = HistogramMetricFamily("pynamesrv_request_latency_seconds", "time from a request's "
                                    "frame in to its reply out, in the I/O worker",
                                    labels=["code"])
    for code, (counts, total) in sorted(totals.latency.items()):
        latency.add_metric([_code(code)], cumulative_buckets(counts), sum_value=total)
    yield latency
    for name, doc in COUNTERS.items():
        yield CounterMetricFamily(f"pynamesrv_{name}", doc, value=totals.counters.get(name, 0))
    limits = CounterMetricFamily("pynamesrv_limit_hits", "connections refused or closed by a "
                                 "connection limit", labels=["limit"])
    for name, n in sorted(totals.limits.items()):
        limits.add_metric([name], n)
    yield limits


def cumulative_buckets(counts: list[int]) -> list[tuple[str, float]]:
    """Per-bucket counts (last: above every bound) as Prometheus' cumulative ``le`` buckets."""
    out: list[tuple[str, float]] = []
    running = 0
    for bound, n in zip((*map(str, LATENCY_BOUNDS), "+Inf"), counts, strict=True):
        running += n
        out.append((bound, running))
    return out


def worker_gauges(live: dict[Slot, dict[str, Any]]) -> Iterator[Metric]:
    queue = GaugeMetricFamily("pynamesrv_business_queue_depth", "requests an I/O worker holds "
                              "for the business pool, by lane", labels=["io_worker", "lane"])
    conns = GaugeMetricFamily("pynamesrv_connections_open", "open client connections "
                              "(as last reported by the I/O workers)")
    total = 0
    for (kind, index), doc in sorted(live.items()):
        if kind != "io":
            continue
        gauges = doc.get("gauges", {})
        queue.add_metric([str(index), "reads"], gauges.get("queue_reads", 0))
        queue.add_metric([str(index), "others"], gauges.get("queue_others", 0))
        total += gauges.get("connections", 0)
    conns.add_metric([], total)
    yield queue
    yield conns


def state_gauges(store: Any) -> Iterator[Metric]:
    """Live brokers, topics, KV entries and the store generation, from one read transaction."""
    with store.read() as t:
        brokers, topics = t.count("live"), t.count("topic")
        kv = sum(len(table) for _, table in t.items("kv"))
        generation = t.generation()
    for name, doc, value in (
            ("pynamesrv_live_brokers", "brokers with a live channel", brokers),
            ("pynamesrv_topics", "topics in the route table", topics),
            ("pynamesrv_kv_entries", "KV config entries, all namespaces", kv),
            ("pynamesrv_store_generation", "route generation of the store (bumped by every "
             "change a route reply shows)", generation)):
        yield GaugeMetricFamily(name, doc, value=value)


def process_families(pids: dict[str, int]) -> Iterator[Metric]:
    cpu = CounterMetricFamily("pynamesrv_process_cpu_seconds", "CPU time (user + system) of "
                              "each process of the node", labels=["process"])
    rss = GaugeMetricFamily("pynamesrv_process_resident_memory_bytes", "resident memory of "
                            "each process of the node", labels=["process"])
    for name, pid in sorted(pids.items()):
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                times, mem = proc.cpu_times(), proc.memory_info()
        except psutil.Error:
            continue  # exited between the listing and the reading
        cpu.add_metric([name], times.user + times.system)
        rss.add_metric([name], mem.rss)
    yield cpu
    yield rss


class NodeCollector(Collector):
    """Everything a node serves on ``/metrics``; the callables are read at each scrape."""

    def __init__(self, book: MetricsBook, store: Callable[[], Any],
                 pids: Callable[[], dict[str, int]],
                 restarts: Callable[[], dict[str, int]]) -> None:
        self.book = book
        self.store = store
        self.pids = pids
        self.restarts = restarts

    def collect(self) -> Iterator[Metric]:
        totals, live = self.book.read()
        labels = build_labels()
        build = GaugeMetricFamily(BUILD_INFO_NAME, BUILD_INFO_HELP, labels=list(labels))
        build.add_metric(list(labels.values()), 1.0)
        yield build
        yield from counter_families(totals)
        yield from worker_gauges(live)
        restarts = CounterMetricFamily("pynamesrv_worker_restarts", "worker processes that "
                                       "exited and were restarted by the controller",
                                       labels=["kind"])
        for kind, n in sorted(self.restarts().items()):
            restarts.add_metric([kind], n)
        yield restarts
        store = self.store()
        if store is not None:
            yield from state_gauges(store)
        yield from process_families(self.pids())


class MetricsServer:
    """prometheus_client's HTTP server for one collector, on its own thread."""

    def __init__(self, host: str, port: int, collector: Collector) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        self.server, self.thread = start_http_server(port, host, registry=self.registry)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
