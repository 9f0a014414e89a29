"""The supervisor's ``/metrics`` (on the status page's server): the cluster as the loop sees it.

Read from the status board (``StatusBoard.read``), so a scrape never touches the
supervisor loop: node states (one gauge per state, 1 for the node's current one),
restarts, the last health probe's latency and the status gatherer's snapshot latency.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from supervisor.status_board import StatusBoard
from supervisor.status_view import STATE_CLASS

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


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
        snapshot = GaugeMetricFamily("pynamesrv_supervisor_snapshot_seconds", "time the "
                                     "status page's last snapshot request to each node took",
                                     labels=["node"])
        for name, reading in sorted(state.readings.items()):
            if reading.answered:
                snapshot.add_metric([name], reading.took_s)
        yield from (states, restarts, probe, snapshot)


class SupervisorMetrics:
    """The exposition text of one board, in a registry of its own."""

    def __init__(self, board: StatusBoard) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(SupervisorCollector(board))

    def render(self) -> bytes:
        return generate_latest(self.registry)
