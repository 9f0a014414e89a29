"""Restart policy: exponential back-off (``cluster.core.backoff``) and flap detection.

Time is passed in (seconds, monotonic). A crash after less than
``stable_after_s`` of uptime is *quick*; quick crashes double the back-off up to
``max_s``; ``flap_max`` quick crashes within ``flap_window_s`` mean give up.
A run that lasted ``stable_after_s`` resets both.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from cluster.core.backoff import Backoff


@dataclass(frozen=True)
class Decision:
    restart: bool
    delay_s: float
    reason: str


class RestartPolicy:
    def __init__(self, initial_s: float, max_s: float, stable_after_s: float,
                 flap_window_s: float, flap_max: int) -> None:
        if flap_max < 1 or flap_window_s <= 0:
            raise ValueError("invalid restart policy bounds")
        self.backoff = Backoff(initial_s, max_s, stable_after_s)
        self.initial_s = initial_s
        self.max_s = max_s
        self.stable_after_s = stable_after_s
        self.flap_window_s = flap_window_s
        self.flap_max = flap_max
        self._quick: deque[float] = deque(maxlen=flap_max)

    @property
    def quick_crashes(self) -> int:
        return len(self._quick)

    def reset(self) -> None:
        """Forget history (a person started the node again)."""
        self._quick.clear()
        self.backoff.reset()

    def on_exit(self, now: float, uptime_s: float) -> Decision:
        """Decide what to do after the process ended unexpectedly at ``now``."""
        if self.backoff.is_stable(uptime_s):
            self._quick.clear()
        else:
            self._forget_before(now - self.flap_window_s)
            self._quick.append(now)
        delay = self.backoff.on_exit(uptime_s)
        if len(self._quick) >= self.flap_max:
            return Decision(False, 0.0, f"flapping: {len(self._quick)} quick exits within "
                                        f"{self.flap_window_s:g}s")
        return Decision(True, delay, f"restart in {delay:g}s (attempt {self.backoff.streak})")

    def _forget_before(self, cutoff: float) -> None:
        while self._quick and self._quick[0] < cutoff:
            self._quick.popleft()
