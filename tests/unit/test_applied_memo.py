"""The applied-records memo of a process: current by its stamp, bounded, shared fields."""

from __future__ import annotations

import dataclasses

import pytest

from cluster.core.protocol import register_body
from state import applied as applied_records
from state import route
from state.store import APPLIED_STAMP, Store
from tests.unit.test_register_fast import DV1, DV2, DV3, applied, queue_nums, register
from worker.business.context import NodeContext

__all__ = ["applied"]  # the fixture, used by name


def test_applied_queues_are_read_back_from_the_store(
        ctx: NodeContext, applied: list[dict[str, register_body.QueueFields]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    register(ctx, {"TopicA": 4, "TopicB": 8})
    monkeypatch.setattr(applied_records, "_APPLIED_MEMO", {})
    register(ctx, {"TopicA": 4, "TopicB": 5}, dv=DV2)
    assert applied[1] == {"TopicB": (6, 5, 0, 5)}
    stale = applied_records._APPLIED_MEMO["broker-a"]
    applied_records._APPLIED_MEMO["broker-a"] = dataclasses.replace(
        stale, stamp=b"not stored", queues={"TopicA": (6, 4, 0, 4), "TopicB": (6, 7, 0, 7)})
    register(ctx, {"TopicA": 4, "TopicB": 7}, dv=DV3)
    assert applied[2] == {"TopicB": (6, 7, 0, 7)}
    assert stale.queues == {"TopicA": (6, 4, 0, 4), "TopicB": (6, 5, 0, 5)}
    assert queue_nums(ctx, "TopicB") == {"broker-a": 7}


def test_the_memo_of_applied_queues_is_bounded(store: Store) -> None:
    with store.write() as t:
        for i in range(applied_records.APPLIED_MEMO_SIZE + 5):
            route.register_broker(t, "C", f"a:{i}", f"b{i}", 0, None, DV1,
                                  route.TopicTable(lambda: {"T": (6, 4, 0, 4)}), None,
                                  "0.1.1", 0)
    assert len(applied_records._APPLIED_MEMO) <= applied_records.APPLIED_MEMO_SIZE
    assert f"b{applied_records.APPLIED_MEMO_SIZE + 4}" in applied_records._APPLIED_MEMO


def test_brokers_with_the_same_topics_share_names_and_fields_in_the_memo(store: Store) -> None:
    def table() -> dict[str, register_body.QueueFields]:
        return {"".join(["Topic", str(i)]): (6, 8, 0, 8) for i in range(50)}

    with store.write() as t:
        for name in ("b1", "b2"):
            route.register_broker(t, "C", f"{name}:1", name, 0, None, DV1,
                                  route.TopicTable(table), None, "0.1.1", 0)
    first, second = (applied_records._APPLIED_MEMO[n].queues for n in ("b1", "b2"))
    assert first == second == table()
    assert all(a is b for a, b in zip(first, second, strict=True))
    assert len({id(fields) for fields in (*first.values(), *second.values())}) == 1


def test_the_memo_keeps_a_stamp_not_the_stored_records(store: Store) -> None:
    with store.write() as t:
        route.register_broker(t, "C", "a:1", "b", 0, None, DV1,
                              route.TopicTable(lambda: {"T": (6, 4, 0, 4)}), None, "0.1.1", 0)
        stamp = t.get_raw(APPLIED_STAMP, "b")
    assert stamp is not None and len(stamp) == applied_records.STAMP_BYTES
    assert applied_records._APPLIED_MEMO["b"].stamp == stamp


def test_a_broker_that_leaves_is_forgotten_by_the_memo(store: Store) -> None:
    with store.write() as t:
        route.register_broker(t, "C", "gone:1", "gone", 0, None, DV1,
                              route.TopicTable(lambda: {"T": (6, 4, 0, 4)}), None, "0.1.1", 0)
    assert "gone" in applied_records._APPLIED_MEMO
    with store.write() as t:
        route.unregister_broker(t, "C", "gone:1", "gone", 0)
    assert "gone" not in applied_records._APPLIED_MEMO
