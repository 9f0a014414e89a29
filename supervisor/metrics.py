"""The supervisor's ``/metrics`` (on the status page's server): the cluster as the loop sees it.

Read from the status board (``StatusBoard.read``), so a scrape never touches the
supervisor loop: node states (one gauge per state, 1 for the node's current one),
restarts, the last health probe's latency, the status gatherer's digest latency,
the divergence signal (``cluster.core.divergence_gauges``) and the build.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cluster.core.build import BUILD_INFO_HELP, BUILD_INFO_NAME, build_labels
from cluster.core.divergence_gauges import Gauge, divergence_gauges
from supervisor.status.board import StatusBoard
from supervisor.status.view import STATE_CLASS

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def gauge_family(g: Gauge) -> GaugeMetricFamily:
    family = GaugeMetricFamily(g.name, g.help, labels=list(g.labels))
    for labels, value in g.samples:
        family.add_metric(list(labels), value)
    return family


def build_info() -> GaugeMetricFamily:
    labels = build_labels()
    family = GaugeMetricFamily(BUILD_INFO_NAME, BUILD_INFO_HELP, labels=list(labels))
    family.add_metric(list(labels.values()), 1.0)
    return family


class SupervisorCollector(Collector):
    def __init__(self, board: StatusBoard) -> None:
        self.board = board

    def collect(self) -> Iterator[Metric]:
        state = self.board.read()
        states = GaugeMetricFamily("pynamesrv_supervisor_node_state", "1 for the state each "
                                   "node is in, 0 for the others", labels=["node", "state"])
        restarts = CounterMetricFamily("pynamesrv_supervisor_node_restarts", "restarts of "
                                       "each node by the supervisor", labels=["node"])
        probe = GaugeMetricFamily("pynamesrv_supervisor_probe_seconds", "time the last "
                                  "answered health probe of each node took", labels=["node"])
        for n in state.nodes:
            for name in STATE_CLASS:
                states.add_metric([n["name"], name], 1.0 if n["state"] == name else 0.0)
            restarts.add_metric([n["name"]], n["restarts"])
            if n.get("probe_s") is not None:
                probe.add_metric([n["name"]], n["probe_s"])
        digest = GaugeMetricFamily("pynamesrv_supervisor_digest_seconds", "time the status "
                                   "page's last digest summary request to each node took",
                                   labels=["node"])
        if state.round is not None:
            for name, a in sorted(state.round.answers.items()):
                if a.answered:
                    digest.add_metric([name], a.took_s)
        yield from (states, restarts, probe, digest, build_info())
        names = [n["name"] for n in state.nodes]
        for g in divergence_gauges(state.round, state.history, time.time(), names):
            yield gauge_family(g)


class SupervisorMetrics:
    """The exposition text of one board, in a registry of its own."""

    def __init__(self, board: StatusBoard) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(SupervisorCollector(board))

    def render(self) -> bytes:
        return generate_latest(self.registry)
