"""NodeContext: what a business worker's request processors need, built once per process."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from state.store import Store

ROUTE_CACHE_MAX = 4096


class TimingSettings(Protocol):
    scan_interval_ms: int
    broker_expired_ms: int


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(slots=True)
class RouteCache:
    """Encoded route bodies of one store generation; cleared when the generation moves."""

    generation: int = -1
    bodies: dict[tuple[Any, ...], bytes] = field(default_factory=dict)

    def get(self, generation: int, key: tuple[Any, ...]) -> bytes | None:
        if generation != self.generation:
            self.generation = generation
            self.bodies.clear()
            return None
        return self.bodies.get(key)

    def put(self, key: tuple[Any, ...], body: bytes) -> None:
        if len(self.bodies) >= ROUTE_CACHE_MAX:
            self.bodies.clear()
        self.bodies[key] = body


@dataclass(slots=True)
class NodeContext:
    store: Store
    node_name: str
    clock: Callable[[], int]
    settings: TimingSettings
    route_cache: RouteCache = field(default_factory=RouteCache)

    @classmethod
    def build(cls, store: Store, cfg: Any, clock: Callable[[], int] = wall_ms) -> NodeContext:
        """From a worker config carrying node_name, scan_interval_ms and broker_expired_ms."""
        return cls(store=store, node_name=cfg.node_name, clock=clock, settings=cfg)
