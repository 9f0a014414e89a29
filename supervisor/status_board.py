"""The status page's shared state: what the supervisor loop and the gatherer last published.

Writers replace whole immutable values under a lock and readers take a
consistent copy, so the supervisor loop never waits on the page for longer
than one reference swap.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import Any

from supervisor.agreement import Agreement
from supervisor.report_finder import Report


@dataclass(frozen=True, slots=True)
class Reading:
    """One node's answer to the last snapshot request.

    ``error`` set: the node did not answer; ``tables`` are then the ones the
    same process (``pid``) last answered with, taken at ``tables_at``, or None.
    """

    node: str
    pid: int
    asked_at: float
    took_s: float
    tables: dict[str, Any] | None = None
    error: str | None = None
    tables_at: float | None = None

    @property
    def answered(self) -> bool:
        return self.error is None

    @property
    def stale(self) -> bool:
        return self.error is not None and self.tables is not None


@dataclass(frozen=True, slots=True)
class BoardState:
    published_at: float = 0.0
    shutting_down: bool = False
    nodes: tuple[dict[str, Any], ...] = ()
    children: tuple[dict[str, Any], ...] = ()
    gathered_at: float | None = None
    readings: dict[str, Reading] = field(default_factory=dict)
    agreement: Agreement | None = None
    reports: tuple[Report, ...] = ()


class StatusBoard:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = BoardState()

    def read(self) -> BoardState:
        with self._lock:
            return self._state

    def publish_supervisor(self, at: float, shutting_down: bool,
                           nodes: list[dict[str, Any]], children: list[dict[str, Any]]) -> None:
        with self._lock:
            self._state = replace(self._state, published_at=at, shutting_down=shutting_down,
                                  nodes=tuple(nodes), children=tuple(children))

    def publish_readings(self, at: float, readings: dict[str, Reading],
                         agreement: Agreement) -> None:
        with self._lock:
            self._state = replace(self._state, gathered_at=at, readings=dict(readings),
                                  agreement=agreement)

    def publish_reports(self, reports: list[Report]) -> None:
        with self._lock:
            self._state = replace(self._state, reports=tuple(reports))
