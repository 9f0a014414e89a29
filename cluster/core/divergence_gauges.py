"""The divergence signal as Prometheus gauges, in plain values (no client library here).

The supervisor's ``/metrics`` and ``audit watch --metrics`` both serve these, so the
alert rules in ``docs/prometheus/alerts.yml`` work on either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cluster.core.agreement_history import History
from cluster.core.divergence_watch import Round
from cluster.core.protocol.digest_body import TABLES


@dataclass(frozen=True, slots=True)
class Gauge:
    name: str
    help: str
    labels: tuple[str, ...] = ()
    samples: Sequence[tuple[tuple[str, ...], float]] = ()


def divergence_gauges(rnd: Round | None, history: History, now: float,
                      nodes: list[str]) -> list[Gauge]:
    """Gauges of the last round (none before the first) and of the history at ``now``."""
    since = Gauge("pynamesrv_divergence_since_agreement_seconds", "seconds since every node "
                  "expected to answer last answered with the same tables (0: they do now)",
                  samples=[((), history.seconds_since_agreement(now))])
    if rnd is None:
        return [since]
    c = rnd.comparison
    per_table = [((t,), float(c.by_table.get(t, 0))) for t in TABLES]
    answering = [((n,), 1.0 if (a := rnd.answers.get(n)) is not None and a.answered else 0.0)
                 for n in nodes]
    return [
        since,
        Gauge("pynamesrv_divergence_compared_nodes", "nodes whose tables the last round "
              "compared", samples=[((), float(len(c.nodes)))]),
        Gauge("pynamesrv_divergence_entries", "entries (the audit's keys: topic/broker, "
              "namespace/key, ...) not held alike by every compared node", ("table",),
              per_table),
        Gauge("pynamesrv_divergence_topics", "topics with an entry in disagreement",
              samples=[((), float(c.topics))]),
        Gauge("pynamesrv_divergence_brokers", "broker names whose broker entry or topic "
              "queue data is in disagreement", samples=[((), float(c.brokers))]),
        Gauge("pynamesrv_divergence_node_entries", "entries on which the node is outside the "
              "majority of the compared nodes", ("node",),
              [((n,), float(c.per_node.get(n, 0))) for n in nodes]),
        Gauge("pynamesrv_divergence_node_answering", "1 when the node answered the last "
              "round's digest request", ("node",), answering),
        Gauge("pynamesrv_divergence_node_reply_bytes", "bytes the last round read from the "
              "node", ("node",), [((n,), float(a.received)) for n in nodes
                                  if (a := rnd.answers.get(n)) is not None]),
        Gauge("pynamesrv_divergence_round_seconds", "time the last divergence round took",
              samples=[((), rnd.took_s)]),
    ]
