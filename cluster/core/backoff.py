"""Exponential restart back-off as a pure object: uptime in, delay out.

An exit after less than ``stable_after_s`` of uptime is *quick*: the n-th
quick exit in a row waits ``initial_s * 2**(n-1)``, capped at ``max_s``. A run
that lasted ``stable_after_s`` starts a new streak: its restart waits
``initial_s`` again, or nothing at all with ``immediate_after_stable``.
"""

from __future__ import annotations


class Backoff:
    def __init__(self, initial_s: float, max_s: float, stable_after_s: float, *,
                 immediate_after_stable: bool = False) -> None:
        if initial_s < 0 or max_s < initial_s:
            raise ValueError("invalid back-off bounds")
        self.initial_s = initial_s
        self.max_s = max_s
        self.stable_after_s = stable_after_s
        self.immediate_after_stable = immediate_after_stable
        self._streak = 0

    @property
    def streak(self) -> int:
        """Exits counted in the current streak (0 after a reset)."""
        return self._streak

    def is_stable(self, uptime_s: float) -> bool:
        return uptime_s >= self.stable_after_s

    def reset(self) -> None:
        self._streak = 0

    def on_exit(self, uptime_s: float) -> float:
        """The delay before restarting a process that ran ``uptime_s`` seconds."""
        if self.is_stable(uptime_s):
            self.reset()
            if self.immediate_after_stable:
                return 0.0
        self._streak += 1
        return min(self.max_s, self.initial_s * 2.0 ** (self._streak - 1))
