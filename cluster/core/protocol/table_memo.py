"""Large topic tables read before, by their text (``TableMemo``): the masters of a cluster
register the same table, and the next one's is not read again."""

from __future__ import annotations

import xxhash

from cluster.core.protocol.plain_config import QueueFields
from cluster.core.protocol.register_scan import PlainTable


class TableMemo:
    """Tables of at least ``min_bytes`` that read piece by piece, by their text, with the
    QueueFields they read as; at most ``max_bytes`` of text, the oldest forgotten first. The
    masters of a cluster register the same table (a topic made on the cluster is made on
    each of them): the next one's is found by its text, compared whole, and not read again.
    """

    __slots__ = ("held", "size", "min_bytes", "max_bytes")

    def __init__(self, min_bytes: int, max_bytes: int) -> None:
        self.held: dict[bytes, tuple[bytes, dict[str, QueueFields]]] = {}
        self.size = 0
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes

    def _key(self, table: PlainTable) -> tuple[bytes, int, int] | None:
        span = table.span()
        if span is None or not self.min_bytes <= span[1] - span[0] <= self.max_bytes:
            return None
        return xxhash.xxh3_128_digest(memoryview(table.body())[span[0] : span[1]]), *span

    def get(self, table: PlainTable) -> dict[str, QueueFields] | None:
        """What a table of the same text read as (a copy: the caller may edit it), or None."""
        key = self._key(table)
        if key is None:
            return None
        digest, start, end = key
        held = self.held.get(digest)
        if held is None or len(held[0]) != end - start \
                or not table.body().startswith(held[0], start):
            return None
        table.read_as_pieces()
        return dict(held[1])

    def keep(self, table: PlainTable, queues: dict[str, QueueFields]) -> None:
        """Keep what ``table`` (read piece by piece) read as."""
        key = self._key(table)
        if key is None:
            return
        digest, start, end = key
        old = self.held.pop(digest, None)
        if old is not None:
            self.size -= len(old[0])
        while self.held and self.size + end - start > self.max_bytes:
            self.size -= len(self.held.pop(next(iter(self.held)))[0])
        self.held[digest] = (table.body()[start:end], dict(queues))
        self.size += end - start
