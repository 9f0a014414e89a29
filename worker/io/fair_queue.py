"""Fair queueing of one I/O worker's requests: per peer address, then per connection.

Start-time fair queueing on two levels. The peer addresses with queued work take
turns in virtual time: each is charged the cost of what it was served (``cost``, the
business pool time the request is expected to take), and the one whose turn starts
first goes next. Within an address its connections take turns the same way. A
client that pipelines thousands of expensive requests is served its share and no
more: a request of a connection that had nothing queued starts at the current
virtual time, ahead of the next request of every backlogged connection, so it waits
for about one request of each other busy address, never for a backlog.

A connection is *parked* while its replies cannot be written (its peer reads
nothing): its queue is passed over, so no work is done for replies that would only
pile up, until it is unparked. ``discard`` drops the queue of a closed connection
before anything of it runs.

Pure: no sockets, no clock.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterator
from typing import Any


class _Flow:
    """One connection's queue of (item, cost)."""

    __slots__ = ("conn", "group", "items", "finish", "entry", "parked")

    def __init__(self, conn: bytes, group: _Group) -> None:
        self.conn = conn
        self.group = group
        self.items: deque[tuple[Any, int]] = deque()
        self.finish = 0  # virtual finish time of its last request served (its group's clock)
        self.entry = 0  # sequence number of its live entry in its group's heap; 0: none
        self.parked = False


class _Group:
    """One peer address: its connections' flows, taking turns in the group's own clock."""

    __slots__ = ("address", "heap", "flows", "count", "vtime", "finish", "entry")

    def __init__(self, address: str) -> None:
        self.address = address
        self.heap: list[tuple[int, int, _Flow]] = []  # (start tag, entry, flow)
        self.flows = 0  # flows of this address that exist
        self.count = 0  # items queued
        self.vtime = 0
        self.finish = 0
        self.entry = 0  # its live entry in the queue's heap; 0: none


class FairQueue:
    """Items queued per connection, handed out fairly per address and connection."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, _Group]] = []
        self._groups: dict[str, _Group] = {}
        self._flows: dict[bytes, _Flow] = {}
        self._vtime = 0
        self._seq = 0
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0

    def __iter__(self) -> Iterator[Any]:
        """Every queued item (parked ones included), in no particular order."""
        for flow in self._flows.values():
            for item, _ in flow.items:
                yield item

    def queued(self, conn: bytes) -> int:
        flow = self._flows.get(conn)
        return 0 if flow is None else len(flow.items)

    # -- in -------------------------------------------------------------------

    def push(self, conn: bytes, address: str, item: Any, cost: int) -> None:
        flow = self._flow(conn, address)
        flow.items.append((item, max(1, cost)))
        flow.group.count += 1
        self.count += 1
        if len(flow.items) == 1 and not flow.parked:
            self._activate(flow)

    def _flow(self, conn: bytes, address: str) -> _Flow:
        flow = self._flows.get(conn)
        if flow is None:
            group = self._groups.get(address)
            if group is None:
                group = self._groups[address] = _Group(address)
            group.flows += 1
            flow = self._flows[conn] = _Flow(conn, group)
        return flow

    def _activate(self, flow: _Flow) -> None:
        g = flow.group
        self._seq += 1
        flow.entry = self._seq
        heapq.heappush(g.heap, (max(g.vtime, flow.finish), flow.entry, flow))
        if not g.entry:
            self._seq += 1
            g.entry = self._seq
            heapq.heappush(self._heap, (max(self._vtime, g.finish), g.entry, g))

    # -- out ------------------------------------------------------------------

    def peek(self) -> tuple[Any, int] | None:
        """The (item, cost) ``pop`` would hand out, or None when nothing can be."""
        head = self._head()
        return None if head is None else head[1].items[0]

    def pop(self) -> Any:
        """The next item by fair share; None when nothing can be handed out."""
        head = self._head()
        if head is None:
            return None
        g, flow = head
        gstart, fstart = self._heap[0][0], g.heap[0][0]
        item, cost = flow.items.popleft()
        self.count -= 1
        g.count -= 1
        heapq.heappop(g.heap)
        g.vtime, flow.finish = fstart, fstart + cost
        flow.entry = 0
        if flow.items:
            self._activate_in_group(flow)
        heapq.heappop(self._heap)
        self._vtime, g.finish = gstart, gstart + cost
        g.entry = 0
        if self._head_flow(g) is not None:
            self._seq += 1
            g.entry = self._seq
            heapq.heappush(self._heap, (g.finish, g.entry, g))
        return item

    def _activate_in_group(self, flow: _Flow) -> None:
        self._seq += 1
        flow.entry = self._seq
        heapq.heappush(flow.group.heap, (flow.finish, flow.entry, flow))

    def _head(self) -> tuple[_Group, _Flow] | None:
        heap = self._heap
        while heap:
            _, entry, g = heap[0]
            if entry == g.entry:
                flow = self._head_flow(g)
                if flow is not None:
                    return g, flow
                g.entry = 0
            heapq.heappop(heap)
        return None

    @staticmethod
    def _head_flow(g: _Group) -> _Flow | None:
        heap = g.heap
        while heap:
            flow = heap[0][2]
            if heap[0][1] == flow.entry:
                return flow
            heapq.heappop(heap)
        return None

    # -- connections ----------------------------------------------------------

    def park(self, conn: bytes, address: str) -> None:
        """Pass over ``conn``'s queue (and what it queues later) until ``unpark``."""
        flow = self._flow(conn, address)
        flow.parked = True
        flow.entry = 0

    def unpark(self, conn: bytes) -> None:
        flow = self._flows.get(conn)
        if flow is not None and flow.parked:
            flow.parked = False
            if flow.items:
                self._activate(flow)

    def discard(self, conn: bytes) -> list[Any]:
        """Forget ``conn`` (closed): its queued items, which nothing will run."""
        flow = self._flows.pop(conn, None)
        if flow is None:
            return []
        flow.entry = 0
        g = flow.group
        items = [item for item, _ in flow.items]
        self.count -= len(items)
        g.count -= len(items)
        g.flows -= 1
        if not g.flows:
            del self._groups[g.address]
            g.entry = 0
        return items

    def heaviest(self) -> tuple[bytes, int] | None:
        """(connection, items queued) of the longest queue of the address with the most
        queued: the one to refuse work when the I/O worker's queue is full."""
        if not self._groups:
            return None
        g = max(self._groups.values(), key=lambda grp: grp.count)
        flows = [f for f in self._flows.values() if f.group is g]
        flow = max(flows, key=lambda f: len(f.items))
        return flow.conn, len(flow.items)

    def evict_newest(self, conn: bytes) -> Any:
        """Take back the last item ``conn`` queued (it will be refused); None if none."""
        flow = self._flows.get(conn)
        if flow is None or not flow.items:
            return None
        item, _ = flow.items.pop()
        self.count -= 1
        flow.group.count -= 1
        if not flow.items:
            flow.entry = 0
        return item
