"""The address service's loop: read the nodes, decide who is listed, publish the lists.

Every ``period_s`` it takes the cluster's nodes from its source, reads the running
ones with ``cluster.audit.reader`` (a pynamesrv node by its snapshot, any other
NameServer through RocketMQ's own codes within the reader's budget), turns the reads
into ``membership`` decisions and publishes two lists:

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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cluster.addr.membership import Membership, NodeState, NodeView
from cluster.addr.sources import Candidate, NodeSource
from cluster.audit import standard_view as sv
from cluster.audit.reader import ClusterReader, NodeRead, ReadLimits

log = logging.getLogger("pynamesrv.addr")


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


@dataclass
class AddressService:
    source: NodeSource
    limits: ReadLimits
    diverged_after_s: float
    period_s: float
    clock: Callable[[], float] = time.time
    published: Published = field(default_factory=Published)

    def __post_init__(self) -> None:
        self.membership = Membership(self.diverged_after_s)
        self.reader = ClusterReader({}, self.limits, origin="addr")

    def step(self) -> Published:
        started = time.monotonic()
        cands = self.source.candidates()
        self.reader.set_nodes({c.name: c.addr for c in cands if c.runs})
        reads = self.reader.read_round() if any(c.runs for c in cands) else {}
        views = [_view(c, reads.get(c.name), self.limits.namespaces) for c in cands]
        now = self.clock()
        states = self.membership.update(views, now)
        _log_changes(states, now)
        self.published = Published(
            clients=tuple(s.addr for s in states if s.listed),
            brokers=tuple(c.addr for c in cands),
            nodes=tuple(_state_json(s, c, reads.get(c.name))
                        for s, c in zip(states, cands, strict=True)),
            at=now, step_s=time.monotonic() - started)
        return self.published

    def run(self, stop: threading.Event) -> None:
        """Steps every ``period_s`` until ``stop`` is set."""
        while not stop.is_set():
            began = time.monotonic()
            self.step()
            stop.wait(max(0.0, self.period_s - (time.monotonic() - began)))

    def close(self) -> None:
        self.reader.close()
        self.source.close()


def _log_changes(states: list[NodeState], now: float) -> None:
    for s in states:
        if s.since == now:
            log.warning("event=%s node=%s addr=%s reason=%r",
                        "listed" if s.listed else "unlisted", s.name, s.addr, s.reason)


def _view(c: Candidate, read: NodeRead | None, namespaces: tuple[str, ...]) -> NodeView:
    if not c.runs:
        return NodeView(c.name, c.addr, None, f"{c.state} (supervisor)")
    if read is None or read.snapshot is None:
        return NodeView(c.name, c.addr, None,
                        f"not answering: {read.error if read else 'not read'}")
    tables = sv.project(read.snapshot["tables"], namespaces)
    return NodeView(c.name, c.addr, tables)


def _state_json(s: NodeState, c: Candidate, read: NodeRead | None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": s.name, "addr": s.addr, "state": c.state,
                           "listed": s.listed, "since": s.since, "reason": s.reason,
                           "differing": len(s.differing)}
    if read is not None:
        out.update(kind=read.kind.value if read.kind else None, requests=read.requests,
                   bytes=read.sent_bytes + read.received_bytes)
    return out
