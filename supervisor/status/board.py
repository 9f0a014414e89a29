"""The status page's shared state: what the supervisor loop and the gatherer last published.

Writers replace whole immutable values under a lock and readers take a
consistent copy, so the supervisor loop never waits on the page for longer
than one reference swap.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import Any

from cluster.core.agreement_history import History
from cluster.core.divergence_watch import Round
from supervisor.broker_rows import BrokerRow
from supervisor.report_finder import Report


@dataclass(frozen=True, slots=True)
class Group:
    """Differences of one table under one group (a topic's broker, a namespace, a key)."""

    table: str
    group: str
    count: int
    odd: tuple[tuple[str, int], ...]  # (node, entries on which it is odd)


@dataclass(frozen=True, slots=True)
class BoardState:
    published_at: float = 0.0
    shutting_down: bool = False
    nodes: tuple[dict[str, Any], ...] = ()
    children: tuple[dict[str, Any], ...] = ()
    gathered_at: float | None = None
    round: Round | None = None
    expected: tuple[str, ...] = ()  # nodes that should answer (running, paused, hung)
    history: History = field(default_factory=History)
    groups: tuple[Group, ...] = ()
    brokers: tuple[BrokerRow, ...] = ()
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

    def publish_round(self, at: float, rnd: Round, expected: tuple[str, ...], history: History,
                      groups: tuple[Group, ...], brokers: tuple[BrokerRow, ...]) -> None:
        with self._lock:
            self._state = replace(self._state, gathered_at=at, round=rnd, expected=expected,
                                  history=history, groups=groups, brokers=brokers)

    def publish_reports(self, reports: list[Report]) -> None:
        with self._lock:
            self._state = replace(self._state, reports=tuple(reports))
