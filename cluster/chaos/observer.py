"""The chaos snapshot observer: each node asked by a thread of its own, rounds kept whole.

Every ``interval`` a round starts: each node whose previous snapshot request has
come back is asked again, on its own thread; a node still busy with an earlier
request (paused, cut off) gets an unavailable entry for this round at once, so a
silent node never costs the other nodes their samples. A round goes to ``sink``
(the audit input) once every node has its entry, rounds in order. The final
round, after the workload's writers stopped, waits for every node and asks for
the KV tables too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from cluster.chaos.audit import Observed
from cluster.core.clock import wall_ms

Fetch = Callable[[str, str, bool], Observed]  # (node, addr, with_kv) -> one answer
Sink = Callable[[int, list[Observed]], object]  # (round, one entry per node)


class RoundBook:
    """Entries per round; a round leaves through ``sink`` when complete, in round order."""

    def __init__(self, nodes: Sequence[str], sink: Sink) -> None:
        self._nodes = list(nodes)
        self._sink = sink
        self._rounds: dict[int, dict[str, Observed]] = {}
        self._next = 0
        self._lock = threading.Lock()

    def put(self, round_no: int, observed: Observed) -> None:
        with self._lock:  # the sink runs under the lock, so rounds leave in order
            self._rounds.setdefault(round_no, {})[observed.node] = observed
            while len(entries := self._rounds.get(self._next, {})) == len(self._nodes):
                del self._rounds[self._next]
                self._sink(self._next, [entries[n] for n in self._nodes])
                self._next += 1

    @property
    def pending(self) -> int:
        """Rounds started and not complete yet."""
        with self._lock:
            return len(self._rounds)


class Observer:
    """Rounds of snapshots; ``fetch`` runs on one thread per node."""

    def __init__(self, nodes: Mapping[str, str], fetch: Fetch, sink: Sink,
                 interval_s: float, kv_every_rounds: int) -> None:
        self.nodes = dict(nodes)
        self.fetch = fetch
        self.book = RoundBook(list(self.nodes), sink)
        self.interval_s = interval_s
        self.kv_every_rounds = kv_every_rounds
        self.rounds = 0
        self._pools = {n: ThreadPoolExecutor(1, thread_name_prefix=f"chaos-observe-{n}")
                       for n in self.nodes}
        self._asked: dict[str, tuple[Future[None], float]] = {}

    def run(self, stop: threading.Event) -> None:
        """Rounds every ``interval_s`` until ``stop``, then the final round; always cleans up."""
        try:
            while not stop.is_set():
                self.start_round(self.rounds % self.kv_every_rounds == 0)
                stop.wait(self.interval_s)
            self.wait_idle()
            self.start_round(with_kv=True)
            self.wait_idle()
        finally:
            for pool in self._pools.values():
                pool.shutdown(wait=True, cancel_futures=True)

    def start_round(self, with_kv: bool) -> int:
        """Ask every idle node; a busy one is unavailable in this round. Returns the round."""
        round_no, self.rounds = self.rounds, self.rounds + 1
        now = time.monotonic()
        for node, addr in self.nodes.items():
            asked = self._asked.get(node)
            if asked is not None and not asked[0].done():
                self.book.put(round_no, Observed(node, wall_ms(), error=(
                    f"no answer yet to the snapshot asked {now - asked[1]:.1f}s ago")))
                continue
            future = self._pools[node].submit(self._one, round_no, node, addr, with_kv)
            self._asked[node] = (future, now)
        return round_no

    def _one(self, round_no: int, node: str, addr: str, with_kv: bool) -> None:
        try:
            observed = self.fetch(node, addr, with_kv)
        except Exception as exc:  # the round must complete whatever the fetch did
            observed = Observed(node, wall_ms(), error=f"{type(exc).__name__}: {exc}")
        self.book.put(round_no, observed)

    def wait_idle(self) -> None:
        """Until every node's last request came back (each is bounded by its timeout)."""
        for future, _ in list(self._asked.values()):
            future.result()
