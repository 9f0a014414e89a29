"""Benchmark the audit job on a synthetic collection: 5 nodes × ~100,000 rows each.

``python -m cluster.bench.audit_job [--nodes 5] [--rows-per-node 100000] [--master local[2]]
[--driver-memory SIZE]``
writes the collection to a temporary directory, then times session start-up
and the job separately and samples the peak RSS of this process plus the JVM.

The synthetic cluster has the faults the audit must find: one node down for a
few rounds and stale for three more after it comes back, one node with a
different value for some keys for two rounds, and one KV entry on a single node
from near the end (never converges).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from cluster.audit.job import analyse
from cluster.audit.rows import (
    BoundInputs,
    Manifest,
    NodeRef,
    canonical,
    digest,
    rows_file_name,
    status_row,
)
from cluster.audit.session import build_session, driver_memory
from cluster.bench.sampler import TreeSampler

T0 = 1_700_000_000_000


@dataclass(slots=True)
class Synthetic:
    nodes: int = 5
    rounds: int = 100
    keys: int = 999
    interval_ms: int = 1000
    down_node: int = 2
    down_rounds: tuple[int, int] = (40, 45)
    stale_rounds: int = 3
    stale_keys: int = 50
    skew_node: int = 1
    skew_rounds: tuple[int, int] = (70, 72)
    skew_keys: int = 20
    orphan_round: int = 90

    def node_name(self, i: int) -> str:
        return f"n{i + 1}"

    def time(self, r: int, node: int) -> int:
        return T0 + r * self.interval_ms + node


_TABLES = ("topic", "live", "broker", "kv")


def _key(k: int) -> tuple[str, str, Any]:
    table = _TABLES[k % len(_TABLES)]
    if table == "topic":
        return table, f"Topic{k}/broker-{k % 7}", {"perm": 6, "readQueueNums": 4,
                                                   "topicSysFlag": 0, "writeQueueNums": 4}
    if table == "live":
        return table, f"10.0.{k // 250}.{k % 250}:10911", {"dataVersion": {"counter": k,
                                                                          "timestamp": 1}}
    if table == "broker":
        return table, f"broker-{k}", {"cluster": "DefaultCluster",
                                      "brokerAddrs": {"0": f"10.1.0.{k % 250}:10911"}}
    return table, f"ns/key{k}", f"value-{k}"


def _node_rows(s: Synthetic, node: int, r: int, keys: list[tuple[str, str, str, str]]
               ) -> list[dict[str, Any]]:
    name, t = s.node_name(node), s.time(r, node)
    if node == s.down_node and s.down_rounds[0] <= r < s.down_rounds[1]:
        return [status_row(name, r, t, available=False, error="timeout after 1s")]
    stale = (node == s.down_node
             and s.down_rounds[1] <= r < s.down_rounds[1] + s.stale_rounds)
    skew = node == s.skew_node and s.skew_rounds[0] <= r <= s.skew_rounds[1]
    rows = [status_row(name, r, t, available=True)]
    for k, (table, key, text, dig) in enumerate(keys):
        if stale and k < s.stale_keys:
            continue
        if skew and k < s.skew_keys:
            text, dig = text + " ", digest(text + " ")
        rows.append({"node": name, "round": r, "taken_at": t, "available": True,
                     "table": table, "key": key, "digest": dig, "value": text})
    if node == 0 and r >= s.orphan_round:
        text = canonical("written while others were down")
        rows.append({"node": name, "round": r, "taken_at": t, "available": True,
                     "table": "kv", "key": "ns/orphan", "digest": digest(text), "value": text})
    return rows


def synthesize(s: Synthetic, out: Path) -> int:
    """Write the collection into ``out``; returns the number of rows written."""
    out.mkdir(parents=True, exist_ok=True)
    keys = [(t, k, canonical(v), digest(canonical(v))) for t, k, v in map(_key, range(s.keys))]
    total = 0
    for node in range(s.nodes):
        with (out / rows_file_name(s.node_name(node))).open("wb") as f:
            total += _write_node(s, node, keys, f)
    manifest = Manifest(
        nodes=[NodeRef(s.node_name(i), f"127.0.0.1:{9876 + i}") for i in range(s.nodes)],
        interval_ms=s.interval_ms, bound_inputs=BoundInputs(3000, 1000, 10000),
        started_at=T0, ended_at=s.time(s.rounds, 0), rounds=s.rounds)
    (out / "manifest.json").write_bytes(manifest.to_json())
    return total


def _write_node(s: Synthetic, node: int, keys: list[tuple[str, str, str, str]],
                f: IO[bytes]) -> int:
    n = 0
    for r in range(s.rounds):
        rows = _node_rows(s, node, r, keys)
        f.write(b"".join(orjson.dumps(row) + b"\n" for row in rows))
        n += len(rows)
    return n


def run(nodes: int, rows_per_node: int, master: str,
        memory: str | None = None) -> dict[str, Any]:
    s = Synthetic(nodes=nodes, keys=max(10, rows_per_node // 100 - 1))
    with tempfile.TemporaryDirectory(prefix="audit-bench-") as tmp:
        t = time.perf_counter()
        rows = synthesize(s, Path(tmp))
        gen_s = time.perf_counter() - t
        with TreeSampler(os.getpid(), period=0.1, memory="rss", memory_period=0.1) as sampler:
            t = time.perf_counter()
            spark = build_session(master, memory=memory)
            start_s = time.perf_counter() - t
            t = time.perf_counter()
            result = analyse(spark, tmp)
            job_s = time.perf_counter() - t
            sampler.sample()
            spark.stop()
    return {"nodes": nodes, "rows": rows, "rounds": s.rounds, "master": master,
            "driver_memory": driver_memory(memory),
            "generate_s": round(gen_s, 2), "session_start_s": round(start_s, 2),
            "job_wall_s": round(job_s, 2),
            "job_load_s": round(result.timings["load_s"], 2),
            "job_analyse_s": round(result.timings["analyse_s"], 2),
            "peak_rss_mb": round(sampler.peak_bytes / 2**20),
            "intervals": result.intervals_total, "holds": result.verdict.holds,
            "reasons": result.verdict.reasons}


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m cluster.bench.audit_job")
    p.add_argument("--nodes", type=int, default=5)
    p.add_argument("--rows-per-node", type=int, default=100_000)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--driver-memory", default=None, metavar="SIZE")
    args = p.parse_args()
    print(orjson.dumps(run(args.nodes, args.rows_per_node, args.master, args.driver_memory),
                       option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
