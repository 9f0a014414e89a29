"""The address service's loop: compare the nodes, decide who is listed, publish the lists.

Every ``period_s`` it takes the cluster's nodes from its source and compares the
running ones with a divergence round (``cluster.core.divergence_watch``): a pynamesrv
node sends digests of its tables (GET_NODE_DIGEST, a few KB a round while nothing
changes, a drill-down where nodes differ); a node that does not know that code (a
Java NameServer) is read with ``cluster.audit.reader`` instead (RocketMQ's own request
codes, within the reader's budget) and digested here. The entries clients read
(clusters, brokers, topic routes, filter servers, the KV namespaces given) go into
``membership``, which decides who is listed. Two lists are published:

* ``clients``: the nodes a producer, consumer or admin tool should use: running,
  answering, agreeing with the majority;
* ``brokers``: every node of the cluster. A broker must register with all of them,
  the lagging ones above all: a node that is not listed catches up only through the
  brokers' registrations.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cluster.addr.membership import Membership, NodeState, NodeView
from cluster.addr.sources import Candidate, NodeSource
from cluster.audit.reader import ReadLimits
from cluster.audit.standard_digest import standard_source
from cluster.audit.watch import FallbackSource
from cluster.client.connection import parse_addr
from cluster.core.digest_source import DigestSource, RemoteDigest
from cluster.core.divergence import Difference
from cluster.core.divergence_watch import NodeAnswer, Round, Watch

log = logging.getLogger("pynamesrv.addr")
ORIGIN = "addr"
CLIENT_TABLES = frozenset({"cluster", "broker", "topic", "filter"})  # and kv, by namespace


@dataclass(frozen=True)
class Published:
    """What the HTTP side serves; replaced whole at each step."""

    clients: tuple[str, ...] = ()
    brokers: tuple[str, ...] = ()
    nodes: tuple[dict[str, Any], ...] = ()
    at: float = 0.0
    step_s: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {"clients": list(self.clients), "brokers": list(self.brokers),
                "nodes": list(self.nodes), "at": self.at, "step_s": round(self.step_s, 3)}


def node_source(name: str, addr: str, limits: ReadLimits) -> DigestSource:
    """GET_NODE_DIGEST, else the audit's reader (``audit watch``'s fallback)."""
    host, port = parse_addr(addr)
    return FallbackSource(RemoteDigest(name, host, port, ORIGIN),
                          lambda: standard_source(name, host, port, ORIGIN, limits),
                          lambda text: log.info("event=read_kind %s", text))


@dataclass
class AddressService:
    source: NodeSource
    limits: ReadLimits
    diverged_after_s: float
    period_s: float
    clock: Callable[[], float] = time.time
    make_source: Callable[[str, str, ReadLimits], DigestSource] = node_source
    published: Published = field(default_factory=Published)

    def __post_init__(self) -> None:
        self.membership = Membership(self.diverged_after_s)
        self._watch: Watch | None = None
        self._watched: dict[str, str] = {}

    def step(self) -> Published:
        started = time.monotonic()
        cands = self.source.candidates()
        running = {c.name: c.addr for c in cands if c.runs}
        rnd = self._round(running)
        answers = rnd.answers if rnd is not None else {}
        views = [_view(c, answers.get(c.name)) for c in cands]
        diffs = [] if rnd is None else self._client_entries(rnd.comparison.differences)
        now = self.clock()
        states = self.membership.update(views, diffs, now)
        _log_changes(states, now)
        self.published = Published(
            clients=tuple(s.addr for s in states if s.listed),
            brokers=tuple(c.addr for c in cands),
            nodes=tuple(_state_json(s, c, answers.get(c.name))
                        for s, c in zip(states, cands, strict=True)),
            at=now, step_s=time.monotonic() - started)
        return self.published

    def _round(self, running: dict[str, str]) -> Round | None:
        """A divergence round over the running nodes (a new watch when they changed)."""
        if running != self._watched:
            if self._watch is not None:
                self._watch.close()
            self._watch = None
            if running:
                self._watch = Watch({n: self.make_source(n, a, self.limits)
                                     for n, a in running.items()},
                                    deadline_s=self.limits.timeout_s, clock=self.clock)
            self._watched = dict(running)
        return None if self._watch is None else self._watch.round()

    def _client_entries(self, differences: Sequence[Difference]) -> list[Difference]:
        ns = set(self.limits.namespaces)
        return [d for d in differences
                if d.table in CLIENT_TABLES or (d.table == "kv" and d.key in ns)]

    def run(self, stop: threading.Event) -> None:
        """Steps every ``period_s`` until ``stop`` is set."""
        while not stop.is_set():
            began = time.monotonic()
            self.step()
            stop.wait(max(0.0, self.period_s - (time.monotonic() - began)))

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
        self.source.close()


def _log_changes(states: list[NodeState], now: float) -> None:
    for s in states:
        if s.since == now:
            log.warning("event=%s node=%s addr=%s reason=%r",
                        "listed" if s.listed else "unlisted", s.name, s.addr, s.reason)


def _view(c: Candidate, answer: NodeAnswer | None) -> NodeView:
    if not c.runs:
        return NodeView(c.name, c.addr, False, f"{c.state} (supervisor)")
    if answer is None or not answer.answered:
        return NodeView(c.name, c.addr, False,
                        f"not answering: {answer.error if answer else 'not read'}")
    return NodeView(c.name, c.addr, True)


def _state_json(s: NodeState, c: Candidate, answer: NodeAnswer | None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": s.name, "addr": s.addr, "state": c.state,
                           "listed": s.listed, "since": s.since, "reason": s.reason,
                           "differing": len(s.differing)}
    if answer is not None:
        out.update(read=answer.kind, took_s=round(answer.took_s, 3), bytes=answer.received)
    return out
