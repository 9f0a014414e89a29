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
from worker.business.acl.guard import AclGuard, guard_of
from worker.generation_cache import GenerationCache

STARTED_AT = "started_at"  # meta table: when the node created its state (ms)
ROUTE_CACHE_BYTES = 16 << 20  # encoded route bodies per business worker (the I/O worker keeps more)
ENTRY_BYTES = 160  # what an entry costs beyond its body: the key, the dict slot, the object
COMPACT_BELOW = 64 << 10  # bodies shorter than this are kept as a copy of their own size


class RouteCache(GenerationCache[int, tuple[Any, ...], bytes]):
    """Route bodies and broker entries of one store generation, the bodies bounded in bytes
    (``worker.generation_cache``)."""

    __slots__ = ("brokers",)

    def __init__(self, max_bytes: int = ROUTE_CACHE_BYTES) -> None:
        super().__init__(max_bytes, generation=-1)
        self.brokers: dict[str, Any] = {}

    @property
    def bodies(self) -> dict[tuple[Any, ...], bytes]:
        return self.entries

    def clear(self) -> None:
        super().clear()
        self.brokers.clear()

    def cost_of(self, key: tuple[Any, ...], value: bytes) -> int:
        return len(value) + ENTRY_BYTES

    def get(self, generation: int, key: tuple[Any, ...]) -> bytes | None:
        if generation != self.generation:
            self.renew(generation)
            return None
        return self.entries.get(key)

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
        """Keep ``body``; a short one as a copy: orjson's output holds at least 4 KiB
        whatever its length (70,000 route bodies of 300 bytes took 200 MB, not 20)."""
        if len(body) < COMPACT_BELOW:
            body = bytes(memoryview(body))
        self.add(key, body, self.cost_of(key, body))


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
