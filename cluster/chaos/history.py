"""Append-only history of a chaos run: one JSON object per line.

Each record is an ``Op``: when it completed (``t``) and began (``start``), in
seconds from the start of the run by an injected clock; which process did it;
the operation; the node it went to (or the broker a broker fault targets);
the outcome and a value. Outcomes:

* ``ok`` — the node answered with success;
* ``fail`` — a definite failure: an error response (``value["code"]``) or a
  refused/closed connection (``value["error"]``);
* ``unknown`` — no answer before the timeout: the operation may have happened;
* ``info`` — a fact recorded by the harness (fault phases, process lists).

The writer buffers a bounded number of lines and stops recording (and says so
in a final record) after ``max_records``; records arriving after ``close`` are
counted as dropped. Lines are in the order they were recorded; a fan-out's
per-node records carry the node's own times, so ``t`` is not monotonic in the
file (readers sort).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from cluster.core.closing import Closing

OUTCOMES: tuple[str, ...] = ("ok", "fail", "unknown", "info")

NEMESIS = "nemesis"
RUNNER = "runner"
OBSERVER = "observer"


@dataclass(frozen=True, slots=True)
class Op:
    t: float
    process: str
    op: str
    node: str | None
    outcome: str
    value: Any = None
    start: float | None = None

    @property
    def began(self) -> float:
        return self.t if self.start is None else self.start

    @property
    def answered(self) -> bool:
        """The node replied (success or an error response)."""
        if self.outcome == "ok":
            return True
        return self.outcome == "fail" and isinstance(self.value, dict) and "code" in self.value

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"t": self.t, "process": self.process, "op": self.op,
                             "node": self.node, "outcome": self.outcome, "value": self.value}
        if self.start is not None:
            d["start"] = self.start
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Op:
        start = d.get("start")
        return cls(float(d["t"]), str(d["process"]), str(d["op"]), d.get("node"),
                   str(d["outcome"]), d.get("value"), None if start is None else float(start))


class HistoryWriter(Closing):
    """Thread-safe, bounded, append-only history; in memory when ``path`` is None."""

    def __init__(self, path: Path | None, clock: Callable[[], float], *,
                 buffer_lines: int = 512, max_records: int = 1_000_000) -> None:
        self.path = path
        self._clock = clock
        self._origin = clock()
        self._buffer_lines = buffer_lines
        self._max_records = max_records
        self._lock = threading.Lock()
        self._pending: list[bytes] = []
        self._memory: list[Op] | None = [] if path is None else None
        self._file: IO[bytes] | None = None if path is None else path.open("ab")
        self.count = 0
        self.dropped = 0
        self.outcomes: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
        self._closed = False

    def now(self) -> float:
        return round(self._clock() - self._origin, 4)

    def record(self, process: str, op: str, node: str | None, outcome: str,
               value: Any = None, start: float | None = None, t: float | None = None) -> Op:
        """Append one record; ``t`` (completion) defaults to now."""
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, not {outcome!r}")
        rec = Op(self.now() if t is None else round(t, 4), process, op, node, outcome, value,
                 None if start is None else round(start, 4))
        with self._lock:
            if self._closed:
                self.dropped += 1
            else:
                self._append(rec)
        return rec

    def _append(self, rec: Op) -> None:
        if self.count >= self._max_records:
            self.dropped += 1
            return
        self._store(rec)

    def _store(self, rec: Op) -> None:
        self.count += 1
        self.outcomes[rec.outcome] += 1
        if self._memory is not None:
            self._memory.append(rec)
            return
        self._pending.append(orjson.dumps(rec.as_dict()) + b"\n")
        if len(self._pending) >= self._buffer_lines:
            self._flush_locked()

    def _flush_locked(self) -> None:
        if self._file is not None and self._pending:
            self._file.write(b"".join(self._pending))
            self._file.flush()
        self._pending.clear()

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self.dropped:
                self._store(Op(self.now(), RUNNER, "truncated", None, "info",
                                {"dropped": self.dropped}))
            self._flush_locked()
            if self._file is not None:
                self._file.close()
                self._file = None

    def records(self) -> list[Op]:
        """Everything recorded so far (reads the file back when writing to one)."""
        with self._lock:
            if self._memory is not None:
                return list(self._memory)
            self._flush_locked()
        assert self.path is not None
        return read_history(self.path)


def read_history(path: Path) -> list[Op]:
    with path.open("rb") as f:
        return list(parse_lines(f))


def parse_lines(lines: Iterable[bytes]) -> Iterator[Op]:
    for line in lines:
        if line.strip():
            yield Op.from_dict(orjson.loads(line))


def write_history(path: Path, ops: Iterable[Op]) -> None:
    with path.open("wb") as f:
        for op in ops:
            f.write(orjson.dumps(op.as_dict()) + b"\n")
