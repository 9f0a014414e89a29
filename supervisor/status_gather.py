"""The status page's gathering thread: node snapshots every few seconds, reports now and then.

Runs beside the supervisor loop, never in it. Every live node is asked in
parallel, each with its own deadline, so a paused node costs one timeout
and is shown as not answering while the others are shown as they are.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from supervisor.agreement import compare
from supervisor.node_snapshot import NotAnswering, fetch_snapshot
from supervisor.report_finder import latest_reports
from supervisor.status_board import Reading, StatusBoard

GATHER_EVERY_S = 2.0
NODE_DEADLINE_S = 1.5
REPORTS_EVERY_S = 10.0
MAX_PARALLEL = 64
JOIN_S = 5.0

Fetch = Callable[[str, int, float], dict[str, Any]]


class Gatherer:
    def __init__(self, board: StatusBoard, report_roots: Sequence[Path], *,
                 every_s: float = GATHER_EVERY_S, deadline_s: float = NODE_DEADLINE_S,
                 fetch: Fetch = fetch_snapshot, clock: Callable[[], float] = time.time) -> None:
        self.board = board
        self.report_roots = list(report_roots)
        self.every_s = every_s
        self.deadline_s = deadline_s
        self.fetch = fetch
        self.clock = clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="status-gather", daemon=True)
        self._pool = ThreadPoolExecutor(MAX_PARALLEL, thread_name_prefix="status-snapshot")
        self._next_reports = 0.0
        self._last_good: dict[str, Reading] = {}

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(JOIN_S)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self.gather_once()
            if started >= self._next_reports:
                self.board.publish_reports(latest_reports(self.report_roots))
                self._next_reports = started + REPORTS_EVERY_S
            self._stop.wait(max(0.0, self.every_s - (time.monotonic() - started)))

    def gather_once(self) -> None:
        """Ask every live node once, then publish the readings and their comparison."""
        nodes = [n for n in self.board.read().nodes if n.get("pid") and n.get("port")]
        futures = {n["name"]: self._pool.submit(self._ask, n) for n in nodes}
        readings = {n["name"]: self._remember(self._collect(n, futures[n["name"]]))
                    for n in nodes}
        known = {name: r.tables for name, r in readings.items() if r.tables is not None}
        self.board.publish_readings(self.clock(), readings,
                                    compare(known, stale=[r.node for r in readings.values()
                                                          if r.stale]))

    def _ask(self, node: dict[str, Any]) -> Reading:
        asked = self.clock()
        t0 = time.monotonic()
        try:
            body = self.fetch(str(node["host"]), int(node["port"]), self.deadline_s)
        except NotAnswering as exc:
            return Reading(node["name"], node["pid"], asked, time.monotonic() - t0,
                           error=str(exc))
        return Reading(node["name"], node["pid"], asked, time.monotonic() - t0,
                       tables=body["tables"], tables_at=asked)

    def _collect(self, node: dict[str, Any], future: Future[Reading]) -> Reading:
        try:
            return future.result(self.deadline_s + JOIN_S)
        except Exception as exc:  # a bug in one request must not stop the page
            return Reading(node["name"], node["pid"], self.clock(), 0.0,
                           error=f"{type(exc).__name__}: {exc}")

    def _remember(self, r: Reading) -> Reading:
        """An answer is remembered; a silence gets the same process's last answered tables."""
        if r.answered:
            self._last_good[r.node] = r
            return r
        last = self._last_good.get(r.node)
        if last is None or last.pid != r.pid:
            return r
        return replace(r, tables=last.tables, tables_at=last.tables_at)
