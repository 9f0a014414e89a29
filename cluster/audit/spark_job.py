"""The audit's DataFrame logic: small functions from DataFrames to DataFrames.

Input is the valid rows (``inputs.ROW_SCHEMA``). A round's time is the earliest
``taken_at`` in it. Per (table, key, round) among the nodes available in that
round: every node has the key with one digest → ``agree``; digests differ →
``different``; some nodes lack it → ``missing``, or ``extra`` when only a
minority has it. A key absent from every available node agrees (it is simply
not there), so only keys with at least one row in a round are evaluated.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

STATUSES = ("agree", "different", "missing", "extra")
_KEY = ["table", "key"]


def node_status(rows: DataFrame) -> DataFrame:
    """(node, round, taken_at, available, up_rows, down_rows): one row per node per round."""
    return (rows.groupBy("node", "round")
            .agg(F.min("taken_at").alias("taken_at"),
                 F.max("available").alias("up_rows"),
                 F.max(~F.col("available")).alias("down_rows"))
            .withColumn("available", F.col("up_rows")))


def round_times(status: DataFrame) -> DataFrame:
    """(round, round_time, idx): idx numbers the collected rounds 0, 1, 2, … in order."""
    by_round = status.groupBy("round").agg(F.min("taken_at").alias("round_time"))
    order = Window.orderBy("round")
    return by_round.withColumn("idx", F.row_number().over(order) - 1)


def availability(status: DataFrame) -> DataFrame:
    """(round, available_nodes, unavailable_nodes, n_available) with sorted node arrays."""
    up = F.when(F.col("available"), F.col("node"))
    down = F.when(~F.col("available"), F.col("node"))
    return (status.groupBy("round")
            .agg(F.array_sort(F.collect_list(up)).alias("available_nodes"),
                 F.array_sort(F.collect_list(down)).alias("unavailable_nodes"))
            .withColumn("n_available", F.size("available_nodes")))


def _classify(n_digests: Column, n_present: Column, n_available: Column) -> Column:
    return (F.when(n_digests > 1, F.lit("different"))
            .when(n_present < n_available,
                  F.when(n_present * 2 < n_available, F.lit("extra")).otherwise(F.lit("missing")))
            .otherwise(F.lit("agree")))


def _majority_nodes(pairs: Column) -> Column:
    """Nodes holding the most common digest (ties: the greatest digest)."""
    digests = F.array_distinct(F.transform(pairs, lambda p: p["digest"]))
    counted = F.transform(digests, lambda d: F.struct(
        F.size(F.filter(pairs, lambda p: p["digest"] == d)).alias("n"), d.alias("d")))
    top = F.array_max(counted)["d"]
    return F.transform(F.filter(pairs, lambda p: p["digest"] == top), lambda p: p["node"])


def _involved(status: Column) -> Column:
    lacking = F.array_except("available_nodes", "present_nodes")
    off_majority = F.array_except("present_nodes", _majority_nodes(F.col("pairs")))
    return (F.when(status == "missing", lacking)
            .when(status == "extra", F.col("present_nodes"))
            .when(status == "different", F.array_sort(F.array_union(off_majority, lacking)))
            .otherwise(F.array().cast("array<string>")))


def entry_groups(rows: DataFrame) -> DataFrame:
    """(table, key, round, n_present, n_nodes, split, pairs): one aggregation of the entries.

    ``pairs`` holds (digest, node) per row; ``split`` is true when digests differ,
    so the digest breakdown is only looked at, in-row, for those rare keys.
    """
    entries = rows.filter(F.col("available") & F.col("table").isNotNull())
    nodes = F.array_distinct(F.transform("pairs", lambda p: p["node"]))
    return (entries.groupBy("table", "key", "round")
            .agg(F.count("*").alias("n_present"),
                 (F.min("digest") != F.max("digest")).alias("split"),
                 F.collect_list(F.struct("digest", "node")).alias("pairs"))
            .withColumn("n_nodes", F.size(nodes)))


def key_round_status(groups: DataFrame, avail: DataFrame) -> DataFrame:
    """(table, key, round, status, involved, lacking, n_present, n_digests, n_available)."""
    n_digests = F.when(F.col("split"), F.size(F.array_distinct(
        F.transform("pairs", lambda p: p["digest"])))).otherwise(F.lit(1))
    status = _classify(F.col("n_digests"), F.col("n_present"), F.col("n_available"))
    return (groups.join(F.broadcast(avail), "round")
            .withColumn("present_nodes", F.array_sort(F.transform("pairs", lambda p: p["node"])))
            .withColumn("n_digests", n_digests)
            .withColumn("status", status)
            .withColumn("involved", _involved(F.col("status")))
            .withColumn("lacking", F.array_except("available_nodes", "present_nodes"))
            .select("table", "key", "round", "status", "involved", "lacking",
                    "n_present", "n_digests", "n_available"))


def round_summary(kr: DataFrame, avail: DataFrame, rounds: DataFrame) -> DataFrame:
    """Per round: counts per status, keys lacking per node, sample lacking keys, availability."""
    counts = kr.groupBy("round").pivot("status", list(STATUSES)).count()
    lacking = (kr.select("round", F.explode("lacking").alias("node"))
               .groupBy("round", "node").count()
               .groupBy("round")
               .agg(F.map_from_entries(F.array_sort(F.collect_list(F.struct("node", "count"))))
                    .alias("missing_on")))
    samples = (kr.filter(F.size("lacking") > 0)
               .groupBy("round")
               .agg(F.slice(F.array_sort(F.collect_list(F.concat_ws(
                   " ", "table", "key", F.concat(F.lit("lacks:"), F.concat_ws(",", "lacking"))))),
                   1, 5).alias("missing_samples")))
    out = (rounds.join(avail, "round").join(counts, "round", "left")
           .join(lacking, "round", "left").join(samples, "round", "left"))
    empty_map = F.create_map().cast("map<string,bigint>")
    return (out.fillna(0, subset=list(STATUSES))
            .withColumn("missing_on", F.coalesce("missing_on", empty_map))
            .withColumn("missing_samples", F.coalesce("missing_samples",
                                                      F.array().cast("array<string>")))
            .orderBy("round"))


def _islands(flagged: DataFrame, part: list[str], rounds: DataFrame) -> DataFrame:
    """Number the runs of consecutive flagged rounds per ``part`` (gaps and islands).

    ``run`` is ``idx`` minus the dense rank of ``idx`` within ``part``: constant
    over consecutive rounds, different across a gap. The dense rank counts a
    round once even when it has several rows, so repeated rounds never split a run.
    """
    idx = flagged.join(F.broadcast(rounds.select("round", "idx", "round_time")), "round")
    rank = F.dense_rank().over(Window.partitionBy(*part).orderBy("idx"))
    return idx.withColumn("run", F.col("idx") - rank)


def _round_at(rounds: DataFrame, idx: str, time: str) -> DataFrame:
    """(``idx``, ``time``): the time of each round by its index, renamed for a join."""
    return rounds.select(F.col("idx").alias(idx), F.col("round_time").alias(time))


def _close(grouped: DataFrame, ends: DataFrame, on: list[str], rounds: DataFrame) -> DataFrame:
    """Add ``end`` (from ``ends`` at the round after the run), ``last_seen``, ``open``, duration.

    ``end`` is null while the run is still open at the last round.
    """
    ended = (grouped.withColumn("end_idx", F.col("last_idx") + 1)
             .join(ends, [*on, "end_idx"], "left")
             .join(F.broadcast(_round_at(rounds, "last_idx", "last_seen")), "last_idx"))
    upto = F.coalesce(F.col("end"), F.col("last_seen"))
    return (ended.withColumn("open", F.col("end").isNull())
            .withColumn("duration_ms", upto - F.col("start")))


def divergence_intervals(kr: DataFrame, rounds: DataFrame) -> DataFrame:
    """Per key, maximal runs of consecutive non-agreeing rounds.

    (table, key, kind, kinds, nodes, start, end, last_seen, duration_ms, rounds, open):
    ``kind`` is the status in the run's first round, ``kinds`` every status in it.
    """
    runs = _islands(kr.filter(F.col("status") != "agree"), _KEY, rounds)
    grouped = (runs.groupBy(*_KEY, "run")
               .agg(F.min("round_time").alias("start"),
                    F.max("idx").alias("last_idx"),
                    F.count("*").alias("rounds"),
                    F.min_by("status", "idx").alias("kind"),
                    F.array_sort(F.collect_set("status")).alias("kinds"),
                    F.array_sort(F.array_distinct(F.flatten(F.collect_list("involved"))))
                    .alias("nodes")))
    ends = F.broadcast(_round_at(rounds, "end_idx", "end"))
    return _close(grouped, ends, [], rounds).select(
        *_KEY, "kind", "kinds", "nodes", "start", "end", "last_seen", "duration_ms",
        "rounds", "open")


def _node_runs(flags: DataFrame, status: DataFrame, rounds: DataFrame) -> DataFrame:
    """Maximal runs of consecutive flagged rounds per node, timed on the node's ``taken_at``.

    ``flags`` is (node, round, cause), possibly several causes per node and round;
    they are folded into one row per node and round first. ``start`` is the node's
    time in the first flagged round (for an unanswered request: when it was sent),
    ``end`` its snapshot time in the first round after the run, so a pause is
    measured to within one collection interval.
    """
    per_round = (flags.groupBy("node", "round").agg(F.collect_set("cause").alias("causes"))
                 .join(status.select("node", "round", "taken_at"), ["node", "round"]))
    grouped = (_islands(per_round, ["node"], rounds).groupBy("node", "run")
               .agg(F.min("taken_at").alias("start"),
                    F.max("idx").alias("last_idx"),
                    F.count("*").alias("rounds"),
                    F.array_sort(F.array_distinct(F.flatten(F.collect_list("causes"))))
                    .alias("causes")))
    ends = (status.join(F.broadcast(rounds.select("round", "idx")), "round")
            .select("node", F.col("idx").alias("end_idx"), F.col("taken_at").alias("end")))
    return _close(grouped, ends, ["node"], rounds).select(
        "node", "start", "end", "last_seen", "duration_ms", "rounds", "open", "causes")


def _down_flags(status: DataFrame) -> DataFrame:
    return (status.filter(~F.col("available"))
            .select("node", "round", F.lit("unavailable").alias("cause")))


def unavailability_intervals(status: DataFrame, rounds: DataFrame) -> DataFrame:
    """Per node, maximal runs of rounds in which it did not answer: (node, start, end, …, open)."""
    return _node_runs(_down_flags(status), status, rounds).drop("causes")


def node_intervals(kr: DataFrame, status: DataFrame, rounds: DataFrame) -> DataFrame:
    """Per node, maximal runs of rounds in which it was unavailable or involved in a divergence.

    (node, start, end, last_seen, duration_ms, rounds, open, causes): causes is
    the set of ``unavailable`` / ``missing`` / ``extra`` / ``different`` seen in the run.
    """
    involved = (kr.filter(F.col("status") != "agree")
                .select(F.explode("involved").alias("node"), "round",
                        F.col("status").alias("cause")))
    return _node_runs(_down_flags(status).unionByName(involved), status, rounds)


def timeline(kr: DataFrame, rounds: DataFrame) -> DataFrame:
    """(round, round_time, table, divergent): non-agreeing keys per table per round."""
    return (kr.filter(F.col("status") != "agree")
            .groupBy("round", "table").agg(F.count("*").alias("divergent"))
            .join(rounds.select("round", "round_time"), "round")
            .orderBy("round", "table"))


def worst_keys(intervals: DataFrame, limit: int = 10) -> DataFrame:
    """Keys with the longest total divergence (open intervals count up to the last round)."""
    return (intervals.groupBy(*_KEY)
            .agg(F.sum("duration_ms").alias("total_ms"),
                 F.count("*").alias("intervals"),
                 F.max("open").alias("open"),
                 F.array_sort(F.array_distinct(F.flatten(F.collect_list("kinds")))).alias("kinds"),
                 F.array_sort(F.array_distinct(F.flatten(F.collect_list("nodes")))).alias("nodes"))
            .orderBy(F.desc("total_ms"), *_KEY)
            .limit(limit))
