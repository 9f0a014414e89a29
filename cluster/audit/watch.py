"""``pynamesrv audit watch``: the divergence signal of any cluster, printed round by round.

Every ``interval`` each node is asked for its GET_NODE_DIGEST summary, with a
drill-down where they differ (``cluster.core.divergence_watch``). A node that
does not know the code (a Java NameServer: 4.9 never answers it, 5.x answers
REQUEST_CODE_NOT_SUPPORTED) is read through the standard request codes instead
when a reader for them is installed (``FALLBACK``) and compared alike. One line per
round; the differing entries are listed again only when they change. With
``--metrics HOST:PORT`` the same gauges as the supervisor's are served.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any

from prometheus_client import start_http_server
from prometheus_client.core import CollectorRegistry, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from cluster.audit.standard_digest import standard_source
from cluster.core.agreement_history import History
from cluster.core.digest_source import DigestSource, RemoteDigest, Units
from cluster.core.divergence_gauges import divergence_gauges
from cluster.core.divergence_watch import Round, Watch
from cluster.core.node_link import NotAnswering

ORIGIN = "audit"
# name, host, port -> a source reading a node through the standard request codes, or None
FALLBACK: Callable[[str, str, int], DigestSource] | None = standard_source


class FallbackSource:
    """A node's digests, asked with GET_NODE_DIGEST until the node shows it does not know
    the code (REQUEST_CODE_NOT_SUPPORTED, or no answer on a live connection) and a reader
    through the standard codes answers instead; from then on the reader's. A dropped
    connection (a restarted node) only fails that round."""

    def __init__(self, digest: DigestSource, make_fallback: Callable[[], DigestSource] | None,
                 say: Callable[[str], None]) -> None:
        self.name = digest.name
        self.current = digest
        self.make_fallback = make_fallback
        self.say = say

    @property
    def kind(self) -> str:
        return self.current.kind

    def summary(self, timeout: float, heartbeats: bool = False) -> dict[str, Any]:
        try:
            return self.current.summary(timeout, heartbeats)
        except NotAnswering as first:
            if (self.current.kind != "digest" or self.make_fallback is None
                    or not (first.unsupported or first.silent)):
                raise  # a dropped connection says nothing about the codes a node knows
            other = self.make_fallback()
            try:
                doc = other.summary(timeout, heartbeats)
            except NotAnswering:
                other.close()
                raise first from None
            self.say(f"{self.name} does not answer GET_NODE_DIGEST ({first}); "
                     f"reading it through the standard request codes ({other.kind})")
            self.current.close()
            self.current = other
            return doc

    def drill(self, table: str, buckets: frozenset[int], timeout: float) -> Units:
        return self.current.drill(table, buckets, timeout)

    def values(self, table: str, units: Sequence[tuple[str, str]],
               timeout: float) -> list[list[Any]]:
        return self.current.values(table, units, timeout)

    def received(self) -> int:
        return self.current.received()

    def close(self) -> None:
        self.current.close()


@dataclass(frozen=True, slots=True)
class WatchPlan:
    nodes: tuple[tuple[str, str, int], ...]  # (name, host, port)
    interval_s: float
    timeout_s: float
    duration_s: float | None  # None: until interrupted
    rounds: int | None  # None: until the duration or an interrupt
    show: int
    metrics: tuple[str, int] | None


def _sources(plan: WatchPlan, say: Callable[[str], None]) -> dict[str, DigestSource]:
    out: dict[str, DigestSource] = {}
    for name, host, port in plan.nodes:
        fb = FALLBACK
        make = (lambda fb=fb, n=name, h=host, p=port: fb(n, h, p)) if fb is not None else None
        out[name] = FallbackSource(RemoteDigest(name, host, port, ORIGIN), make, say)
    return out


def _size(n: int) -> str:
    return f"{n / 1024:.1f}KiB" if n >= 1024 else f"{n}B"


def round_line(rnd: Round, history: History) -> str:
    c = rnd.comparison
    clock = time.strftime("%H:%M:%S", time.localtime(rnd.at))
    if c.differences:
        parts = ", ".join(f"{t} {n:,}" for t, n in c.by_table.items() if n)
        odd = "; ".join(f"{n} on {k:,}" for n, k in c.per_node.items() if k)
        head = f"DIVERGE {parts} (odd: {odd or 'no majority'})"
    elif len(c.nodes) < 2:
        head = "UNKNOWN fewer than two nodes answered"
    else:
        head = "agree"
    nodes = " ".join(f"{n}:{a.took_s * 1000:.0f}ms/{_size(a.received)}" + (
        "" if a.kind == "digest" else f"({a.kind})") if a.answered else f"{n}:DOWN"
        for n, a in rnd.answers.items())
    since = history.seconds_since_agreement(rnd.at)
    tail = f" | not all agreeing for {since:.0f}s" if since else ""
    return f"{clock} {head} | {nodes}{tail}"


def detail_lines(rnd: Round, show: int) -> Iterator[str]:
    for a in rnd.answers.values():
        if not a.answered:
            yield f"  {a.node} not answering: {a.error}"
    diffs = rnd.comparison.differences
    for d in diffs[:show]:
        what = rnd.note(d) or ("content differs" if d.differs
                               else f"missing on {', '.join(d.missing)}")
        yield f"  {d.table:<7} {d.label}  odd: {', '.join(d.odd)}  {what}"
    if len(diffs) > show:
        yield f"  ... and {len(diffs) - show:,} more"


class WatchCollector(Collector):
    def __init__(self, nodes: list[str]) -> None:
        self.nodes = nodes
        self.lock = threading.Lock()
        self.rnd: Round | None = None
        self.history = History()

    def publish(self, rnd: Round, history: History) -> None:
        with self.lock:
            self.rnd, self.history = rnd, history.copy()

    def collect(self) -> Iterator[Metric]:
        with self.lock:
            rnd, history = self.rnd, self.history
        for g in divergence_gauges(rnd, history, time.time(), self.nodes):
            family = GaugeMetricFamily(g.name, g.help, labels=list(g.labels))
            for labels, value in g.samples:
                family.add_metric(list(labels), value)
            yield family


def watch(plan: WatchPlan, out: IO[str] = sys.stdout) -> int:
    """Rounds until the duration, the round count or an interrupt; 0 when the last round
    agreed (every node answered, nothing differs), else 1."""
    def say(text: str) -> None:
        print(text, file=out, flush=True)

    names = [n for n, _, _ in plan.nodes]
    w = Watch(_sources(plan, say), deadline_s=plan.timeout_s)
    history, collector, server = History(), WatchCollector(names), None
    if plan.metrics is not None:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(collector)
        server, _ = start_http_server(plan.metrics[1], plan.metrics[0], registry=registry)
        say(f"metrics at http://{plan.metrics[0]}:{server.server_port}/metrics")
    end = None if plan.duration_s is None else time.monotonic() + plan.duration_s
    last: tuple[Any, ...] | None = None
    agreed, count = False, 0
    try:
        while True:
            started = time.monotonic()
            rnd = w.round()
            history.add(rnd, names)
            collector.publish(rnd, history)
            say(round_line(rnd, history))
            shape = (tuple((d.table, d.key, d.sub, d.groups) for d in rnd.comparison.differences),
                     tuple(n for n, a in rnd.answers.items() if not a.answered))
            if shape != last:
                for line in detail_lines(rnd, plan.show):
                    say(line)
                last = shape
            agreed = rnd.comparison.agrees and len(rnd.comparison.nodes) == len(names) > 1
            count += 1
            if (plan.rounds is not None and count >= plan.rounds) or (
                    end is not None and time.monotonic() >= end):
                return 0 if agreed else 1
            time.sleep(max(0.0, plan.interval_s - (time.monotonic() - started)))
    finally:
        w.close()
        if server is not None:
            server.shutdown()
            server.server_close()
