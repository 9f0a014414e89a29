"""GET_NODE_DIGEST: the digests a node computes equal those computed from its snapshot,
stay right key by key as the tables change, and drill down to the differing units."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from cluster.core.protocol.digest_body import (
    BUCKETS,
    MAX_VALUES,
    DigestQuery,
    DigestQueryError,
    TableDigest,
    bucket_of,
    canonical,
    drill_of_tables,
    encode_query,
    parse_query,
    subs_of,
    summary_of_tables,
    table_summary,
    values_of_tables,
)
from state import digest, route
from state.snapshot import tables as snapshot_tables
from state.store import Store
from tests.unit.test_processors import C, body_json, call, register_request, request
from worker.business.context import NodeContext

RC_SUCCESS, RC_SYSTEM_ERROR = 0, 1
Q6 = {"perm": 6, "readQueueNums": 4, "topicSysFlag": 0, "writeQueueNums": 4}


def _snapshot(store: Store) -> dict[str, Any]:
    with store.read() as t:
        return snapshot_tables(t)


def _register(store: Store, name: str, addr: str, topics: list[str], perm: int = 6,
              counter: int = 1) -> None:
    configs = {t: {"topicName": t, "perm": perm, "readQueueNums": 4, "writeQueueNums": 4}
               for t in topics}
    with store.write() as t:
        route.register_broker(t, C, addr, name, 0, addr + "0", {"counter": counter,
                              "timestamp": counter}, configs, [], f"0.1.{name}", 1000)


def _summary(store: Store, cache: digest.DigestCache, beats: bool = False) -> dict[str, Any]:
    return digest.answer(store, "n1", 5, DigestQuery(heartbeats=beats), cache)


def test_node_summary_equals_the_summary_of_its_snapshot(store: Store) -> None:
    _register(store, "a", "127.0.0.1:1", ["T1", "T2", "%RETRY%g"])
    _register(store, "b", "127.0.0.1:2", ["T2", "T3"], perm=4)
    with store.write() as t:
        t.put("kv", "NS", {"k": "v", "k2": "w"})
    doc = _summary(store, digest.DigestCache(), beats=True)
    expected = summary_of_tables("n1", 5, _snapshot(store))
    assert doc["tables"] == expected["tables"]
    topic = doc["tables"]["topic"]
    assert (topic["units"], topic["keys"]) == (5, 4)
    assert topic["groups"]["a"][0] == 3 and topic["groups"]["b"][0] == 2
    assert doc["tables"]["kv"]["groups"] == {"NS": [2, doc["tables"]["kv"]["digest"]]}
    assert doc["tables"]["broker"]["rows"] == 2
    assert doc["heartbeats"] == {"127.0.0.1:1": 1000, "127.0.0.1:2": 1000}
    assert "heartbeats" not in _summary(store, digest.DigestCache())


def test_a_digest_does_not_depend_on_the_order_entries_were_stored_in(store: Store) -> None:
    a = table_summary("topic", {"T": {"a": Q6, "b": {**Q6, "perm": 4}}})
    b = table_summary("topic", {"T": {"b": {**Q6, "perm": 4}, "a": Q6}})
    c = table_summary("topic", {"T": {"a": {**Q6, "perm": 4}, "b": Q6}})
    assert a == b and a["digest"] != c["digest"]
    assert a["groups"]["a"] != c["groups"]["a"]


def test_table_digest_kept_key_by_key_equals_one_computed_afresh() -> None:
    rng = random.Random(7)
    content: dict[str, Any] = {}
    kept = TableDigest("topic", lambda b: subs_of("topic", orjson.loads(b)))
    for _ in range(60):
        for _ in range(rng.randint(1, 8)):
            key = f"T{rng.randrange(40)}"
            if rng.random() < 0.25:
                content.pop(key, None)
            else:
                content[key] = {f"b{i}": {**Q6, "perm": rng.choice((2, 4, 6))}
                                for i in rng.sample(range(5), rng.randint(1, 3))}
        kept.refresh((k, canonical(v)) for k, v in content.items())
        assert kept.as_json() == table_summary("topic", content)
        every = frozenset(range(BUCKETS))
        assert kept.units_in(every) == drill_of_tables("topic", content, every)["units"]
    assert kept.as_json()["keys"] == len(content)


def test_unchanged_keys_are_not_decoded_again() -> None:
    calls: list[bytes] = []

    def decode(b: bytes) -> list[tuple[str, bytes]]:
        calls.append(b)
        return subs_of("broker", orjson.loads(b))

    d = TableDigest("broker", decode)
    items = {f"b{i}": canonical({"cluster": C, "brokerAddrs": {"0": f"h:{i}"}}) for i in range(5)}
    d.refresh(items.items())
    assert len(calls) == 5
    items["b2"] = canonical({"cluster": C, "brokerAddrs": {"0": "h:99"}})
    d.refresh(items.items())
    assert len(calls) == 6


def test_drill_down_and_values_locate_the_odd_unit(store: Store) -> None:
    _register(store, "a", "127.0.0.1:1", [f"T{i}" for i in range(300)])
    _register(store, "b", "127.0.0.1:2", ["T7"])
    mine = _snapshot(store)
    other = orjson.loads(orjson.dumps(mine))
    other["topic"]["T7"]["b"]["perm"] = 4
    ours, theirs = (summary_of_tables("x", 0, t)["tables"]["topic"] for t in (mine, other))
    odd = {int(b) for b in ours["buckets"] if ours["buckets"][b] != theirs["buckets"][b]}
    assert odd == {bucket_of("T7")}
    assert ours["groups"]["a"] == theirs["groups"]["a"]
    assert ours["groups"]["b"] != theirs["groups"]["b"]
    drilled = digest.answer(store, "n1", 0, DigestQuery("topic", buckets=frozenset(odd)),
                            digest.DigestCache())
    assert drilled == drill_of_tables("topic", mine["topic"], frozenset(odd))
    theirs_units = drill_of_tables("topic", other["topic"], frozenset(odd))["units"]
    diff = [(k, s) for k, subs in drilled["units"].items() for s, d in subs.items()
            if theirs_units[k][s] != d]
    assert diff == [("T7", "b")]
    values = digest.answer(store, "n1", 0, DigestQuery("topic", units=(("T7", "b"),
                           ("T7", "zz"), ("nope", "a"))), digest.DigestCache())
    assert values == {"table": "topic", "values": [["T7", "b", Q6 | {"readQueueNums": 4}]]}
    assert values == values_of_tables("topic", mine["topic"], [("T7", "b"), ("T7", "zz"),
                                                               ("nope", "a")])
    flat = digest.answer(store, "n1", 0, DigestQuery("broker", units=(("a", ""),)),
                         digest.DigestCache())
    assert flat["values"] == [["a", "", mine["broker"]["a"]]]


def test_the_cache_follows_the_generation_and_the_live_table(store: Store) -> None:
    cache = digest.DigestCache()
    _register(store, "a", "127.0.0.1:1", ["T1"])
    first = _summary(store, cache)
    _register(store, "a", "127.0.0.1:1", ["T1", "T2"], counter=2)  # a new generation
    second = _summary(store, cache)
    assert second["tables"]["topic"]["keys"] == 2
    assert second["tables"]["live"]["digest"] != first["tables"]["live"]["digest"]
    assert second["tables"] == summary_of_tables("n1", 5, _snapshot(store))["tables"]
    with store.write() as t:  # live changes without a generation bump
        t.put("live", "127.0.0.1:9", {"lastUpdateTimestamp": 1, "dataVersion": {"counter": 1},
                                      "channel": "c", "haServerAddr": None})
    third = _summary(store, cache)
    assert third["tables"]["live"]["keys"] == 2
    assert third["tables"]["topic"] == second["tables"]["topic"]


@pytest.mark.parametrize(("body", "error"), [
    (b"{", "body is not JSON"),
    (b"[1]", "not a JSON object"),
    (b'{"table":"route"}', "unknown table 'route'"),
    (b'{"table":"topic"}', "buckets must be"),
    (b'{"table":"topic","buckets":[256]}', "buckets must be"),
    (b'{"table":"topic","buckets":[true]}', "buckets must be"),
    (b'{"table":"topic","values":[]}', "values must list"),
    (b'{"table":"topic","values":[["a"]]}', "[key, sub] pair"),
])
def test_bad_queries_get_one_line(body: bytes, error: str) -> None:
    with pytest.raises(DigestQueryError, match=error.replace("[", r"\[")):
        parse_query(body)


def test_queries_round_trip() -> None:
    for q in (DigestQuery(), DigestQuery(heartbeats=True),
              DigestQuery("topic", buckets=frozenset({0, BUCKETS - 1})),
              DigestQuery("kv", units=(("NS", "k"),))):
        assert parse_query(encode_query(q)) == q
    too_many = orjson.dumps({"table": "kv", "values": [["a", "b"]] * (MAX_VALUES + 1)})
    with pytest.raises(DigestQueryError):
        parse_query(too_many)


def test_processor_answers_and_refuses(ctx: NodeContext) -> None:
    call(ctx, register_request("a", "a:1", {"T": 4}))
    doc = body_json(call(ctx, request(60002)))
    assert doc["node"] == "n1" and doc["tables"]["topic"]["keys"] == 1
    bad = call(ctx, request(60002, body=b'{"table":"x"}'))
    assert bad.code == RC_SYSTEM_ERROR
    assert bad.remark is not None and bad.remark.startswith("GET_NODE_DIGEST: unknown table")
    drill = call(ctx, request(60002, body=encode_query(
        DigestQuery("topic", buckets=frozenset({bucket_of("T")})))))
    assert drill.code == RC_SUCCESS and set(body_json(drill)["units"]) == {"T"}
