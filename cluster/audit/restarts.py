"""Nodes that restarted between two collection rounds, told by their snapshot ``run``/``seq``.

A node's snapshot carries ``run``, the same for every snapshot of one node run,
and ``seq``, which grows by one per snapshot it serves and starts again at 1 when
the node starts again. A snapshot of another ``run`` than the one the same node
answered with in the previous round (or, from a node that sends no ``run``, a
``seq`` not above the previous one) comes from a new run: the node was down at
some moment in between and lost what a run keeps in memory (its routes). Such a
round is recorded as unavailable, with the reason, so the audit sees the outage
(and places "faults stopped" after it) even though no round caught the node down.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RESTARTED = "restarted since the previous round"


class RestartWatch:
    """The ``(run, seq)`` each node last answered with; one caller per node at a time."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[Any, int]] = {}

    def check(self, node: str, snapshot: Mapping[str, Any] | None,
              error: str | None) -> tuple[Mapping[str, Any] | None, str | None]:
        """``(snapshot, error)`` as given, or ``(None, reason)`` when the node restarted."""
        seq = None if snapshot is None else snapshot.get("seq")
        if snapshot is None or not isinstance(seq, int) or isinstance(seq, bool):
            self._last.pop(node, None)  # no answer (or no seq): nothing to compare with
            return snapshot, error
        run = snapshot.get("run")
        last, self._last[node] = self._last.get(node), (run, seq)
        if last is not None and (run != last[0] or seq <= last[1]):
            return None, f"{RESTARTED} (snapshot seq {last[1]} -> {seq})"
        return snapshot, error


def is_restart(error: str | None) -> bool:
    return bool(error) and str(error).startswith(RESTARTED)
