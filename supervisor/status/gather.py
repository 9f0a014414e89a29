"""The status page's gathering thread: a divergence round every few seconds, reports now and then.

Runs beside the supervisor loop, never in it. Every node with a process is
asked for its GET_NODE_DIGEST summary in parallel, each within its own
deadline, with a drill-down where the digests differ (``Watch``), so a paused
node costs one timeout and is shown as not answering while the others are
compared. Each round also feeds the agreement history, the brokers' rows and
the grouped differences the page shows.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cluster.core.agreement_history import History
from cluster.core.digest_source import DigestSource, RemoteDigest
from cluster.core.divergence import Difference
from cluster.core.divergence_watch import Watch
from supervisor.broker_rows import BrokerBook
from supervisor.report_finder import latest_reports
from supervisor.status.board import Group, StatusBoard

GATHER_EVERY_S = 2.0
NODE_DEADLINE_S = 1.5
REPORTS_EVERY_S = 10.0
JOIN_S = 5.0
EXPECTED_STATES = frozenset({"running", "paused", "hung"})  # a node that should answer
ORIGIN = "status"

MakeSource = Callable[[str, str, int], DigestSource]


def remote_source(name: str, host: str, port: int) -> DigestSource:
    return RemoteDigest(name, host, port, ORIGIN)


def groups_of(differences: Sequence[Difference]) -> tuple[Group, ...]:
    """Differences counted per (table, group), the largest groups first."""
    counts: Counter[tuple[str, str]] = Counter()
    odd: dict[tuple[str, str], Counter[str]] = {}
    for d in differences:
        k = (d.table, d.group)
        counts[k] += 1
        odd.setdefault(k, Counter()).update(d.odd)
    return tuple(Group(t, g, n, tuple(sorted(odd[(t, g)].items())))
                 for (t, g), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


class Gatherer:
    def __init__(self, board: StatusBoard, report_roots: Sequence[Path], *,
                 every_s: float = GATHER_EVERY_S, deadline_s: float = NODE_DEADLINE_S,
                 make_source: MakeSource = remote_source, brokers: BrokerBook | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.board = board
        self.report_roots = list(report_roots)
        self.every_s = every_s
        self.deadline_s = deadline_s
        self.make_source = make_source
        self.clock = clock
        self.history = History()
        self.brokers = brokers or BrokerBook()
        self._watch: Watch | None = None
        self._groups: tuple[Any, tuple[Group, ...]] = (None, ())  # (comparison, its groups)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="status-gather", daemon=True)
        self._next_reports = 0.0

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(JOIN_S)
        if self._watch is not None:
            self._watch.close()
        self.brokers.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self.gather_once()
            if started >= self._next_reports:
                self.board.publish_reports(latest_reports(self.report_roots))
                self._next_reports = started + REPORTS_EVERY_S
            self._stop.wait(max(0.0, self.every_s - (time.monotonic() - started)))

    def _sources(self, nodes: Sequence[dict[str, Any]]) -> Watch:
        if self._watch is None:
            sources = {n["name"]: self.make_source(n["name"], str(n["host"]), int(n["port"]))
                       for n in nodes if n.get("port")}
            self._watch = Watch(sources, deadline_s=self.deadline_s, heartbeats=True,
                                clock=self.clock)
        return self._watch

    def gather_once(self) -> None:
        """One round over every node with a process, then publish what the page shows."""
        nodes = self.board.read().nodes
        if not nodes:
            return
        watch = self._sources(nodes)
        asked = [n["name"] for n in nodes if n.get("pid") and n.get("port")]
        expected = tuple(n["name"] for n in nodes
                         if n.get("pid") and n.get("state") in EXPECTED_STATES)
        rnd = watch.round(asked)
        self.history.add(rnd, expected)
        brokers = self.brokers.update(rnd, watch.sources, self.deadline_s)
        if self._groups[0] is not rnd.comparison:  # a lasting divergence is grouped once
            self._groups = (rnd.comparison, groups_of(rnd.comparison.differences))
        self.board.publish_round(self.clock(), rnd, expected, self.history.copy(),
                                 self._groups[1], brokers)
