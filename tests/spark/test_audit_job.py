"""The audit's DataFrame logic on small hand-made frames, and the job on small collections."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from pyspark.sql import DataFrame, SparkSession

from cluster.audit import report, spark_job
from cluster.audit.cli import EXIT_FAILS, EXIT_HOLDS
from cluster.audit.inputs import ROW_SCHEMA, BadInput
from cluster.audit.job import analyse
from cluster.audit.rows import BoundInputs, Manifest, NodeRef, rows_file_name, status_row
from cluster.audit.session import DRIVER_MEMORY_ENV, session_conf
from cluster.audit.verdict import decide
from cluster.cli.main import main

pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000
NODES = ("n1", "n2", "n3")
# One round: node -> {(table, key): digest}, or None when the node did not answer.
Round = dict[str, dict[tuple[str, str], str] | None]


def t(r: int) -> int:
    return T0 + r * 1000


def make_rows(rounds: list[Round]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r, nodes in enumerate(rounds):
        for i, (node, entries) in enumerate(nodes.items()):
            taken = t(r) + i
            if entries is None:
                out.append(status_row(node, r, taken, available=False, error="timeout"))
                continue
            out.append(status_row(node, r, taken, available=True))
            out += [{"node": node, "round": r, "taken_at": taken, "available": True,
                     "table": tb, "key": k, "digest": d, "value": f'"{d}"'}
                    for (tb, k), d in entries.items()]
    return out


def frame(spark: SparkSession, rounds: list[Round]) -> DataFrame:
    rows = make_rows(rounds)
    return spark.createDataFrame([tuple(r[f] for f in ROW_SCHEMA.fieldNames()) for r in rows],
                                 ROW_SCHEMA)


def same(entries: dict[tuple[str, str], str], nodes: tuple[str, ...] = NODES) -> Round:
    return {n: dict(entries) for n in nodes}


def analysed(spark: SparkSession, rounds: list[Round]) -> dict[str, DataFrame]:
    rows = frame(spark, rounds)
    status = spark_job.node_status(rows).cache()
    rt = spark_job.round_times(status).cache()
    avail = spark_job.availability(status).cache()
    kr = spark_job.key_round_status(spark_job.entry_groups(rows), avail).cache()
    return {"status": status, "rounds": rt, "avail": avail, "kr": kr,
            "summary": spark_job.round_summary(kr, avail, rt).cache(),
            "intervals": spark_job.divergence_intervals(kr, rt).cache()}


def by_key(df: DataFrame, *cols: str) -> dict[Any, dict[str, Any]]:
    return {tuple(r[c] for c in cols) if len(cols) > 1 else r[cols[0]]: r.asDict(recursive=True)
            for r in df.collect()}


# ------------------------------------------------------------ key status


def test_each_key_is_classified_with_the_nodes_involved(spark: SparkSession) -> None:
    rnd: Round = {
        "n1": {("topic", "A"): "a", ("topic", "B"): "b1", ("kv", "C"): "c", ("kv", "D"): "d",
               ("broker", "E"): "e1"},
        "n2": {("topic", "A"): "a", ("topic", "B"): "b1", ("kv", "C"): "c",
               ("broker", "E"): "e2"},
        "n3": {("topic", "A"): "a", ("topic", "B"): "b2"},
    }
    kr = by_key(analysed(spark, [rnd])["kr"], "table", "key")
    assert kr["topic", "A"]["status"] == "agree" and kr["topic", "A"]["involved"] == []
    assert kr["topic", "B"]["status"] == "different" and kr["topic", "B"]["involved"] == ["n3"]
    assert kr["kv", "C"]["status"] == "missing" and kr["kv", "C"]["involved"] == ["n3"]
    assert kr["kv", "D"]["status"] == "extra" and kr["kv", "D"]["involved"] == ["n1"]
    assert kr["kv", "D"]["lacking"] == ["n2", "n3"]
    # a 1-1 tie picks the greater digest as the majority; the lacking node is involved too
    assert kr["broker", "E"]["status"] == "different"
    assert kr["broker", "E"]["involved"] == ["n1", "n3"]
    assert kr["broker", "E"]["n_digests"] == 2


def test_unavailable_nodes_are_excluded_from_agreement(spark: SparkSession) -> None:
    rnd: Round = {"n1": {("kv", "K"): "v"}, "n2": {("kv", "K"): "v"}, "n3": None}
    out = analysed(spark, [rnd])
    assert by_key(out["kr"], "key")["K"]["status"] == "agree"
    avail = out["avail"].collect()[0]
    assert avail["available_nodes"] == ["n1", "n2"] and avail["unavailable_nodes"] == ["n3"]


# ------------------------------------------------------------- intervals


def _interval_scenario() -> list[Round]:
    base = {("topic", "K"): "k", ("topic", "M"): "m"}
    rounds = [same(base) for _ in range(7)]
    for r in (2, 3, 4):
        del rounds[r]["n2"][("topic", "K")]  # type: ignore[index]
    for r in (1, 3):
        rounds[r]["n3"][("topic", "M")] = "m2"  # type: ignore[index]
    for r in (5, 6):
        rounds[r]["n1"][("kv", "L")] = "l"  # type: ignore[index]
    return rounds


def test_divergence_intervals_start_end_duration_and_open(spark: SparkSession) -> None:
    rows = analysed(spark, _interval_scenario())["intervals"].orderBy("key", "start").collect()
    got = [(r["key"], r["kind"], r["nodes"], r["start"], r["end"], r["duration_ms"], r["open"])
           for r in rows]
    assert got == [
        ("K", "missing", ["n2"], t(2), t(5), 3000, False),
        ("L", "extra", ["n1"], t(5), None, 1000, True),
        ("M", "different", ["n3"], t(1), t(2), 1000, False),
        ("M", "different", ["n3"], t(3), t(4), 1000, False),
    ]


def test_unavailability_intervals_per_node(spark: SparkSession) -> None:
    rounds = [same({("kv", "K"): "v"}) for _ in range(6)]
    rounds[2]["n3"] = rounds[3]["n3"] = None
    rounds[5]["n1"] = None
    out = analysed(spark, rounds)
    got = spark_job.unavailability_intervals(out["status"], out["rounds"]).orderBy("start")
    assert [(r["node"], r["start"], r["end"], r["duration_ms"], r["rounds"], r["open"])
            for r in got.collect()] == [("n3", t(2) + 2, t(4) + 2, 2000, 2, False),
                                        ("n1", t(5), None, 0, 1, True)]


def test_node_intervals_combine_unavailability_and_divergence(spark: SparkSession) -> None:
    rounds = _interval_scenario()
    rounds[5]["n2"] = None  # n2: missing in rounds 2-4, then down in round 5
    out = analysed(spark, rounds)
    got = spark_job.node_intervals(out["kr"], out["status"], out["rounds"]).orderBy("node", "start")
    assert [(r["node"], r["start"], r["end"], r["duration_ms"], r["rounds"], r["open"],
             r["causes"]) for r in got.collect()] == [
        # round 5: L is on n1 of the two available nodes → "missing" on n3, not "extra"
        ("n1", t(6), None, 0, 1, True, ["extra"]),
        ("n2", t(2) + 1, t(6) + 1, 4000, 4, False, ["missing", "unavailable"]),
        ("n3", t(1) + 2, t(2) + 2, 1000, 1, False, ["different"]),
        ("n3", t(3) + 2, t(4) + 2, 1000, 1, False, ["different"]),
        ("n3", t(5) + 2, t(6) + 2, 1000, 1, False, ["missing"]),
    ]


FOUR = ("n1", "n2", "n3", "n4")


def _long_divergence() -> list[Round]:
    """n4 down in rounds 3..7; n1 differs on K and lacks M in rounds 3..7 (two causes a round)."""
    rounds = [same({("topic", "K"): "k", ("kv", "M"): "m"}, FOUR) for _ in range(10)]
    for r in range(3, 8):
        rounds[r]["n4"] = None
        rounds[r]["n1"] = {("topic", "K"): "k2"}
    return rounds


def test_long_divergences_give_one_maximal_interval_each(spark: SparkSession) -> None:
    out = analysed(spark, _long_divergence())
    nodes = spark_job.node_intervals(out["kr"], out["status"], out["rounds"]).orderBy("node")
    assert [(r["node"], r["start"], r["end"], r["last_seen"], r["duration_ms"], r["rounds"],
             r["open"], r["causes"]) for r in nodes.collect()] == [
        ("n1", t(3), t(8), t(7), 5000, 5, False, ["different", "missing"]),
        ("n4", t(3) + 3, t(8) + 3, t(7), 5000, 5, False, ["unavailable"]),
    ]
    keys = out["intervals"].orderBy("key")
    assert [(r["key"], r["kind"], r["kinds"], r["nodes"], r["start"], r["end"], r["duration_ms"],
             r["rounds"], r["open"]) for r in keys.collect()] == [
        ("K", "different", ["different"], ["n1"], t(3), t(8), 5000, 5, False),
        ("M", "missing", ["missing"], ["n1"], t(3), t(8), 5000, 5, False),
    ]
    down = spark_job.unavailability_intervals(out["status"], out["rounds"]).collect()
    assert [(r["node"], r["start"], r["end"], r["rounds"]) for r in down] == [
        ("n4", t(3) + 3, t(8) + 3, 5)]


def test_a_node_changing_causes_stays_in_one_interval(spark: SparkSession) -> None:
    rounds = _long_divergence()
    for r in (4, 6):
        rounds[r]["n1"] = {("topic", "K"): "k2", ("kv", "M"): "m"}
    rounds[8]["n1"] = None
    out = analysed(spark, rounds)
    got = spark_job.node_intervals(out["kr"], out["status"], out["rounds"])
    n1 = [r.asDict() for r in got.collect() if r["node"] == "n1"]
    assert [(r["start"], r["end"], r["duration_ms"], r["rounds"], r["causes"]) for r in n1] == [
        (t(3), t(9), 6000, 6, ["different", "missing", "unavailable"])]


def test_round_summary_counts_and_missing_nodes(spark: SparkSession) -> None:
    rounds = _interval_scenario()
    rounds[6]["n2"] = None
    summary = by_key(analysed(spark, rounds)["summary"], "round")
    assert (summary[0]["agree"], summary[0]["missing"], summary[0]["different"]) == (2, 0, 0)
    assert summary[3]["missing"] == 1 and summary[3]["different"] == 1
    assert summary[3]["missing_on"] == {"n2": 1}
    assert summary[3]["missing_samples"] == ["topic K lacks:n2"]
    assert summary[6]["unavailable_nodes"] == ["n2"] and summary[6]["extra"] == 0
    assert summary[6]["missing"] == 1  # L on n1 only, n2 is down: one of two → missing
    assert summary[4]["round_time"] == t(4)


def test_timeline_and_worst_keys(spark: SparkSession) -> None:
    out = analysed(spark, _interval_scenario())
    tl = [(r["round"], r["table"], r["divergent"])
          for r in spark_job.timeline(out["kr"], out["rounds"]).collect()]
    assert tl == [(1, "topic", 1), (2, "topic", 1), (3, "topic", 2), (4, "topic", 1),
                  (5, "kv", 1), (6, "kv", 1)]
    worst = spark_job.worst_keys(out["intervals"], limit=2).collect()
    assert [(w["key"], w["total_ms"], w["intervals"]) for w in worst] == [("K", 3000, 1),
                                                                         ("M", 2000, 2)]


# --------------------------------------------------------------- verdict


def test_verdict_fails_on_a_key_that_never_converges(spark: SparkSession) -> None:
    out = analysed(spark, _interval_scenario())
    v = decide(out["intervals"], out["summary"], bound_ms=10_000, explicit_fault_end=None)
    assert not v.holds
    assert v.never_converged_count == 1 and v.last_round_divergent == 1
    assert v.fault_end is None


def test_verdict_holds_when_divergences_close_within_the_bound(spark: SparkSession) -> None:
    rounds = _interval_scenario()[:5] + [same({("topic", "K"): "k", ("topic", "M"): "m"})]
    rounds[1]["n1"] = None
    out = analysed(spark, rounds)
    v = decide(out["intervals"], out["summary"], bound_ms=3000, explicit_fault_end=None)
    assert v.holds, v.reasons
    assert v.fault_end == t(1) and v.fault_end_source == "last round with an unavailable node"
    tight = decide(out["intervals"], out["summary"], bound_ms=2000, explicit_fault_end=None)
    assert not tight.holds and tight.late_count == 1
    assert tight.late[0]["key"] == "K" and tight.late[0]["late_by_ms"] == 1000
    later = decide(out["intervals"], out["summary"], bound_ms=2000, explicit_fault_end=t(3))
    assert later.holds and later.fault_end_source == "manifest fault_end"


def test_verdict_fails_when_a_node_is_down_in_the_last_round(spark: SparkSession) -> None:
    rounds = [same({("kv", "K"): "v"}) for _ in range(3)]
    rounds[2]["n2"] = None
    out = analysed(spark, rounds)
    v = decide(out["intervals"], out["summary"], bound_ms=10_000, explicit_fault_end=None)
    assert not v.holds and v.last_round_unavailable == ["n2"]


# ------------------------------------------------- collections on disk


def write_collection(d: Path, rows: list[dict[str, Any]], nodes: tuple[str, ...] = NODES,
                     **manifest: Any) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    for node in {r["node"] for r in rows}:
        lines = [orjson.dumps(r) for r in rows if r["node"] == node]
        (d / rows_file_name(node)).write_bytes(b"\n".join(lines) + b"\n")
    m = Manifest(nodes=[NodeRef(n, "127.0.0.1:1") for n in nodes], interval_ms=1000,
                 bound_inputs=BoundInputs(1000, 500, 2000), started_at=T0, **manifest)
    (d / "manifest.json").write_bytes(m.to_json())
    return d


def healthy(n: int = 4) -> list[dict[str, Any]]:
    rounds = [same({("kv", "K"): "v", ("topic", "T/b"): "t"}) for _ in range(n)]
    rounds[1]["n3"] = None
    del rounds[2]["n3"][("kv", "K")]  # type: ignore[index]
    return make_rows(rounds)


def test_job_on_a_collection_with_a_recovered_node(spark: SparkSession, tmp_path: Path) -> None:
    res = analyse(spark, str(write_collection(tmp_path, healthy())))
    assert res.verdict.holds, res.verdict.reasons
    assert res.verdict.bound_ms == 3500  # heartbeat 1000 + scan 500 + expiry 2000
    assert res.row_count == 4 * 3 * 3 - 2 - 1
    assert [(u["node"], u["duration_ms"]) for u in res.unavailability] == [("n3", 1000)]
    assert [(i["key"], i["kind"], i["nodes"], i["duration_ms"]) for i in res.intervals] == [
        ("K", "missing", ["n3"], 1000)]


def _bad(spark: SparkSession, path: Path) -> list[str]:
    with pytest.raises(BadInput) as exc:
        analyse(spark, str(path))
    return exc.value.problems


def test_bad_lines_unknown_nodes_and_gaps_are_all_reported(spark: SparkSession,
                                                           tmp_path: Path) -> None:
    rows = healthy()
    rows = [r for r in rows if not (r["node"] == "n2" and r["round"] == 3)]
    rows.append({**rows[1], "node": "stranger"})
    rows.append({**rows[1], "round": None})
    rows.append(status_row("n1", 0, t(0), available=False))
    d = write_collection(tmp_path, rows)
    with (d / rows_file_name("n1")).open("ab") as f:
        f.write(b'{"node": "n1", "round": 2, "taken_at\n')
    problems = _bad(spark, d)
    text = "\n".join(problems)
    assert "corrupt line: 1 (rows-n1.jsonl: {\"node\": \"n1\", \"round\": 2, \"taken_at)" in text
    assert "rows from a node not in the manifest: 1 (node stranger)" in text
    assert "row without node/round/taken_at/available: 1" in text
    assert "nodes without a row for some rounds: 1 (n2 lacks 1 rounds)" in text
    assert "nodes both available and unavailable in one round: 1 (n1 in 1 rounds)" in text


def test_a_node_never_reachable_and_duplicates_are_reported(spark: SparkSession,
                                                            tmp_path: Path) -> None:
    rounds = [same({("kv", "K"): "v"}) for _ in range(2)]
    for r in rounds:
        r["n2"] = None
    rows = make_rows(rounds)
    rows.append(dict(rows[1]))
    problems = _bad(spark, write_collection(tmp_path, rows))
    assert "nodes never reachable in any round: 1 (n2)" in problems
    assert "keys given twice by one node in a round: 1 (kv K round 0)" in problems


def test_missing_and_empty_inputs(spark: SparkSession, tmp_path: Path) -> None:
    assert _bad(spark, tmp_path / "nope") == [f"input directory {tmp_path / 'nope'} does not exist"]
    (tmp_path / "empty").mkdir()
    assert _bad(spark, tmp_path / "empty") == [f"input directory {tmp_path / 'empty'} is empty"]
    blank = write_collection(tmp_path / "blank", [])
    (blank / rows_file_name("n1")).write_text("\n")
    assert _bad(spark, blank) == [f"{blank}: the row files hold no rows"]
    nodes_only = write_collection(tmp_path / "x", healthy())
    (nodes_only / "manifest.json").write_text('{"nodes": []}')
    assert "manifest.json: manifest has no 'nodes' list" in _bad(spark, nodes_only)[0]


def test_cli_exit_codes_and_report_files(spark: SparkSession, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    good = write_collection(tmp_path / "good", healthy())
    assert main(["audit", "run", str(good)]) == EXIT_HOLDS
    out = capsys.readouterr().out
    assert "verdict: EVENTUALLY CONSISTENT" in out and "unavailable: n3" in out
    doc = orjson.loads((good / "audit-report.json").read_bytes())
    assert doc["verdict"]["holds"] is True and doc["intervals_total"] == 1
    page = (good / "audit-report.html").read_text()
    assert "<svg" in page and "<polyline" in page
    assert "src=" not in page and "<link" not in page and "<script src" not in page

    rows = healthy() + [{"node": "n1", "round": 3, "taken_at": t(3), "available": True,
                         "table": "kv", "key": "orphan", "digest": "o", "value": '"o"'}]
    bad = write_collection(tmp_path / "bad", rows)
    assert main(["audit", "run", str(bad), "--report-dir", str(tmp_path / "r"),
                 "--driver-memory", "768m"]) == EXIT_FAILS
    assert "never converged" in capsys.readouterr().out
    assert (tmp_path / "r" / "audit-report.html").is_file()

    assert main(["audit", "run", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_html_escapes_keys_and_node_names(spark: SparkSession, tmp_path: Path) -> None:
    rounds = [same({("kv", "<script>x</script>"): "v"}) for _ in range(2)]
    rounds[1]["n3"] = {("kv", "<script>x</script>"): "w"}
    res = analyse(spark, str(write_collection(tmp_path, make_rows(rounds))))
    page = report.html_page(res)
    assert "<script>x" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    doc = report.to_document(res)
    assert doc["never_converged"][0]["key"] == "<script>x</script>"
    assert doc["node_intervals"][0]["node"] == "n3"


def test_driver_heap_is_bounded_and_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DRIVER_MEMORY_ENV, raising=False)
    conf = session_conf("local[2]", "t")
    assert conf.get("spark.driver.memory") == "512m"
    assert conf.get("spark.sql.shuffle.partitions") == "4"
    assert "-XX:+UseSerialGC" in (conf.get("spark.driver.extraJavaOptions") or "")
    monkeypatch.setenv(DRIVER_MEMORY_ENV, "1g")
    assert session_conf("local[2]", "t").get("spark.driver.memory") == "1g"
    assert session_conf("local[2]", "t", "768m").get("spark.driver.memory") == "768m"
