"""What the controller knows of its workers' metrics, without serving them.

Workers PUSH their cumulative totals about once a second (``worker.metrics``). The
``MetricsBook`` keeps the latest snapshot of every live worker and, for workers that
died, their last totals in a base, so every counter stays monotonic across a worker
restart. ``worker.controller.metrics_server`` serves it; the controller imports that
(prometheus_client and psutil: 3 MB of an idle node's memory) only when ``metricsPort`` is
set.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

Slot = tuple[str, int]  # (worker kind, index)


@dataclass
class Totals:
    """Counters summed over snapshots: requests, latency buckets, named counters, limits."""

    requests: dict[tuple[int, str, str], int] = field(default_factory=dict)
    latency: dict[int, tuple[list[int], float]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    limits: dict[str, int] = field(default_factory=dict)

    def add(self, doc: dict[str, Any]) -> None:
        for code, result, origin, n in doc.get("requests", ()):
            key = (int(code), str(result), str(origin))
            self.requests[key] = self.requests.get(key, 0) + int(n)
        for code, counts, total in doc.get("latency", ()):
            have, have_sum = self.latency.get(int(code), ([0] * len(counts), 0.0))
            self.latency[int(code)] = ([a + b for a, b in zip(have, counts, strict=True)],
                                       have_sum + float(total))
        for table, into in (("counters", self.counters), ("limits", self.limits)):
            for name, n in doc.get(table, {}).items():
                into[name] = into.get(name, 0) + int(n)

    def copy(self) -> Totals:
        return Totals(dict(self.requests), {c: (list(b), s) for c, (b, s) in self.latency.items()},
                      dict(self.counters), dict(self.limits))


class MetricsBook:
    """Latest snapshot per live worker plus the last totals of the dead ones (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[Slot, dict[str, Any]] = {}
        self._base = Totals()

    def update(self, doc: dict[str, Any]) -> None:
        slot = (str(doc["kind"]), int(doc["index"]))
        with self._lock:
            old = self._live.get(slot)
            if old is not None and old["pid"] != doc["pid"]:
                self._base.add(old)  # its death was not reported first: keep its totals
            self._live[slot] = doc

    def retire(self, kind: str, index: int, pid: int) -> None:
        """Worker ``pid`` exited: its last totals move to the base."""
        with self._lock:
            old = self._live.get((kind, index))
            if old is not None and old["pid"] == pid:
                self._base.add(self._live.pop((kind, index)))

    def read(self) -> tuple[Totals, dict[Slot, dict[str, Any]]]:
        """(base + every live worker's totals, the live snapshots) at one instant."""
        with self._lock:
            totals = self._base.copy()
            live = dict(self._live)
        for doc in live.values():
            totals.add(doc)
        return totals, live
