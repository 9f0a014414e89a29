"""The topic table's layout (state.topicsets): topics of equal queue datas one group whose
value changes in place, topic counts kept, groups with no topic deleted, the index of values
right; readers see topic → {brokerName: QueueData}."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from state import applied, route, topicsets
from state.store import APPLIED, Store, Txn
from state.topicsets import INDEX, NEXT, REFS, SETS, STAMP, TopicSetError, TopicSets, key_of


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.create(str(tmp_path / "lmdb"), 64 << 20)
    yield s
    s.destroy()


def qd(name: str, perm: int = 6, queues: int = 8) -> dict[str, Any]:
    return {"brokerName": name, "perm": perm, "readQueueNums": queues, "topicSysFlag": 0,
            "writeQueueNums": queues}


def layout(store: Store) -> tuple[dict[bytes, bytes], dict[bytes, int]]:
    """(values by group, topic counts by group) as stored."""
    dbs = store._dbs
    with store.env.begin() as txn:
        sets = {bytes(k): bytes(v) for k, v in txn.cursor(db=dbs[SETS])}
        refs = {bytes(k): int(v) for k, v in txn.cursor(db=dbs[REFS])}
    return sets, refs


def index(store: Store) -> dict[bytes, bytes]:
    with store.env.begin() as txn:
        return {bytes(k): bytes(v) for k, v in txn.cursor(db=store._dbs[INDEX])
                if bytes(k) not in (NEXT, STAMP)}


def assert_counts_match(store: Store) -> None:
    """Every group has exactly as many topics as its count says; every index entry names a
    group holding the value it is the hash of (a value two groups came to hold may be
    indexed by neither once one of them goes: only sharing is lost)."""
    sets, refs = layout(store)
    named: dict[bytes, int] = {}
    with store.read() as t:
        for topic in t.keys("topic"):
            ref = t.topics.ref(topic.encode())
            assert ref is not None
            named[ref] = named.get(ref, 0) + 1
    assert refs == named and set(sets) == set(named)
    held = index(store)
    assert all(key_of(sets[ref]) == key for key, ref in held.items())


def test_topics_with_equal_queue_datas_share_one_value(store: Store) -> None:
    qmap = {"b-0": qd("b-0"), "b-1": qd("b-1")}
    with store.write() as t:
        for i in range(100):
            t.put("topic", f"T{i}", qmap)
    sets, refs = layout(store)
    assert len(sets) == 1 and list(refs.values()) == [100]
    with store.read() as t:
        assert t.get("topic", "T7") == qmap
        assert list(t.items("topic")) == [(f"T{i}", qmap) for i in sorted(range(100), key=str)]
        assert t.keys("topic") == sorted(f"T{i}" for i in range(100))


def test_a_value_no_topic_names_is_deleted(store: Store) -> None:
    with store.write() as t:
        t.put("topic", "A", {"b": qd("b")})
        t.put("topic", "B", {"b": qd("b")})
        t.put("topic", "C", {"c": qd("c")})
    with store.write() as t:
        t.put("topic", "A", {"c": qd("c")})
        assert t.delete("topic", "B") and not t.delete("topic", "B")
    sets, refs = layout(store)
    assert list(refs.values()) == [2] and len(sets) == 1
    assert_counts_match(store)
    with store.write() as t:
        t.clear("topic")
    assert layout(store) == ({}, {})


def test_an_unchanged_value_bumps_no_generation(store: Store) -> None:
    with store.write() as t:
        t.put("topic", "A", {"b": qd("b")})
    with store.write() as t:
        t.put("topic", "A", {"b": qd("b")})
        t.put_raw("topic", "A", t.get_raw("topic", "A") or b"")
    with store.read() as t:
        assert t.generation() == 1


def test_an_aborted_write_leaves_the_counts(store: Store) -> None:
    with store.write() as t:
        t.put("topic", "A", {"b": qd("b")})
    with pytest.raises(RuntimeError), store.write() as t:
        t.put("topic", "A", {"c": qd("c")})
        t.put("topic", "B", {"c": qd("c")})
        raise RuntimeError("boom")
    assert_counts_match(store)
    with store.read() as t:
        assert dict(t.items("topic")) == {"A": {"b": qd("b")}}


def test_an_index_naming_a_group_of_another_value_fails_the_write(store: Store) -> None:
    with store.write() as t:
        t.put("topic", "A", {"b": qd("b")})
        ref = t.topics.ref(b"A")
    assert ref is not None
    with store.env.begin(write=True) as txn:  # the index names A's group for another value
        txn.put(key_of(b'{"x":1}'), ref, db=store._dbs[INDEX])
    with pytest.raises(TopicSetError), store.write() as t:
        t.put_raw("topic", "B", b'{"x":1}')
    with store.read() as t:
        assert t.get("topic", "B") is None and t.get("topic", "A") == {"b": qd("b")}


def test_a_change_to_a_whole_group_rewrites_its_value_and_no_topic(store: Store) -> None:
    topics = {f"T{i}": (6, 8, 0, 8) for i in range(300)}
    with store.write() as t:
        applied._apply_queues(t, "a", topics)
    (group,) = layout(store)[0]
    puts: list[int] = []
    with store.write() as t:
        t._txn = _Counting(t._txn, puts)
        applied._apply_queues(t, "b", topics)
    assert puts == [] and layout(store) == ({group: layout(store)[0][group]}, {group: 300})
    with store.read() as t:
        assert list(t.get("topic", "T7")) == ["a", "b"]
    with store.write() as t:  # a part of the group moves; the rest keeps the group
        applied._apply_queues(t, "c", {f"T{i}": (6, 8, 0, 8) for i in range(100)})
    sets, refs = layout(store)
    assert refs[group] == 200 and sorted(refs.values()) == [100, 200]
    assert_counts_match(store)


class _Counting:
    """A transaction that counts the topic puts a cursor makes."""

    def __init__(self, txn: Any, puts: list[int]) -> None:
        self._txn, self._puts = txn, puts

    def cursor(self, db: Any = None) -> Any:
        puts, cur = self._puts, self._txn.cursor(db=db)

        class Cur:
            def __enter__(self) -> Any:
                return self

            def __exit__(self, *exc: Any) -> None:
                cur.close()

            def getmulti(self, keys: Any) -> Any:
                return cur.getmulti(keys)

            def putmulti(self, items: Any) -> Any:
                puts.append(len(items))
                return cur.putmulti(items)

            def __getattr__(self, name: str) -> Any:
                return getattr(cur, name)
        return Cur()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._txn, name)


def test_topics_joining_a_value_join_its_group(store: Store) -> None:
    with store.write() as t:
        applied._apply_queues(t, "a", {"T1": (6, 8, 0, 8)})
    with store.write() as t:  # a broker's next table adds a topic: it joins its sibling
        applied._apply_queues(t, "a", {"T1": (6, 8, 0, 8), "T2": (6, 8, 0, 8)})
    sets, refs = layout(store)
    assert list(refs.values()) == [2]
    assert_counts_match(store)


def test_a_registration_edits_each_shared_value_once(store: Store) -> None:
    """150 brokers carrying the same 200 topics: one value, each broker's entry where
    decoding and encoding would put it; the topics another broker's edit wrote stay in
    the order they were first put."""
    topics = [f"Topic-{i}" for i in range(200)]
    names = [f"broker-{i}" for i in range(150)]
    for name in names:
        with store.write() as t:
            applied.apply_topic_table(t, name, applied.TopicTable.of_configs(
                {topic: {"perm": 6, "readQueueNums": 8, "writeQueueNums": 8}
                 for topic in topics}))
    sets, refs = layout(store)
    assert len(sets) == 1 and list(refs.values()) == [200]
    with store.read() as t:
        qmap = t.get("topic", "Topic-3")
        assert list(qmap) == names and qmap["broker-9"] == qd("broker-9")
        assert t.get(APPLIED, "broker-9") is None  # a table of configs has no digest


def test_a_writer_remembering_groups_sees_another_writer_regroup_a_topic(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = topicsets._KnownGroups(), topicsets._KnownGroups()
    topics = {f"T{i}": (6, 8, 0, 8) for i in range(10)}

    def apply(writer: topicsets._KnownGroups, name: str, table: dict[str, Any]) -> None:
        monkeypatch.setattr(topicsets, "_KNOWN", writer)
        with store.write() as t:
            applied._apply_queues(t, name, table)

    apply(first, "a", topics)
    apply(first, "b", topics)  # joins the group: no topic regrouped, the groups remembered
    assert len(first.groups) == 10
    apply(second, "c", {"T0": (6, 4, 0, 4)})  # T0 leaves the group
    apply(first, "d", topics)
    with store.read() as t:
        assert set(t.get("topic", "T0")) == {"a", "b", "c", "d"}
        assert set(t.get("topic", "T1")) == {"a", "b", "d"}
    assert_counts_match(store)


def test_a_writer_carries_its_groups_past_its_own_commits_not_past_an_abort(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write transaction that regroups topics leaves what the writer remembers holding for
    the new stamp, with its moves; an aborted one leaves it as it was (a topic looked up
    after it moved in the transaction is not remembered as it then stood)."""
    first, second = topicsets._KnownGroups(), topicsets._KnownGroups()
    table = {"T0": (6, 8, 0, 8), "T1": (6, 8, 0, 8)}

    def writes(writer: topicsets._KnownGroups) -> Any:
        monkeypatch.setattr(topicsets, "_KNOWN", writer)
        return store.write()

    with writes(second) as t:
        applied._apply_queues(t, "a", table)
    with pytest.raises(_Aborted), writes(first) as t:
        assert t.delete("topic", "T0")
        applied._apply_queues(t, "b", {"T0": (6, 8, 0, 8)})  # T0 comes back, alone
        raise _Aborted
    with writes(first) as t:
        applied._apply_queues(t, "c", {"T0": (6, 4, 0, 4)})  # T0 leaves the group
    with store.read() as t:
        stamp = t.get_raw(INDEX, STAMP.decode())
    assert first.stamp == stamp and first.groups[b"T0"] is not None  # carried
    with writes(first) as t:
        applied._apply_queues(t, "d", table)
    with store.read() as t:
        assert list(t.get("topic", "T0")) == ["a", "c", "d"]
        assert list(t.get("topic", "T1")) == ["a", "d"]
    assert_counts_match(store)


def test_the_groups_a_writer_remembers_are_bounded(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(topicsets, "_KNOWN", topicsets._KnownGroups())
    monkeypatch.setattr(topicsets, "GROUPS_KEPT", 15)
    with store.write() as t:
        applied._apply_queues(t, "a", {f"T{i}": (6, 8, 0, 8) for i in range(20)})
    for name, topics in (("b", range(10)), ("c", range(10, 20)), ("d", range(20))):
        with store.write() as t:
            applied._apply_queues(t, name, {f"T{i}": (6, 8, 0, 8) for i in topics})
        assert len(topicsets._KNOWN.groups) <= 20
    with store.read() as t:
        assert set(t.get("topic", "T3")) == {"a", "b", "d"}
        assert set(t.get("topic", "T13")) == {"a", "c", "d"}
    assert_counts_match(store)


class _Aborted(Exception):
    pass


def test_random_edits_keep_the_counts_and_match_a_plain_dict(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random transactions, some aborted, by two writers that each remember the groups they
    looked up (as two business workers would), against a plain dict."""
    rng = random.Random(7)
    model: dict[str, dict[str, Any]] = {}
    writers = [topicsets._KnownGroups(), topicsets._KnownGroups()]
    monkeypatch.setattr(topicsets, "GROUPS_KEPT", 6)  # of the 8 topics: forgotten often
    for _ in range(300):
        monkeypatch.setattr(topicsets, "_KNOWN", rng.choice(writers))
        before = copy.deepcopy(model)
        try:
            with store.write() as t:
                for _ in range(rng.randrange(1, 12)):
                    _random_edit(t, rng, model)
                if rng.random() < 0.1:
                    raise _Aborted
        except _Aborted:
            model = before
        assert_counts_match(store)
        with store.read() as t:
            assert dict(t.items("topic")) == model
            assert dict(t.items_raw("topic")).keys() == model.keys()


def _random_edit(t: Txn, rng: random.Random, model: dict[str, dict[str, Any]]) -> None:
    topic = f"T{rng.randrange(8)}"
    what = rng.random()
    if what < 0.15:  # a broker's table of several topics: whole groups and parts of them
        name = f"b{rng.randrange(4)}"
        table = {f"T{i}": (6, rng.choice((4, 8, 8, 8)), 0, 8)
                 for i in rng.sample(range(8), rng.randrange(1, 8))}
        applied._apply_queues(t, name, table)
        for tp, (perm, read, flag, write) in table.items():
            model.setdefault(tp, {})[name] = {
                "brokerName": name, "perm": perm, "readQueueNums": read,
                "topicSysFlag": flag, "writeQueueNums": write}
    elif what < 0.25:  # brokers leaving
        gone = {f"b{i}" for i in rng.sample(range(4), rng.randrange(1, 3))}
        route.remove_queue_datas(t, gone)
        for tp in list(model):
            model[tp] = {n: q for n, q in model[tp].items() if n not in gone}
            if not model[tp]:
                del model[tp]
    elif what < 0.3:  # a broker's write permission wiped or added on all its topics
        name, add = f"b{rng.randrange(4)}", rng.random() < 0.5
        carried = [qm[name] for qm in model.values() if name in qm]
        assert route.change_write_perm(t, name, add) == len(carried)
        for q in carried:
            q["perm"] = 6 if add else q["perm"] & ~2
    elif what < 0.4:
        assert t.delete("topic", topic) == (model.pop(topic, None) is not None)
    elif what < 0.5:
        name = f"b{rng.randrange(4)}"
        fields = (6, rng.choice((4, 8)), 0, 8)
        applied._apply_queues(t, name, {topic: fields})
        perm, read, flag, write = fields
        model.setdefault(topic, {})[name] = {
            "brokerName": name, "perm": perm, "readQueueNums": read, "topicSysFlag": flag,
            "writeQueueNums": write}
    else:
        qmap = {f"b{i}": qd(f"b{i}", queues=rng.choice((4, 8))) for i in range(rng.randrange(1, 3))}
        t.put("topic", topic, qmap)
        model[topic] = qmap


def test_missing_queues_read_each_shared_value_once(store: Store,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A master registering again after a restart (its applied records forgotten, same
    DataVersion): whether each topic lacks it is read once per shared value."""
    topics = {f"T{i}": (6, 8, 0, 8) for i in range(100)}
    with store.write() as t:
        for name in ("a", "b"):
            applied._apply_queues(t, name, topics)
        t.put("topic", "T5", {"b": qd("b")})  # "a" lacks one topic
    reads: list[bytes] = []
    value = TopicSets.value
    monkeypatch.setattr(TopicSets, "value", lambda self, ref: reads.append(ref) or value(
        self, ref))
    with store.write() as t:
        applied.put_missing_queues(t, "a", topics)
    assert len(reads) == 2 + 1  # the two values read, then T5's edited value
    with store.read() as t:
        assert list(t.get("topic", "T5")) == ["b", "a"] and len(t.get("topic", "T6")) == 2
    assert_counts_match(store)


def test_brokers_leaving_shared_topics_edit_each_value_once(store: Store) -> None:
    with store.write() as t:
        for name in ("a", "b", "c"):
            applied._apply_queues(t, name, {f"T{i}": (6, 8, 0, 8) for i in range(50)})
        applied._apply_queues(t, "a", {"Only-a": (6, 8, 0, 8)})
    with store.write() as t:
        route.remove_queue_datas(t, {"a", "c"})
    with store.read() as t:
        assert dict(t.items("topic")) == {f"T{i}": {"b": qd("b")} for i in range(50)}
    assert len(layout(store)[0]) == 1
    assert_counts_match(store)


def test_a_broker_leaving_a_whole_group_rewrites_its_value_and_no_topic(store: Store) -> None:
    with store.write() as t:
        for name in ("a", "b"):
            applied._apply_queues(t, name, {f"T{i}": (6, 8, 0, 8) for i in range(100)})
        applied._apply_queues(t, "b", {"Only-b": (6, 8, 0, 8)})
    before = layout(store)[1]
    puts: list[int] = []
    with store.write() as t:
        t._txn = _Counting(t._txn, puts)
        route.remove_queue_datas(t, {"b"})
        assert t.generation() == 1  # not bumped yet: the write commits it
    assert puts == [] and layout(store)[1] == {k: v for k, v in before.items() if v == 100}
    with store.read() as t:
        assert dict(t.items("topic")) == {f"T{i}": {"a": qd("a")} for i in range(100)}
        assert t.generation() == 2
    assert_counts_match(store)
