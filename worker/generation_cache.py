"""A cache of encoded replies that holds for one store generation, bounded in bytes.

Every write that changes what a reply shows bumps the store's generation
(``state.store``), so a cache moved to another generation drops everything. When an
entry does not fit, the oldest eighth of the keys goes first, as often as needed.
The business worker's route bodies (``worker.business.context.RouteCache``) and the I/O
worker's route reply templates (``worker.io.route_replies.RouteReplies``) are two of these.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

from mypy_extensions import mypyc_attr

G = TypeVar("G")  # the store generation as the cache reads it
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@mypyc_attr(allow_interpreted_subclasses=True)  # the business worker's RouteCache
class GenerationCache(Generic[G, K, V]):
    """``entries`` of one ``generation``, ``size`` bytes of at most ``max_bytes``."""

    __slots__ = ("generation", "max_bytes", "size", "entries")

    def __init__(self, max_bytes: int, generation: G) -> None:
        self.generation = generation
        self.max_bytes = max_bytes
        self.size = 0
        self.entries: dict[K, V] = {}

    def renew(self, generation: G) -> bool:
        """Move to ``generation``; True when it is the one held (nothing dropped)."""
        if generation == self.generation:
            return True
        self.generation = generation
        self.clear()
        return False

    def clear(self) -> None:
        self.entries.clear()
        self.size = 0

    def add(self, key: K, value: V, cost: int) -> None:
        """Keep ``value`` under ``key`` (not held yet), counted as ``cost`` bytes."""
        self.make_room(cost)
        self.entries[key] = value
        self.size += cost

    def make_room(self, cost: int) -> None:
        """Forget the oldest eighth of the keys until ``cost`` more bytes fit."""
        while self.entries and self.size + cost > self.max_bytes:
            for key in list(self.entries)[: max(1, len(self.entries) // 8)]:
                self.forget(key)

    def forget(self, key: K) -> None:
        """Drop ``key``; the bytes it freed are ``cost_of`` it."""
        self.size -= self.cost_of(key, self.entries.pop(key))

    def cost_of(self, key: K, value: V) -> int:
        raise NotImplementedError
