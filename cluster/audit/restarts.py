"""Nodes that restarted between two collection rounds, told by their snapshot ``seq``.

A node's ``seq`` grows by one per snapshot it serves and starts again at 1 when the
node starts again, so a snapshot whose ``seq`` is not above the one the same node
answered in the previous round comes from a new run: the node was down at some
moment in between and lost what a run keeps in memory (its routes). Such a round
is recorded as unavailable, with the reason, so the audit sees the outage (and
places "faults stopped" after it) even though no round caught the node down.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RESTARTED = "restarted since the previous round"


class RestartWatch:
    """The last ``seq`` each node answered with; one caller per node at a time."""

    def __init__(self) -> None:
        self._last: dict[str, int] = {}

    def check(self, node: str, snapshot: Mapping[str, Any] | None,
              error: str | None) -> tuple[Mapping[str, Any] | None, str | None]:
        """``(snapshot, error)`` as given, or ``(None, reason)`` when the node restarted."""
        seq = None if snapshot is None else snapshot.get("seq")
        if not isinstance(seq, int) or isinstance(seq, bool):
            self._last.pop(node, None)  # no answer (or no seq): nothing to compare with
            return snapshot, error
        last, self._last[node] = self._last.get(node), seq
        if last is not None and seq <= last:
            return None, f"{RESTARTED} (snapshot seq {last} -> {seq})"
        return snapshot, error


def is_restart(error: str | None) -> bool:
    return bool(error) and str(error).startswith(RESTARTED)
