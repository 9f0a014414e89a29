"""Divergence rounds: every node's digest summary, a drill-down where they differ, notes.

One ``Watch.round`` asks every source for its summary in parallel (each within
the deadline), drills into the buckets whose digests differ, compares the units
and, for the first ``describe_max`` units whose content differs, asks the nodes
for the values and says what differs. Drilled buckets are kept with their digest
and asked again only when a node's bucket digest moves, and notes are kept while
their difference lasts, so a divergence that stays costs one summary per node and
round. A node whose drill-down fails is left out of that round's comparison.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from cluster.core.digest_source import DigestSource, Units
from cluster.core.divergence import (
    Comparison,
    Difference,
    compare_units,
    compared_tables,
    describe,
    mismatched_buckets,
)
from cluster.core.node_link import NotAnswering
from cluster.core.protocol.digest_body import bucket_of

DESCRIBE_MAX = 50
MAX_PARALLEL = 32
NoteKey = tuple[str, str, str, tuple[tuple[str | None, tuple[str, ...]], ...]]
Unit = tuple[str, str, str]  # (table, key, sub)


@dataclass(frozen=True, slots=True)
class NodeAnswer:
    node: str
    error: str | None = None
    summary: Mapping[str, Any] | None = None
    took_s: float = 0.0
    received: int = 0  # reply bytes read from the node this round
    kind: str = "digest"

    @property
    def answered(self) -> bool:
        return self.error is None


@dataclass(frozen=True, slots=True)
class Round:
    at: float  # epoch seconds, when the round started
    answers: dict[str, NodeAnswer]
    comparison: Comparison
    notes: dict[Unit, str] = field(default_factory=dict)
    took_s: float = 0.0

    def note(self, d: Difference) -> str:
        return self.notes.get((d.table, d.key, d.sub), "")


class Watch:
    def __init__(self, sources: Mapping[str, DigestSource], *, deadline_s: float,
                 heartbeats: bool = False, describe_max: int = DESCRIBE_MAX,
                 clock: Callable[[], float] = time.time) -> None:
        self.sources = dict(sources)
        self.deadline_s = deadline_s
        self.heartbeats = heartbeats
        self.describe_max = describe_max
        self.clock = clock
        self._pool = ThreadPoolExecutor(min(MAX_PARALLEL, max(1, len(sources))),
                                        thread_name_prefix="digest")
        self._drilled: dict[tuple[str, str, int], tuple[str, Units]] = {}
        self._notes: dict[NoteKey, str] = {}
        # the summaries' digests, comparison and notes of the last round
        self._last: tuple[tuple[Any, ...], Comparison, dict[Unit, str]] | None = None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        for s in self.sources.values():
            s.close()

    def round(self, names: Sequence[str] | None = None) -> Round:
        """One round over ``names`` (default: every source)."""
        at, t0 = self.clock(), time.monotonic()
        wanted = [n for n in (names if names is not None else self.sources) if n in self.sources]
        before = {n: self.sources[n].received() for n in wanted}
        answers = dict(zip(wanted, self._pool.map(self._summary, wanted), strict=True))
        summaries = {n: a.summary for n, a in answers.items() if a.summary is not None}
        failed = self._drill_all(summaries)
        for node, reason in failed.items():
            answers[node] = NodeAnswer(node, f"drill-down: {reason}", None,
                                       answers[node].took_s, kind=answers[node].kind)
            summaries.pop(node)
        comparison, notes = self._compared(summaries)
        answers = {n: _with_bytes(a, self.sources[n].received() - before[n])
                   for n, a in answers.items()}
        return Round(at, answers, comparison, notes, time.monotonic() - t0)

    # ------------------------------------------------------------------ phases

    def _summary(self, node: str) -> NodeAnswer:
        src = self.sources[node]
        t0 = time.monotonic()
        try:
            doc = src.summary(self.deadline_s, self.heartbeats)
        except NotAnswering as exc:
            return NodeAnswer(node, str(exc), None, time.monotonic() - t0, kind=src.kind)
        except Exception as exc:  # a reader's defect must not stop the watch
            return NodeAnswer(node, f"{type(exc).__name__}: {exc}", None,
                              time.monotonic() - t0, kind=src.kind)
        return NodeAnswer(node, None, doc, time.monotonic() - t0, kind=src.kind)

    def _drill_all(self, summaries: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
        """Fill the drill cache for every mismatched bucket; returns the nodes that failed."""
        wanted = mismatched_buckets(summaries)
        keep = {(n, t, b) for n in summaries for t, bs in wanted.items() for b in bs}
        for k in [k for k in self._drilled if k not in keep]:
            del self._drilled[k]
        jobs = {n: self._pool.submit(self._drill_node, n, summaries[n], wanted)
                for n in summaries if wanted}
        return {n: err for n, f in jobs.items() if (err := f.result()) is not None}

    def _drill_node(self, node: str, summary: Mapping[str, Any],
                    wanted: Mapping[str, frozenset[int]]) -> str | None:
        try:
            for table, buckets in wanted.items():
                digests = summary["tables"][table].get("buckets") or {}
                stale = frozenset(b for b in buckets if (cached := self._drilled.get(
                    (node, table, b))) is None or cached[0] != digests.get(str(b), ""))
                empty = frozenset(b for b in stale if str(b) not in digests)
                self._store(node, table, empty, digests, {})
                stale -= empty
                if stale:
                    units = self.sources[node].drill(table, stale, self.deadline_s)
                    self._store(node, table, stale, digests, units)
        except NotAnswering as exc:
            return str(exc)
        return None

    def _store(self, node: str, table: str, buckets: frozenset[int],
               digests: Mapping[str, str], units: Units) -> None:
        split: dict[int, Units] = {b: {} for b in buckets}
        for key, subs in units.items():
            split.setdefault(bucket_of(key), {})[key] = subs
        for b in buckets:
            self._drilled[(node, table, b)] = (digests.get(str(b), ""), split[b])

    def _compared(self, summaries: Mapping[str, Mapping[str, Any]]
                  ) -> tuple[Comparison, dict[Unit, str]]:
        """The comparison and notes of these summaries; those of the last round when no
        node's digests moved since and its notes were all had (a lasting divergence of
        100,000 entries is then not compared again every round)."""
        shape = tuple((n, t, doc.get("digest"), tuple(sorted((doc.get("buckets") or {}).items())))
                      for n, s in summaries.items() for t, doc in s["tables"].items())
        if self._last is not None and self._last[0] == shape:
            return self._last[1], self._last[2]
        comparison = self._compare(summaries)
        notes = self._describe(comparison.differences)
        described = [(d.table, d.key, d.sub) for d in comparison.differences if d.differs]
        complete = all(k in notes for k in described[: self.describe_max])
        self._last = (shape, comparison, notes) if complete else None
        return comparison, notes

    def _compare(self, summaries: Mapping[str, Mapping[str, Any]]) -> Comparison:
        nodes = list(summaries)
        tables = compared_tables(summaries) if nodes else ()
        wanted = mismatched_buckets(summaries)
        found: list[Difference] = []
        for table, buckets in wanted.items():
            per_node: dict[str, dict[str, Mapping[str, str]]] = {n: {} for n in nodes}
            for n in nodes:
                for b in buckets:
                    per_node[n].update(self._drilled[(n, table, b)][1])
            found += compare_units(table, per_node)
        order = {t: i for i, t in enumerate(tables)}
        found.sort(key=lambda d: (order.get(d.table, 99), d.key, d.sub))
        return Comparison.of(nodes, tables, found)

    def _describe(self, differences: Sequence[Difference]) -> dict[Unit, str]:
        """Notes for the differences whose content differs, the first ``describe_max``."""
        keys = {_note_key(d): d for d in differences if d.differs}
        self._notes = {k: v for k, v in self._notes.items() if k in keys}
        todo = [d for k, d in keys.items() if k not in self._notes][: self.describe_max]
        if todo:
            self._fetch_notes(todo)
        return {(k[0], k[1], k[2]): v for k, v in self._notes.items()}

    def _fetch_notes(self, todo: Sequence[Difference]) -> None:
        asks: dict[str, dict[str, list[tuple[str, str]]]] = {}
        for d in todo:
            for n in d.present:
                asks.setdefault(n, {}).setdefault(d.table, []).append((d.key, d.sub))
        jobs = {n: self._pool.submit(self._values_of, n, per) for n, per in asks.items()}
        got: dict[Unit, dict[str, Any]] = {}
        for node, job in jobs.items():
            for table, key, sub, value in job.result():
                got.setdefault((table, key, sub), {})[node] = value
        for d in todo:
            values = got.get((d.table, d.key, d.sub), {})
            if set(values) == set(d.present):
                self._notes[_note_key(d)] = describe(values)

    def _values_of(self, node: str, per_table: Mapping[str, list[tuple[str, str]]]
                   ) -> list[tuple[str, str, str, Any]]:
        out = []
        try:
            for table, units in per_table.items():
                for key, sub, value in self.sources[node].values(table, units, self.deadline_s):
                    out.append((table, key, sub, value))
        except NotAnswering:
            return []
        return out


def _note_key(d: Difference) -> NoteKey:
    return (d.table, d.key, d.sub, d.groups)


def _with_bytes(a: NodeAnswer, received: int) -> NodeAnswer:
    return NodeAnswer(a.node, a.error, a.summary, a.took_s, received, a.kind)
