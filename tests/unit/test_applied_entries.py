"""A broker's QueueData written into a topic's value as bytes: the same bytes as decoding,
assigning and encoding the value, whatever the broker names hold."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest

from state import applied
from state.store import Store, dumps

NAMES = ["b1", "broker-a", 'q"uote', "back\\slash", 'x":{"brokerName":"b1",', "colon:", "ünï",
         "ctl\x01", "b1\\", "{}", "b1b1"]
FIELDS = [(6, 8, 0, 8), (4, 16, 0, 16), (2, 1, 1, 1), (6, 8, 0, 9)]


def decoded(raw: bytes | None, name: str, fields: applied.QueueFields) -> bytes:
    perm, read, flag, write = fields
    qmap = orjson.loads(raw) if raw is not None else {}
    qmap[name] = {"brokerName": name, "perm": perm, "readQueueNums": read,
                  "topicSysFlag": flag, "writeQueueNums": write}
    return dumps(qmap)


def edited(raw: bytes | None, name: str, fields: applied.QueueFields) -> bytes | None:
    head = dumps(name)
    entry_head = head + b':{"brokerName":' + head + b","
    return applied._with_entry(raw, head, entry_head, entry_head + applied._ENTRY_FIELDS % fields)


@pytest.mark.parametrize("seed", range(20))
def test_edits_match_decoding_for_any_names(seed: int) -> None:
    rng = random.Random(seed)
    raw: bytes | None = None
    for _ in range(40):
        name, fields = rng.choice(NAMES), rng.choice(FIELDS)
        want = decoded(raw, name, fields)
        got = edited(raw, name, fields)
        assert got == want, (raw, name, fields)
        raw = got


def test_an_unchanged_entry_is_the_same_value() -> None:
    raw = edited(None, "b1", FIELDS[0])
    assert raw is not None and edited(raw, "b1", FIELDS[0]) is raw


def test_a_value_in_another_form_is_left_to_decoding() -> None:
    odd = dumps({"b1": {"perm": 6, "brokerName": "b1"}})
    assert edited(odd, "b1", FIELDS[0]) is None
    assert edited(dumps({}), "b1", FIELDS[0]) == decoded(dumps({}), "b1", FIELDS[0])


def test_registrations_write_what_decoding_wrote(tmp_path: Path) -> None:
    """Through apply: a value in another form is decoded, the others edited."""
    store = Store.create(tmp_path / "s")
    try:
        with store.write() as t:
            t.put("topic", "T1", {"b1": {"perm": 6, "brokerName": "b1"}})
            applied._apply_queues(t, "b1", {"T1": FIELDS[0], "T2": FIELDS[1]})
            applied._apply_queues(t, "b2", {"T1": FIELDS[2], "T2": FIELDS[1]})
            assert t.get_raw("topic", "T1") == dumps({
                "b1": {"brokerName": "b1", "perm": 6, "readQueueNums": 8, "topicSysFlag": 0,
                       "writeQueueNums": 8},
                "b2": {"brokerName": "b2", "perm": 2, "readQueueNums": 1, "topicSysFlag": 1,
                       "writeQueueNums": 1}})
            assert list(t.get("topic", "T2")) == ["b1", "b2"]
    finally:
        store.destroy()
