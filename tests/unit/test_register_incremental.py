"""Registrations read piece by piece (cluster.core.protocol.register_scan) leave exactly the state a
full decode and a full apply leave: random sequences of registrations and topic-table edits
run against two stores, one through ``handle()`` as served, the other with its applied
records forgotten before every request (so each registration decodes its body whole and
writes every topic, as Java does). Both releases: a 4.9.8 node fed 4.9 bodies, a 5.5.0 node
fed 5.x bodies (attributes, mappingDataVersion, static topics, acting master, prime slaves,
deleteTopicWithBrokerRegistration) and 4.9 ones."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster.core.protocol import body_common, register_body, register_scan
from cluster.core.protocol.dialect import Dialect
from state import applied as applied_records
from state.store import APPLIED_TABLES, TABLES, Store
from tests.unit.test_processors import make_ctx, request
from worker.business.processors import handle

NAMES = ("broker-a", "broker-b")
ADDRS = {("broker-a", 0): "10.0.0.1:10911", ("broker-a", 1): "10.0.0.2:10911",
         ("broker-b", 0): "10.0.0.3:10911"}
# Plain names, and names whose text needs escaping or holds a brace or a quote.
ODD_NAMES = ("a}b", "c{d", 'q"x', "e\\f", "caf\u00e9", "t\u2028u", "x},\"y")
# Each store has its own file paths in "config"; everything else must be equal.
COMPARED = [t for t in TABLES if t not in APPLIED_TABLES and t != "config"]


class Pair:
    """The served store and the reference store, fed the same requests."""

    def __init__(self, tmp: Path, dialect: Dialect = Dialect.V4_9_8,
                 props: dict[str, str] | None = None) -> None:
        self.stores = [Store.create(str(tmp / side), 64 << 20) for side in ("inc", "ref")]
        self.ctxs = [make_ctx(s, clock=lambda: 1000, kv_path=str(tmp / f"kv{i}.json"),
                              config_path=str(tmp / f"ns{i}.properties"), dialect=dialect,
                              props=props)
                     for i, s in enumerate(self.stores)]
        self.five = dialect.five
        self.ref_memo: dict[str, applied_records.Applied] = {}
        self.diffs = 0

    def close(self) -> None:
        for s in self.stores:
            s.destroy()

    def send(self, code: int, ext: dict[str, str], body: bytes | None = None,
             version: int = 409) -> None:
        replies = [handle(self.ctxs[0], request(code, dict(ext), body, version), "0.1.1",
                          "p:1")]
        _forget_applied(self.stores[1])
        with _memo(self.ref_memo):
            replies.append(handle(self.ctxs[1], request(code, dict(ext), body, version),
                                  "0.1.1", "p:1"))
        inc, ref = replies
        assert inc is not None and ref is not None
        assert (inc.code, inc.remark, inc.ext_fields, inc.body) == (
            ref.code, ref.remark, ref.ext_fields, ref.body), body
        assert _tables(self.stores[0]) == _tables(self.stores[1]), body


@contextmanager
def _memo(memo: dict[str, applied_records.Applied]) -> Iterator[None]:
    """The reference side: its own applied records, and no pieces read before (it never
    learns any, so every table it reads is decoded whole)."""
    saved = applied_records._APPLIED_MEMO, applied_records._PIECES
    applied_records._APPLIED_MEMO = memo
    applied_records._PIECES = register_scan.PieceMemo(0)
    try:
        yield
    finally:
        applied_records._APPLIED_MEMO, applied_records._PIECES = saved


def _forget_applied(store: Store) -> None:
    with store.write() as t:
        for table in APPLIED_TABLES:
            for key in t.keys(table):
                t.delete(table, key)


def _tables(store: Store) -> dict[str, list[tuple[str, Any]]]:
    with store.read() as t:
        return {table: list(t.items(table)) for table in COMPARED}


@pytest.fixture()
def pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Pair]:
    p = Pair(tmp_path)
    real = applied_records._apply_diff

    def counted(*args: Any) -> None:
        p.diffs += 1
        real(*args)

    monkeypatch.setattr(applied_records, "_apply_diff", counted)
    yield p
    p.close()


@pytest.fixture(params=[{}, {"deleteTopicWithBrokerRegistration": "true"}],
                ids=["keep", "delete-missing"])
def pair5(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
          ) -> Iterator[Pair]:
    p = Pair(tmp_path, Dialect.V5_5_0, request.param)
    real = applied_records._apply_diff

    def counted(*args: Any) -> None:
        p.diffs += 1
        real(*args)

    monkeypatch.setattr(applied_records, "_apply_diff", counted)
    yield p
    p.close()


# ---------------------------------------------------------------- random bodies


# 5.x TopicConfig attributes: mostly none, some simple maps; and a few with braces in
# strings (a table holding one is decoded whole), which come and go as odd names do.
ATTRIBUTES: tuple[dict[str, str], ...] = ({}, {}, {}, {"+message.type": "NORMAL"},
                                          {"+message.type": "FIFO", "a": "b"})
ODD_ATTRIBUTES: tuple[dict[str, str], ...] = ({"x": "}"}, {"y": "{,}"}, {"z": "a\\\"}"})


def _config(rng: random.Random, name: str, odd: bool = False) -> dict[str, Any]:
    attributes = rng.choice(ODD_ATTRIBUTES if odd else ATTRIBUTES)
    return register_body.topic_config(name, read_queue_nums=rng.choice((1, 4, 8)),
                                      write_queue_nums=rng.choice((1, 4, 8)),
                                      perm=rng.choice((2, 4, 6)),
                                      topic_sys_flag=rng.choice((0, 0, 1)),
                                      order=rng.random() < 0.1, attributes=attributes)


class Broker:
    """One broker name's evolving topic table and data version."""

    def __init__(self, rng: random.Random, name: str, size: int, shared: bool = False
                 ) -> None:
        self.rng, self.name, self.counter = rng, name, 1
        # shared: topic names of no broker of its own, as the brokers of a cluster carry them
        self.prefix = "" if shared else name[-1]
        self.table = {f"{self.prefix}T{i}": _config(rng, f"{self.prefix}T{i}")
                      for i in range(size)}

    def evolve(self) -> None:
        rng, table = self.rng, self.table
        for _ in range(rng.choice((0, 1, 1, 2, 5))):
            topic = rng.choice(list(table)) if table else None
            what = rng.random()
            if topic is not None and what < 0.6:
                table[topic] = _config(rng, topic, rng.random() < 0.05)
            elif topic is not None and what < 0.75:
                del table[topic]
            else:
                odd = rng.random() < 0.15
                name = rng.choice(ODD_NAMES) if odd else f"{self.prefix}N{rng.randrange(60)}"
                table[name] = _config(rng, name)
        for name in ODD_NAMES:  # odd names come and go: a table holding one is decoded whole
            if name in table and rng.random() < 0.3:
                del table[name]
        for name, cfg in list(table.items()):
            if cfg["attributes"] in ODD_ATTRIBUTES and rng.random() < 0.3:
                table[name] = _config(rng, name)
        if rng.random() < 0.1:
            items = list(table.items())
            rng.shuffle(items)
            self.table = dict(items)
        if rng.random() < 0.85:
            self.counter += 1

    def body(self, compressed: bool, attributes: bool, filters: list[str] | None) -> bytes:
        dv = {"counter": self.counter, "timestamp": 7}
        return register_body.encode_register_body(dv, self.table, filters, compressed,
                                                  with_attributes=attributes)

    def body5(self, filters: list[str] | None, mapped: bool, bare: bool) -> bytes:
        """As a 5.x broker writes it: stateVersion, a mappingDataVersion stamped anew, every
        TopicConfig's attributes, the static-topic maps (``mapped``: one static topic;
        ``bare``: its currIdMap with fastjson's bare integer keys)."""
        rng = self.rng
        dv = {"counter": self.counter, "stateVersion": rng.choice((0, 0, 3)), "timestamp": 7}
        topic = next(iter(self.table), "S")
        mappings = {topic: {"bname": self.name, "currIdMap": {"0": 0, "10": 1}, "dirty": False,
                            "epoch": 7, "scope": "__global__", "topic": topic,
                            "totalQueues": 2}} if mapped else {}
        body = register_body.encode_register_body(dv, self.table, filters, False,
                                                  with_attributes=True, mappings=mappings)
        stamp = b'"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":%d},' % (
            rng.randrange(1000))
        body = body.replace(b'"topicConfigTable":', stamp + b'"topicConfigTable":', 1)
        return body.replace(b'{"0":0,"10":1}', b"{0:0,10:1}") if bare else body


_ENTRY = re.compile(rb',"[A-Za-z0-9]+":\{(?:"attributes":\{[^{}]*\},)?[^{}]*\}')


def _odd(rng: random.Random, body: bytes) -> bytes:
    """A plain body with one oddity: spacing, an escape, a duplicated, renamed or damaged
    entry, a 5.x-style key, trailing bytes."""
    entries = list(_ENTRY.finditer(body))
    pick = rng.choice(entries) if entries else None
    kind = rng.randrange(8)
    if pick is None or kind == 0:
        return body.replace(b'},"', b'}, "', 1) if kind == 0 else body + b" "
    text = pick.group()
    if kind == 1:  # escaped first letter of the key
        out = text[:2] + b"\\u%04x" % text[2] + text[3:]
    elif kind == 2:  # the entry twice
        out = text + text
    elif kind == 3:  # the entry again with other fields, before or after it
        other = text.replace(b'"perm":', b'"perm":1', 1)
        out = other + text if rng.random() < 0.5 else text + other
    elif kind == 4:  # key differs from topicName
        out = text.replace(b'":{', b'X":{', 1)
    elif kind == 5:  # damaged
        out = text[: rng.randrange(1, len(text))]
    elif kind == 6:  # a float and a string where ints are written
        out = text.replace(b'"perm":6', b'"perm":6.0', 1).replace(b'"perm":4', b'"perm":"4"', 1)
    else:  # spacing inside the entry
        out = text.replace(b":", b" : ", 2)
    return body[: pick.start()] + out + body[pick.end():]


def _register(pair: Pair, rng: random.Random, broker: Broker) -> None:
    broker_id = 1 if broker.name == "broker-a" and rng.random() < 0.1 else 0
    compressed = rng.random() < 0.08
    attributes = rng.random() < 0.05
    filters = rng.choice(([], [], ["f:1"], None))
    if pair.five and not compressed and rng.random() < 0.85:
        body = broker.body5(filters, rng.random() < 0.1, rng.random() < 0.5)
    else:
        body = broker.body(compressed, attributes, filters)
    if not compressed and rng.random() < 0.08:
        body = _odd(rng, body)
    version = 36 if rng.random() < 0.03 else 409
    ext = {"brokerName": broker.name, "brokerAddr": ADDRS[(broker.name, broker_id)],
           "clusterName": "C", "brokerId": str(broker_id), "haServerAddr": "h:1",
           "compressed": str(compressed).lower(), "bodyCrc32": str(body_common.crc32_java(body))}
    if pair.five and rng.random() < 0.9:
        ext["enableActingMaster"] = rng.choice(("true", "false", "false"))
    pair.send(103, ext, body, version)


def _edit(pair: Pair, rng: random.Random, brokers: list[Broker]) -> None:
    broker = rng.choice(brokers)
    topics = list(broker.table) or ["none"]
    edits: list[Callable[[], None]] = [
        lambda: pair.send(205, {"brokerName": broker.name}),
        lambda: pair.send(327, {"brokerName": broker.name}),
        lambda: pair.send(216, {"topic": rng.choice(topics)}),
        lambda: pair.send(104, {"brokerName": broker.name, "clusterName": "C",
                                "brokerAddr": ADDRS[(broker.name, 0)], "brokerId": "0"}),
    ]
    rng.choice(edits)()


def run_sequence(pair: Pair, seed: int, steps: int, shared: bool = False) -> None:
    """``shared``: the brokers start with one table and carry the same topic names, so most
    of a broker's pieces were read before in the other's tables."""
    rng = random.Random(seed)
    brokers = [Broker(rng, name, rng.choice((3, 20, 40, 200)), shared) for name in NAMES]
    if shared:
        brokers[1].table = dict(brokers[0].table)
    for _ in range(steps):
        if rng.random() < 0.06:
            _edit(pair, rng, brokers)
            continue
        broker = rng.choice(brokers)
        broker.evolve()
        _register(pair, rng, broker)


# ---------------------------------------------------------------- the tests


def _short_runs(monkeypatch: pytest.MonkeyPatch, knobs: tuple[int, int]) -> None:
    """The span search's first run and slack set to ``knobs``."""
    monkeypatch.setattr(register_scan, "_FIRST_STEP", knobs[0])
    monkeypatch.setattr(register_scan, "_SLACK", knobs[1])


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_random_sequences_match_the_full_decode(pair: Pair, seed: int) -> None:
    run_sequence(pair, seed, 40)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), knobs=st.sampled_from([(2, 1), (16, 8), (64, 32)]))
def test_random_sequences_match_with_short_runs_and_slack(
        pair: Pair, seed: int, knobs: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    """The same with the span search's first run and slack far below a piece, so that the
    growing runs and the halving cut through pieces of these small tables."""
    _short_runs(monkeypatch, knobs)
    run_sequence(pair, seed, 40)


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_random_5x_sequences_match_the_full_decode(pair5: Pair, seed: int) -> None:
    run_sequence(pair5, seed, 40)


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), knobs=st.sampled_from([(2, 1), (16, 8), (64, 32)]))
def test_random_5x_sequences_match_with_short_runs_and_slack(
        pair5: Pair, seed: int, knobs: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    """The span search on 5.x pieces (two fragments each), cut anywhere."""
    _short_runs(monkeypatch, knobs)
    run_sequence(pair5, seed, 40)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_random_sequences_of_brokers_sharing_topics_match_the_full_decode(
        pair: Pair, seed: int) -> None:
    run_sequence(pair, seed, 40, shared=True)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_random_5x_sequences_of_brokers_sharing_topics_match_the_full_decode(
        pair5: Pair, seed: int) -> None:
    run_sequence(pair5, seed, 40, shared=True)


def test_a_long_5x_sequence_takes_the_incremental_path_and_matches(pair5: Pair) -> None:
    run_sequence(pair5, 20261127, 500)
    # deleteTopicWithBrokerRegistration, when it drops topics, makes the next table whole
    assert pair5.diffs > 15


def test_a_long_sequence_takes_the_incremental_path_and_matches(pair: Pair) -> None:
    run_sequence(pair, 20261121, 600)
    assert pair.diffs > 60
