"""NodeContext: what a business worker's request processors need, built once per process."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cluster.core.clock import wall_ms
from cluster.core.protocol.dialect import DEFAULT, Dialect
from state import nsconfig
from state.digest import DigestCache
from state.store import Store
from worker.acl import AclGuard, guard_of

STARTED_AT = "started_at"  # meta table: when the node created its state (ms)
ROUTE_CACHE_BYTES = 16 << 20  # encoded route bodies per business worker (the I/O worker keeps more)


@dataclass(slots=True)
class RouteCache:
    """Route bodies and broker entries of one store generation.

    Everything is dropped when the generation moves (any route change). Bodies
    are bounded in bytes; when full, the oldest eighth is evicted.
    """

    generation: int = -1
    max_bytes: int = ROUTE_CACHE_BYTES
    size: int = 0
    bodies: dict[tuple[Any, ...], bytes] = field(default_factory=dict)
    brokers: dict[str, Any] = field(default_factory=dict)

    def get(self, generation: int, key: tuple[Any, ...]) -> bytes | None:
        if generation != self.generation:
            self.generation = generation
            self.bodies.clear()
            self.brokers.clear()
            self.size = 0
            return None
        return self.bodies.get(key)

    def keep(self, generation: int, key: tuple[Any, ...], build: Callable[[], bytes | None]
             ) -> bytes | None:
        """The body under ``key``, built (unless None) and kept when missing. Whole-table
        replies are kept with the route bodies until the generation moves (any change of
        the tables they show): a client asking again and again for the topic list, a
        namespace or the cluster costs one encoding per change."""
        body = self.get(generation, key)
        if body is None:
            body = build()
            if body is not None:
                self.put(key, body)
        return body

    def put(self, key: tuple[Any, ...], body: bytes) -> None:
        if self.size + len(body) > self.max_bytes:
            self._evict()
        self.bodies[key] = body
        self.size += len(body)

    def _evict(self) -> None:
        victims = list(self.bodies)[: max(1, len(self.bodies) // 8)]
        for k in victims:
            self.size -= len(self.bodies.pop(k))


@dataclass(slots=True)
class NodeContext:
    store: Store
    node_name: str
    clock: Callable[[], int]
    route_cache: RouteCache = field(default_factory=RouteCache)
    acl: AclGuard | None = None  # None: ACL off (aclEnable=false)
    dialect: Dialect = DEFAULT  # the release the node follows (rocketmqVersion)
    started_at: int = 0  # ms: when the node started (5.x needWaitForService)
    digest_cache: DigestCache = field(default_factory=DigestCache)

    @classmethod
    def build(cls, store: Store, cfg: Any, clock: Callable[[], int] = wall_ms) -> NodeContext:
        """From a worker config carrying node_name; the release and the node's start time
        from the shared state."""
        with store.read() as t:
            dialect = nsconfig.dialect(t)
            started_at = t.get("meta", STARTED_AT) or 0
        return cls(store=store, node_name=cfg.node_name, clock=clock, acl=guard_of(store),
                   dialect=dialect, started_at=started_at)
