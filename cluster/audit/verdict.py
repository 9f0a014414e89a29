"""Eventual consistency verdict.

Faults stop at the manifest's ``fault_end`` when given, else at the last round
in which some node was unavailable. The cluster is eventually consistent when
every divergence interval has closed by ``max(start, fault_end) + bound`` and the
last round has every node answering and every key agreeing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

SAMPLES = 10


@dataclass(slots=True)
class Verdict:
    holds: bool
    bound_ms: int
    fault_end: int | None
    fault_end_source: str
    late_count: int
    never_converged_count: int
    last_round: int
    last_round_divergent: int
    last_round_unavailable: list[str]
    reasons: list[str] = field(default_factory=list)
    late: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _round_facts(summary: DataFrame) -> Row:
    """Time of the last round with an unavailable node, and the last round's state."""
    divergent = F.col("different") + F.col("missing") + F.col("extra")
    last = F.struct(F.col("round"), divergent.alias("divergent"), F.col("unavailable_nodes"))
    down_time = F.when(F.size("unavailable_nodes") > 0, F.col("round_time"))
    return summary.agg(F.max(down_time).alias("last_down"),
                       F.max_by(last, "round").alias("last")).collect()[0]


def fault_end_time(last_down: int | None, explicit: int | None) -> tuple[int | None, str]:
    if explicit is not None:
        return explicit, "manifest fault_end"
    if last_down is None:
        return None, "no node was ever unavailable"
    return int(last_down), "last round with an unavailable node"


def late_flag(fault_end: int | None, bound_ms: int) -> Column:
    """True for a closed interval that ended after max(start, fault_end) + bound."""
    since = F.col("start") if fault_end is None else F.greatest("start", F.lit(fault_end))
    return ~F.col("open") & (F.col("end") > since + F.lit(bound_ms))


def late_intervals(intervals: DataFrame, fault_end: int | None, bound_ms: int) -> DataFrame:
    """Closed intervals that ended after their deadline, latest-closing first."""
    since = F.col("start") if fault_end is None else F.greatest("start", F.lit(fault_end))
    return (intervals.filter(late_flag(fault_end, bound_ms))
            .withColumn("late_by_ms", F.col("end") - since - F.lit(bound_ms))
            .orderBy(F.desc("late_by_ms"), "table", "key"))


def decide(intervals: DataFrame, summary: DataFrame, bound_ms: int,
           explicit_fault_end: int | None) -> Verdict:
    facts = _round_facts(summary)
    fault_end, source = fault_end_time(facts["last_down"], explicit_fault_end)
    counts = intervals.agg(
        F.sum(late_flag(fault_end, bound_ms).cast("int")).alias("late"),
        F.sum(F.col("open").cast("int")).alias("open")).collect()[0]
    late_n, open_n = int(counts["late"] or 0), int(counts["open"] or 0)
    late_rows = late_intervals(intervals, fault_end, bound_ms).limit(SAMPLES).collect() \
        if late_n else []
    last = facts["last"]
    verdict = Verdict(
        holds=False, bound_ms=bound_ms, fault_end=fault_end, fault_end_source=source,
        late_count=late_n, never_converged_count=open_n, last_round=int(last["round"]),
        last_round_divergent=int(last["divergent"]),
        last_round_unavailable=list(last["unavailable_nodes"]),
        late=[{k: r[k] for k in ("table", "key", "kind", "start", "end", "late_by_ms")}
              for r in late_rows])
    verdict.reasons = _reasons(verdict)
    verdict.holds = not verdict.reasons
    return verdict


def _reasons(v: Verdict) -> list[str]:
    reasons = []
    if v.never_converged_count:
        reasons.append(f"{v.never_converged_count} divergence(s) never converged")
    if v.late_count:
        reasons.append(f"{v.late_count} divergence(s) closed later than the bound "
                       f"({v.bound_ms / 1000:g}s after faults stopped)")
    if v.last_round_unavailable:
        reasons.append(f"node(s) unavailable in the last round: "
                       f"{', '.join(v.last_round_unavailable)}")
    if v.last_round_divergent:
        reasons.append(f"{v.last_round_divergent} key(s) disagree in the last round")
    return reasons
