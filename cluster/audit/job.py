"""Run the audit end to end on a SparkSession: load, validate, analyse, decide.

Only the final, small result frames are collected to the driver (one row per
round, per interval, per node); all per-row work stays in Spark.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cluster.audit import inputs, spark_job
from cluster.audit.rows import Manifest
from cluster.audit.verdict import Verdict, decide

MAX_INTERVALS = 5000


@dataclass(slots=True)
class AuditResult:
    source: str
    manifest: Manifest
    verdict: Verdict
    row_count: int
    rounds: list[dict[str, Any]]
    intervals: list[dict[str, Any]]
    intervals_total: int
    unavailability: list[dict[str, Any]]
    node_intervals: list[dict[str, Any]]
    timeline: list[dict[str, Any]]
    worst_keys: list[dict[str, Any]]
    timings: dict[str, float] = field(default_factory=dict)


def _records(df: DataFrame, limit: int | None = None) -> list[dict[str, Any]]:
    rows = (df.limit(limit) if limit is not None else df).collect()
    return [r.asDict(recursive=True) for r in rows]


@dataclass(slots=True)
class Loaded:
    manifest: Manifest
    status: DataFrame
    groups: DataFrame
    row_count: int
    cached: list[DataFrame]

    def release(self) -> None:
        for df in self.cached:
            df.unpersist()


def _total(listed: list[dict[str, Any]], df: DataFrame) -> int:
    return len(listed) if len(listed) < MAX_INTERVALS else df.count()


def load(spark: SparkSession, path: str) -> Loaded:
    """Manifest, per-node-round status and entry groups; raises BadInput listing every problem.

    The parsed lines are cached only while they are validated; validation reads
    ``status`` and ``groups`` in full, so their caches are filled by then.
    """
    base = inputs.resolve_input(path)
    manifest = inputs.read_manifest(spark, base)
    expected = manifest.node_names
    flagged = inputs.flag_lines(inputs.read_lines(spark, base), expected).cache()
    rows = inputs.valid_rows(flagged)
    status = spark_job.node_status(rows).cache()
    groups = spark_job.entry_groups(rows).cache()
    loaded = Loaded(manifest, status, groups, 0, [status, groups])
    try:
        loaded.row_count = _validate(loaded, flagged, path)
    except inputs.BadInput:
        loaded.release()
        raise
    finally:
        flagged.unpersist()
    return loaded


def _validate(loaded: Loaded, flagged: DataFrame, path: str) -> int:
    row_count, problems = inputs.line_problems(flagged)
    if not row_count and not problems:
        raise inputs.BadInput([f"{path}: the row files hold no rows"])
    problems += inputs.duplicate_problems(loaded.groups)
    problems += inputs.node_problems(loaded.status, loaded.manifest.node_names)
    if problems:
        raise inputs.BadInput([p.line() for p in problems])
    return row_count


@dataclass(slots=True)
class Frames:
    """The cached analysis frames of one audit."""

    rounds: DataFrame
    avail: DataFrame
    kr: DataFrame
    summary: DataFrame
    intervals: DataFrame

    @classmethod
    def build(cls, loaded: Loaded) -> Frames:
        rounds = spark_job.round_times(loaded.status).cache()
        avail = spark_job.availability(loaded.status).cache()
        kr = spark_job.key_round_status(loaded.groups, avail).cache()
        return cls(rounds, avail, kr, spark_job.round_summary(kr, avail, rounds).cache(),
                   spark_job.divergence_intervals(kr, rounds).cache())

    def release(self) -> None:
        for df in (self.rounds, self.avail, self.kr, self.summary, self.intervals):
            df.unpersist()


def _result(path: str, loaded: Loaded, f: Frames, verdict: Verdict) -> AuditResult:
    ordered = f.intervals.orderBy(F.desc("open"), F.desc("duration_ms"), "table", "key", "start")
    listed = _records(ordered, MAX_INTERVALS)
    status = loaded.status
    return AuditResult(
        source=path, manifest=loaded.manifest, verdict=verdict, row_count=loaded.row_count,
        rounds=_records(f.summary),
        intervals=listed, intervals_total=_total(listed, f.intervals),
        unavailability=_records(spark_job.unavailability_intervals(status, f.rounds)
                                .orderBy("start", "node")),
        node_intervals=_records(spark_job.node_intervals(f.kr, status, f.rounds)
                                .orderBy("node", "start")),
        timeline=_records(spark_job.timeline(f.kr, f.rounds)),
        worst_keys=_records(spark_job.worst_keys(f.intervals)))


def analyse(spark: SparkSession, path: str, bound_s: float | None = None) -> AuditResult:
    """Load and validate ``path``, analyse it and decide; ``bound_s`` overrides the default."""
    t0 = time.perf_counter()
    loaded = load(spark, path)
    t_load = time.perf_counter()
    frames = Frames.build(loaded)
    try:
        bound_ms = (round(bound_s * 1000) if bound_s is not None
                    else loaded.manifest.bound_inputs.default_bound_ms())
        verdict = decide(frames.intervals, frames.summary, bound_ms, loaded.manifest.fault_end)
        result = _result(path, loaded, frames, verdict)
    finally:
        frames.release()
        loaded.release()
    result.timings = {"load_s": t_load - t0, "analyse_s": time.perf_counter() - t_load}
    return result
