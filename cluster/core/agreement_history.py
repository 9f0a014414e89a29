"""Agreement over time: per node (and for the cluster), segments of rounds in one state.

Pure: time comes from the rounds (``Round.at``). A node's state in a round is
``agree`` (answered, odd on no difference), ``diverge`` (odd on at least one),
``silent`` (expected to answer and did not) or ``off`` (not expected: stopped).
The cluster lane (``CLUSTER``) agrees when every expected node answered and no
unit differs. Consecutive rounds in one state form a segment; segments older than
the window are dropped. A divergent segment keeps a sample of its differences
(from its worst round), so past disagreements stay one click away.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from cluster.core.divergence_watch import Round

AGREE, DIVERGE, SILENT, OFF = "agree", "diverge", "silent", "off"
CLUSTER = "*"
WINDOW_S = 3600.0
SAMPLE = 20


@dataclass(frozen=True, slots=True)
class SampleRow:
    table: str
    label: str
    odd: tuple[str, ...]
    note: str


@dataclass(slots=True)
class Segment:
    state: str
    start: float
    end: float
    rounds: int = 1
    worst: int = 0  # most differences in one of its rounds
    sample: tuple[SampleRow, ...] = ()
    reason: str = ""  # why a silent node did not answer (last reason)


@dataclass(slots=True)
class History:
    window_s: float = WINDOW_S
    sample: int = SAMPLE
    lanes: dict[str, list[Segment]] = field(default_factory=dict)
    started_at: float | None = None
    last_agreed_at: float | None = None

    def add(self, rnd: Round, expected: Iterable[str]) -> None:
        expected = set(expected)
        if self.started_at is None:
            self.started_at = rnd.at
        c = rnd.comparison
        silent = [n for n in expected if not (rnd.answers.get(n) and rnd.answers[n].answered)]
        for node in sorted(expected | set(rnd.answers)):
            a = rnd.answers.get(node)
            if a is None or not a.answered:
                reason = (a.error or "") if a is not None else ""
                self._put(node, SILENT if node in expected else OFF, rnd.at, 0, (), reason)
                continue
            n = c.per_node.get(node, 0)
            rows = self._rows(rnd, node) if n else ()
            self._put(node, DIVERGE if n else AGREE, rnd.at, n, rows)
        state = DIVERGE if c.differences else SILENT if silent else AGREE
        if state == AGREE:
            self.last_agreed_at = rnd.at
        self._put(CLUSTER, state, rnd.at, len(c.differences),
                  self._rows(rnd, None) if c.differences else ())
        self._prune(rnd.at)

    def seconds_since_agreement(self, now: float) -> float:
        last = self.lanes.get(CLUSTER)
        if last and last[-1].state == AGREE:
            return 0.0
        since = self.last_agreed_at if self.last_agreed_at is not None else self.started_at
        return 0.0 if since is None else max(0.0, now - since)

    def _rows(self, rnd: Round, node: str | None) -> tuple[SampleRow, ...]:
        out = []
        for d in rnd.comparison.differences:
            if node is None or node in d.odd:
                out.append(SampleRow(d.table, d.label, d.odd, rnd.note(d)))
                if len(out) >= self.sample:
                    break
        return tuple(out)

    def _put(self, lane: str, state: str, at: float, count: int,
             rows: tuple[SampleRow, ...], reason: str = "") -> None:
        segs = self.lanes.setdefault(lane, [])
        if segs and segs[-1].state == state:
            s = segs[-1]
            s.end, s.rounds = at, s.rounds + 1
            if count >= s.worst:
                s.worst, s.sample = count, rows
            s.reason = reason or s.reason
            return
        if segs:
            segs[-1].end = at
        segs.append(Segment(state, at, at, 1, count, rows, reason))

    def _prune(self, now: float) -> None:
        horizon = now - self.window_s
        for lane, segs in self.lanes.items():
            self.lanes[lane] = [s for s in segs if s.end >= horizon]

    def copy(self) -> History:
        """A copy that later ``add`` calls on this one leave alone."""
        lanes = {lane: [replace(s) for s in segs] for lane, segs in self.lanes.items()}
        return History(self.window_s, self.sample, lanes, self.started_at, self.last_agreed_at)
