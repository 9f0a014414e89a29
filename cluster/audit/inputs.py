"""Load a collection (manifest + JSON-lines rows) into Spark and find what is wrong with it.

Every line that is not a valid row, every row from a node the manifest does not
list, every expected node that never answered or has gaps, is turned into a
``Problem``; the job refuses to analyse input that has any (exit code 2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from cluster.audit.rows import MANIFEST_NAME, ROWS_PREFIX, ROWS_SUFFIX, Manifest
from cluster.core.errors import UserError

CORRUPT = "_corrupt"
ROW_SCHEMA = StructType([
    StructField("node", StringType()),
    StructField("round", LongType()),
    StructField("taken_at", LongType()),
    StructField("available", BooleanType()),
    StructField("table", StringType()),
    StructField("key", StringType()),
    StructField("digest", StringType()),
    StructField("value", StringType()),
])
_PARSE_SCHEMA = StructType([*ROW_SCHEMA.fields, StructField(CORRUPT, StringType())])
# The analysis compares digests; the value text is only kept on disk.
ANALYSED = [f for f in ROW_SCHEMA.fieldNames() if f != "value"]
SAMPLES = 5


class BadInput(UserError):
    """The collection cannot be analysed; ``problems`` says why, one line each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(slots=True)
class Problem:
    kind: str
    count: int
    samples: list[str] = field(default_factory=list)

    def line(self) -> str:
        shown = "; ".join(self.samples)
        return f"{self.kind}: {self.count} ({shown})" if shown else f"{self.kind}: {self.count}"


def has_scheme(path: str) -> bool:
    return "://" in path or path.startswith("file:")


def resolve_input(path: str) -> str:
    """An absolute path (or the URI as given); a local path must be a non-empty directory."""
    if has_scheme(path):
        return path.rstrip("/")
    p = Path(path)
    if not p.exists():
        raise BadInput([f"input directory {path} does not exist"])
    if not p.is_dir():
        raise BadInput([f"input {path} is not a directory"])
    if not any(p.iterdir()):
        raise BadInput([f"input directory {path} is empty"])
    if not (p / MANIFEST_NAME).is_file():
        raise BadInput([f"{path} has no {MANIFEST_NAME} "
                        "(not written by 'pynamesrv audit collect')"])
    if not any(p.glob(f"{ROWS_PREFIX}*{ROWS_SUFFIX}")):
        raise BadInput([f"{path} has no {ROWS_PREFIX}*{ROWS_SUFFIX} files"])
    return str(p.resolve())


def java_message(exc: Py4JJavaError) -> str:
    """The Java exception's own one-line message, without py4j's call description."""
    text = str(exc.java_exception).splitlines()
    return text[0] if text else type(exc).__name__


def read_manifest(spark: SparkSession, base: str) -> Manifest:
    """The manifest, read through Spark so any Hadoop filesystem URI works."""
    target = f"{base}/{MANIFEST_NAME}"
    try:
        files = spark.sparkContext.wholeTextFiles(target).collect()
    except Py4JJavaError as exc:
        raise BadInput([f"cannot read {target}: {java_message(exc)}"]) from exc
    if not files:
        raise BadInput([f"{target} not found"])
    try:
        return Manifest.from_json(files[0][1])
    except ValueError as exc:
        raise BadInput([f"{target}: {exc}"]) from exc


def read_lines(spark: SparkSession, base: str) -> DataFrame:
    """Parsed lines: the row columns plus ``_corrupt``, ``file`` and ``line`` (raw text)."""
    pattern = f"{base}/{ROWS_PREFIX}*{ROWS_SUFFIX}"
    try:
        text = spark.read.text(pattern)
    except AnalysisException as exc:
        raise BadInput([f"no row files match {pattern}"]) from exc
    opts = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
    parsed = (text.filter(F.trim("value") != "")
              .select(F.from_json("value", _PARSE_SCHEMA, opts).alias("r"),
                      F.col("_metadata.file_name").alias("file"),
                      F.col("value").alias("line")))
    corrupt = F.col("r").isNull() | F.col(f"r.{CORRUPT}").isNotNull()
    return parsed.select("r.*", "file", "line", corrupt.alias("is_corrupt"))


def _row_problem(expected: list[str]) -> Column:
    entry_fields = F.col("table").isNull() | F.col("key").isNull() | F.col("digest").isNull()
    required = (F.col("node").isNull() | F.col("round").isNull()
                | F.col("taken_at").isNull() | F.col("available").isNull())
    entry_when_down = ~F.col("available") & F.col("table").isNotNull()
    return (F.when(F.col("is_corrupt"), F.lit("corrupt line"))
            .when(required, F.lit("row without node/round/taken_at/available"))
            .when(~F.col("node").isin(expected), F.lit("rows from a node not in the manifest"))
            .when(F.col("available") & F.col("table").isNotNull() & entry_fields,
                  F.lit("entry row without key or digest"))
            .when(entry_when_down, F.lit("entry row marked unavailable")))


def _detail(problem: Column) -> Column:
    """What to show for a bad line: the node for an unknown node, else file and text."""
    return (F.when(problem == "rows from a node not in the manifest",
                   F.concat(F.lit("node "), F.col("node")))
            .when(problem.isNotNull(),
                  F.concat(F.col("file"), F.lit(": "), F.substring("line", 1, 80))))


def flag_lines(lines: DataFrame, expected: list[str]) -> DataFrame:
    """The row columns plus ``problem`` (null for a valid row) and ``detail``."""
    problem = _row_problem(expected)
    return (lines.withColumn("problem", problem)
            .withColumn("detail", _detail(F.col("problem")))
            .select(*ANALYSED, "problem", "detail"))


def line_problems(flagged: DataFrame) -> tuple[int, list[Problem]]:
    """(number of valid rows, one Problem per kind of bad line with a few samples)."""
    found = (flagged.groupBy("problem")
             .agg(F.count("*").alias("n"),
                  F.slice(F.array_sort(F.collect_set("detail")), 1, SAMPLES).alias("samples"))
             .collect())
    valid = sum(r["n"] for r in found if r["problem"] is None)
    bad = sorted((r for r in found if r["problem"] is not None), key=lambda r: r["problem"])
    return valid, [Problem(r["problem"], r["n"], list(r["samples"])) for r in bad]


def valid_rows(flagged: DataFrame) -> DataFrame:
    return flagged.filter(F.col("problem").isNull()).select(*ANALYSED)


def _node_facts(node_rounds: DataFrame, expected: list[str]) -> list[Row]:
    """Per expected node: rounds seen, rounds up, rounds without a row, conflicting rounds.

    The node list is built in the JVM: a frame made from Python data would start
    Python worker processes just for it.
    """
    names = F.array(*[F.lit(n) for n in expected]).cast("array<string>")
    nodes = node_rounds.sparkSession.range(1).select(F.explode(names).alias("node"))
    rounds = node_rounds.select("round").distinct()
    grid = nodes.crossJoin(rounds).join(node_rounds, ["node", "round"], "left")
    return (grid.groupBy("node")
            .agg(F.count("available").alias("seen"),
                 F.sum(F.col("available").cast("int")).alias("up"),
                 F.sum(F.col("available").isNull().cast("int")).alias("gaps"),
                 F.sum((F.col("up_rows") & F.col("down_rows")).cast("int")).alias("conflicts"))
            .orderBy("node").collect())


def node_problems(node_rounds: DataFrame, expected: list[str]) -> list[Problem]:
    """Expected nodes with no rows, never answering, lacking rounds or contradicting themselves."""
    facts = _node_facts(node_rounds, expected)
    checks: tuple[tuple[str, Callable[[Row], Any], Callable[[Row], str]], ...] = (
        ("nodes with no rows at all", lambda r: r["seen"] == 0, lambda r: r["node"]),
        ("nodes never reachable in any round", lambda r: r["seen"] > 0 and not r["up"],
         lambda r: r["node"]),
        ("nodes without a row for some rounds", lambda r: r["seen"] > 0 and r["gaps"],
         lambda r: f"{r['node']} lacks {r['gaps']} rounds"),
        ("nodes both available and unavailable in one round", lambda r: r["conflicts"],
         lambda r: f"{r['node']} in {r['conflicts']} rounds"),
    )
    problems = []
    for kind, bad, label in checks:
        hits = [label(r) for r in facts if bad(r)]
        if hits:
            problems.append(Problem(kind, len(hits), hits))
    return problems


def duplicate_problems(groups: DataFrame) -> list[Problem]:
    """A node gave one key twice in a round, e.g. two collections written into one dir.

    ``groups`` is ``spark_job.entry_groups``: rows per (table, key, round) and distinct nodes.
    """
    dups = groups.filter(F.col("n_present") != F.col("n_nodes"))
    label = F.concat_ws(" ", "table", "key", F.concat(F.lit("round "), F.col("round")))
    found = dups.agg(F.count("*").alias("n"),
                     F.slice(F.array_sort(F.collect_list(label)), 1, SAMPLES).alias("samples"))
    row = found.collect()[0]
    return [Problem("keys given twice by one node in a round", row["n"],
                    list(row["samples"]))] if row["n"] else []
