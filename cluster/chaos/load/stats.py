"""Counters and latency histograms of the load's route reads, mergeable across seconds.

``ReadCounters`` is what one node's reads did in one interval; it travels
as a plain dict (``as_dict``/``merge_dict``) from the load process to the
history and back into the report. Latencies go into fixed log-spaced
buckets, so percentiles of any merge are exact to the bucket (±6 %).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

RATIO = 1.12
FIRST_BOUND_S = 0.00005
LAST_BOUND_S = 120.0


def _bounds() -> list[float]:
    out, b = [], FIRST_BOUND_S
    while b < LAST_BOUND_S:
        out.append(round(b, 7))
        b *= RATIO
    out.append(LAST_BOUND_S)
    return out


BOUNDS: list[float] = _bounds()  # upper bound (s) of each latency bucket
COUNT_FIELDS: tuple[str, ...] = (
    "ok", "not_found", "error", "timeout", "closed", "connect_failed", "sent", "verified",
    "wrong")


@dataclass(slots=True)
class ReadCounters:
    """One node's reads over an interval (``sent`` counts requests written)."""

    ok: int = 0
    not_found: int = 0
    error: int = 0
    timeout: int = 0
    closed: int = 0
    connect_failed: int = 0
    sent: int = 0
    verified: int = 0
    wrong: int = 0
    codes: dict[str, int] = field(default_factory=dict)
    hist: dict[int, int] = field(default_factory=dict)

    @property
    def answered(self) -> int:
        return self.ok + self.not_found + self.error

    @property
    def failed(self) -> int:
        """Reads that got no reply: timed out or lost with their connection."""
        return self.timeout + self.closed

    def reply(self, code: int, latency_s: float) -> None:
        if code == 0:
            self.ok += 1
        elif code == 17:
            self.not_found += 1
        else:
            self.error += 1
            key = str(code)
            self.codes[key] = self.codes.get(key, 0) + 1
        i = bisect.bisect_left(BOUNDS, latency_s)
        self.hist[i] = self.hist.get(i, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {k: getattr(self, k) for k in COUNT_FIELDS}
        d["codes"] = dict(self.codes)
        d["hist"] = {str(k): v for k, v in sorted(self.hist.items())}
        return d

    def merge_dict(self, d: Mapping[str, Any]) -> None:
        for k in COUNT_FIELDS:
            setattr(self, k, getattr(self, k) + int(d.get(k, 0)))
        for code, n in dict(d.get("codes", {})).items():
            self.codes[code] = self.codes.get(code, 0) + int(n)
        for i, n in dict(d.get("hist", {})).items():
            self.hist[int(i)] = self.hist.get(int(i), 0) + int(n)

    def percentile(self, q: float) -> float | None:
        """Upper bound (s) of the bucket holding quantile ``q`` of the answered reads."""
        total = sum(self.hist.values())
        if total == 0:
            return None
        rank, seen = q * total, 0
        for i in sorted(self.hist):
            seen += self.hist[i]
            if seen >= rank:
                return BOUNDS[min(i, len(BOUNDS) - 1)]
        return BOUNDS[-1]

    def latency_ms(self, quantiles: Iterable[float] = (0.5, 0.9, 0.99, 0.999)
                   ) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for q in quantiles:
            p = self.percentile(q)
            out[f"p{q * 100:g}"] = None if p is None else round(p * 1000, 2)
        top = max(self.hist, default=None)
        out["max"] = None if top is None else round(BOUNDS[min(top, len(BOUNDS) - 1)] * 1000, 2)
        return out


def merged(dicts: Iterable[Mapping[str, Any]]) -> ReadCounters:
    out = ReadCounters()
    for d in dicts:
        out.merge_dict(d)
    return out
